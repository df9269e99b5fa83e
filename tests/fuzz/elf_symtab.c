// SPDX-License-Identifier: BSD-2-Clause
/* ELF symbols: symtab__load_mem (the vDSO path), and the same bytes as a
 * file (a memfd) through symtab__load_fd and elf__build_id, which read
 * lazily with pread and look for debug files by build id and debuglink
 * under a root that does not exist; then once more with a 4 KiB table
 * bound, so the symbol, name and table bounds are reached. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "core/elf.h"
#include "symbolize/elf_symtab.h"

#define ROOT "/nonexistent-kiln-fuzz"
#define SMALL_TABLE 4096

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_level = LOG_DEBUG;
	memfd = memfd_create("kiln-fuzz-elf", MFD_CLOEXEC);
	FUZZ_CHECK(memfd >= 0);
	return 0;
}

static bool hex_id(const char *s)
{
	size_t n = strlen(s);

	if (n % 2 || n > 128)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static void check_table(const struct symtab *st, const uint8_t *data, size_t size)
{
	size_t n = symtab__count(st);
	const struct sym *s;
	uint64_t va;

	FUZZ_CHECK(hex_id(symtab__build_id(st)));
	FUZZ_CHECK(symtab__source(st) != NULL);
	FUZZ_CHECK(symtab__bytes(st) >= n * 2 * sizeof(uint64_t));
	/* Offsets of the file, in page steps and a few taken from the
	 * input: whatever is found contains the address. */
	for (uint64_t off = 0; off < size + 4096; off += 512) {
		va = UINT64_MAX;
		s = symtab__lookup(st, off, &va, &(struct sym){ 0 });
		if (!s)
			continue;
		FUZZ_CHECK(va != UINT64_MAX);
		FUZZ_CHECK(s->name && s->name[0]);
		FUZZ_CHECK(s->start <= va);
		FUZZ_CHECK(!s->size || va - s->start < s->size);
	}
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		uint64_t off;

		memcpy(&off, data + i, sizeof(off));
		s = symtab__lookup(st, off, &va, &(struct sym){ 0 });
		FUZZ_CHECK(!s || (s->start <= va && s->name));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab *st, *mem;
	char id[129];
	int err;

	mem = symtab__load_mem(data, size);
	if (mem)
		check_table(mem, data, size);
	else
		FUZZ_CHECK(errno != 0);

	FUZZ_CHECK(ftruncate(memfd, 0) == 0);
	FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size);
	err = elf__build_id(memfd, id, sizeof(id));
	FUZZ_CHECK(err <= 0);
	FUZZ_CHECK(err ? id[0] == '\0' : hex_id(id) && id[0]);
	st = symtab__load_fd(memfd, ROOT, ROOT "/usr/bin/prog");
	if (st)
		check_table(st, data, size);
	/* A file and its image in memory have the same symbols. */
	FUZZ_CHECK(!st == !mem || size == 0);
	if (st && mem) {
		FUZZ_CHECK(symtab__count(st) == symtab__count(mem));
		FUZZ_CHECK(!strcmp(symtab__build_id(st), symtab__build_id(mem)));
		FUZZ_CHECK(!strcmp(symtab__source(st), symtab__source(mem)));
	}
	symtab__free(st);
	/* A table bound of 4 KiB: the symbol, name and table bounds refuse
	 * what small inputs hold, never more than the bound is kept. */
	st = symtab__load(memfd, ROOT, ROOT "/usr/bin/prog", SMALL_TABLE);
	if (st) {
		check_table(st, data, size);
		FUZZ_CHECK(symtab__bytes(st) <= SMALL_TABLE);
		FUZZ_CHECK(!mem || symtab__count(st) == symtab__count(mem));
	}
	symtab__free(st);
	symtab__free(mem);
	return 0;
}
