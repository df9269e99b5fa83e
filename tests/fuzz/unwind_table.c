/* SPDX-License-Identifier: BSD-2-Clause */
/* Unwind tables: unwind_table__build_mem on the input as an ELF image, and
 * the same bytes as a file (a memfd) through unwind_table__build, which
 * looks for a debug file under a root that does not exist; then once more
 * with small bounds, so every refusal path runs. Whatever is built must be
 * sorted, end in INVALID, index only rules it has, and agree between the
 * image and the file. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "unwind/unwind_table.h"

#define ROOT "/nonexistent-kiln-fuzz"

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_level = LOG_DEBUG;
	memfd = memfd_create("kiln-fuzz-unwind", MFD_CLOEXEC);
	FUZZ_CHECK(memfd >= 0);
	return 0;
}

static void check_table(const struct unwind_table *t, const struct unwind_limits *lim)
{
	size_t n, nrules;
	const struct kiln_unwind_row *rows = unwind_table__rows(t, &n);
	struct unwind_table_info in;
	char buf[64];

	unwind_table__rules(t, &nrules);
	unwind_table__info(t, &in);
	FUZZ_CHECK(n == in.rows && nrules == in.rules);
	FUZZ_CHECK(n <= lim->max_rows && nrules <= lim->max_rules);
	FUZZ_CHECK(!n || rows[n - 1].rule == (KILN_UNWIND_CMD | KILN_CMD_INVALID));
	for (size_t i = 0; i < n; i++) {
		const struct kiln_unwind_row *r;

		FUZZ_CHECK(!i || rows[i].pc_off > rows[i - 1].pc_off);
		FUZZ_CHECK((rows[i].rule & KILN_UNWIND_CMD) || rows[i].rule < nrules);
		FUZZ_CHECK(unwind_table__describe(t, &rows[i], buf, sizeof(buf))[0]);
		r = unwind_table__lookup(t, in.base + rows[i].pc_off);
		FUZZ_CHECK(i + 1 == n ? r == NULL : r == &rows[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_limits small = unwind_default_limits;
	struct unwind_table *mem, *file;

	mem = unwind_table__build_mem(data, size, "fuzz", NULL);
	if (mem)
		check_table(mem, &unwind_default_limits);
	else
		FUZZ_CHECK(errno != 0);

	FUZZ_CHECK(ftruncate(memfd, 0) == 0);
	FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size);
	file = unwind_table__build(memfd, ROOT, ROOT "/usr/bin/prog", NULL);
	if (file)
		check_table(file, &unwind_default_limits);
	/* A file and its image hold the same CFI (no debug file exists). */
	FUZZ_CHECK(!file == !mem);
	if (file && mem) {
		size_t a, b;

		unwind_table__rows(file, &a);
		unwind_table__rows(mem, &b);
		FUZZ_CHECK(a == b);
	}
	unwind_table__free(file);
	small.max_rows = 16;
	small.max_rules = 4;
	small.max_fdes = 8;
	small.max_work = 4096;
	file = unwind_table__build(memfd, ROOT, ROOT "/usr/bin/prog", &small);
	if (file)
		check_table(file, &small);
	unwind_table__free(file);
	unwind_table__free(mem);
	return 0;
}
