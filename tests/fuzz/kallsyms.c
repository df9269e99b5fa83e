// SPDX-License-Identifier: BSD-2-Clause
/* kallsyms__parse: /proc/kallsyms text. */
#include <string.h>

#include "fuzz.h"
#include "symbolize/kallsyms.h"

FUZZ_DEFAULT_INIT

static void check_lookup(struct kallsyms *ks, uint64_t addr)
{
	struct ksym s, again;

	if (!kallsyms__lookup(ks, addr, &s))
		return;
	FUZZ_CHECK(s.name && s.name[0]);
	FUZZ_CHECK(s.addr <= addr && addr - s.addr < (1u << 20));
	FUZZ_CHECK(!s.module || s.module[0]);
	/* The symbol found stands for its own address too. */
	FUZZ_CHECK(kallsyms__lookup(ks, s.addr, &again) && again.addr == s.addr);
	/* A table read from text has nothing uncovered. */
	FUZZ_CHECK(kallsyms__uncovered(ks) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *ks = kallsyms__parse((const char *)data, size);
	uint64_t addr = 0;

	if (!ks)
		return 0;
	FUZZ_CHECK(!kallsyms__restricted(ks) || kallsyms__count(ks) == 0);
	FUZZ_CHECK(kallsyms__bytes(ks) > 0);
	check_lookup(ks, 0);
	check_lookup(ks, UINT64_MAX);
	check_lookup(ks, 0xffffffff81000000ull);
	/* Addresses taken from the input: the first hex number of each of
	 * the first lines, and its neighbours. */
	for (size_t i = 0, lines = 0; i < size && lines < 16; i++) {
		if (i == 0 || data[i - 1] == '\n') {
			char buf[17];
			size_t n = 0;

			while (i + n < size && n < 16 && strchr("0123456789abcdefABCDEF",
								data[i + n]) && data[i + n])
				n++;
			memcpy(buf, data + i, n);
			buf[n] = '\0';
			addr = strtoull(buf, NULL, 16);
			check_lookup(ks, addr);
			check_lookup(ks, addr - 1);
			check_lookup(ks, addr + 1);
			check_lookup(ks, addr + (1u << 20));
			lines++;
		}
	}
	kallsyms__free(ks);
	return 0;
}
