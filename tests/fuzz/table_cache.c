/* SPDX-License-Identifier: BSD-2-Clause */
/* The unwind table cache's file reader (table_cache__decode, seeds:
 * tests/fuzz/table_cache_seeds.sh). Each input is read twice: as it is,
 * and with the builder fingerprint and the CRC-32 made right, so the
 * checks behind them (sizes, counts, rows, rules) see mutated files too;
 * the key is the one the input names. Whatever is read must be a table
 * the walker can take (sorted rows, rule indices below the rules, known
 * commands, INVALID last, within the bounds) and encode to a file that
 * reads back the same. */
#include <errno.h>
#include <string.h>

#include "cache_file.h"
#include "unwind/table_cache.h"

#define HEADER 296 /* table_cache.c's struct header */
#define OFF_KEYLEN 20
#define OFF_BUILDER 24

static uint8_t builder[8];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct kiln_unwind_row *row = calloc(1, sizeof(*row));
	struct unwind_table_info in = { .debug_source = "none" };
	struct unwind_table *t;
	uint8_t *buf;
	size_t len;

	(void)argc;
	(void)argv;
	FUZZ_CHECK(row != NULL);
	row->rule = KILN_UNWIND_CMD | KILN_CMD_INVALID;
	t = unwind_table__adopt(row, 1, NULL, 0, &in);
	FUZZ_CHECK(t != NULL);
	FUZZ_CHECK(table_cache__encode(t, "k", &buf, &len) == 0);
	memcpy(builder, buf + OFF_BUILDER, sizeof(builder));
	free(buf);
	unwind_table__free(t);
	return 0;
}

static void check(const uint8_t *data, size_t size, const char *key)
{
	struct unwind_limits small = unwind_default_limits;
	struct unwind_table *t = NULL, *back = NULL;
	const struct kiln_unwind_row *rows;
	size_t n, nrules, n2, len;
	uint8_t *buf;
	int err = table_cache__decode(data, size, key, NULL, &t);

	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -ESTALE || err == -EBADMSG ||
		   err == -E2BIG || err == -ENOMEM);
	FUZZ_CHECK(!err == (t != NULL));
	if (!t)
		return;
	rows = unwind_table__rows(t, &n);
	unwind_table__rules(t, &nrules);
	FUZZ_CHECK(n >= 1 && n <= UNWIND_ROWS_MAX && nrules <= UNWIND_RULES_MAX);
	FUZZ_CHECK(rows[n - 1].rule == (KILN_UNWIND_CMD | KILN_CMD_INVALID));
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(!i || rows[i].pc_off > rows[i - 1].pc_off);
		FUZZ_CHECK((rows[i].rule & KILN_UNWIND_CMD) ?
				   (rows[i].rule & ~KILN_UNWIND_CMD) <= KILN_CMD_FP_SWITCH :
				   rows[i].rule < nrules);
	}
	FUZZ_CHECK(table_cache__encode(t, key, &buf, &len) == 0);
	FUZZ_CHECK(table_cache__decode(buf, len, key, NULL, &back) == 0);
	unwind_table__rows(back, &n2);
	FUZZ_CHECK(n2 == n && memcmp(unwind_table__rows(back, &n2), rows, n * sizeof(*rows)) == 0);
	unwind_table__free(back);
	/* Smaller bounds: the same file is refused, never half read. */
	small.max_rows = (uint32_t)n - 1;
	back = NULL;
	FUZZ_CHECK(table_cache__decode(buf, len, key, &small, &back) == -E2BIG && !back);
	free(buf);
	unwind_table__free(t);
}

static void fix(uint8_t *file)
{
	memcpy(file + OFF_BUILDER, builder, sizeof(builder));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cache_file_target t = { HEADER, OFF_KEYLEN, TABLE_CACHE_KEY_MAX, fix,
						    check };

	cache_file_input(&t, data, size);
	return 0;
}
