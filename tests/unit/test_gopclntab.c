/* SPDX-License-Identifier: BSD-2-Clause */
/* core/gopclntab on the function tables of real, stripped Go binaries
 * built by others (esbuild's npm releases, tests/fixtures/gopclntab/): Go
 * 1.15, 1.17 and 1.26 (zero text start). Names, files and lines are
 * checked against Go's own reader (go tool addr2line, the .truth files);
 * then the tables are truncated and corrupted, and every read must stay
 * inside them (the sanitizer build checks that). */
#include <criterion/criterion.h>
#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gopclntab.h"

#define FIXTURES "tests/fixtures/gopclntab/"

/* The decompressed table of fixture tag; *size its bytes. */
static uint8_t *load(const char *tag, size_t *size)
{
	char path[256];
	uint8_t *in, *out;
	size_t in_size, in_pos = 0, out_pos = 0, cap = 8u << 20;
	uint64_t memlimit = 256u << 20;
	FILE *f;

	snprintf(path, sizeof(path), FIXTURES "%s.pclntab.xz", tag);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s missing", path);
	in = malloc(4u << 20);
	out = malloc(cap);
	cr_assert(in && out);
	in_size = fread(in, 1, 4u << 20, f);
	fclose(f);
	cr_assert_eq(lzma_stream_buffer_decode(&memlimit, 0, NULL, in, &in_pos, in_size, out,
					       &out_pos, cap), LZMA_OK, "%s does not decode", path);
	free(in);
	*size = out_pos;
	return out;
}

/* text start of the 1.26 table: moduledata.text of the binary */
#define GO126_TEXT 0x401000
#define GO126_ENTRY 0x48e840

/* Every function of t reads; returns how many have the ASM or TOPFRAME
 * flag in *asm_funcs, *top. */
static void all_functions(const struct gopclntab *t, size_t *asm_funcs, size_t *top)
{
	uint64_t prev_end = 0;

	*asm_funcs = *top = 0;
	for (uint64_t i = 0; i < t->nfunc; i++) {
		struct go_func f;

		cr_assert_eq(gopclntab__func(t, i, &f), 0, "function %lu", (unsigned long)i);
		cr_assert_geq(f.entry, prev_end, "function %lu out of order", (unsigned long)i);
		cr_assert_gt(strlen(f.name), 0);
		prev_end = f.end;
		*asm_funcs += !!(f.flag & GO_FUNC_ASM);
		*top += !!(f.flag & GO_FUNC_TOPFRAME);
	}
}

/* Each line of tag.truth ("pc function file:line", from go tool addr2line
 * on the binary) agrees with the table. */
static void check_truth(const struct gopclntab *t, const char *tag)
{
	char path[256], line[1024];
	unsigned checked = 0;
	FILE *f;

	snprintf(path, sizeof(path), FIXTURES "%s.truth", tag);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[512], where[512], want[600];
		unsigned long long pc;
		const char *file;
		int32_t fileno, lineno;
		struct go_func fn;
		int64_t i;

		char *first = strchr(line, ' '), *last = strrchr(line, ' ');

		/* "pc name file:line": names may hold spaces (struct types) */
		cr_assert(first && last > first);
		line[strcspn(line, "\n")] = '\0';
		pc = strtoull(line, NULL, 16);
		snprintf(name, sizeof(name), "%.*s", (int)(last - first - 1), first + 1);
		snprintf(where, sizeof(where), "%s", last + 1);
		i = gopclntab__find(t, pc);
		cr_assert_geq(i, 0, "%s: pc %llx in no function", tag, pc);
		cr_assert_eq(gopclntab__func(t, (uint64_t)i, &fn), 0);
		cr_assert_str_eq(fn.name, name, "%s: pc %llx", tag, pc);
		if (strcmp(where, ":-1") == 0) {
			/* padding after the code: Go knows no line there either */
			cr_assert_not(gopclntab__value_at(t, &fn, fn.pcln, pc, &lineno));
			checked++;
			continue;
		}
		cr_assert(gopclntab__value_at(t, &fn, fn.pcfile, pc, &fileno));
		cr_assert(gopclntab__value_at(t, &fn, fn.pcln, pc, &lineno));
		file = gopclntab__file(t, &fn, fileno);
		cr_assert_not_null(file, "%s: pc %llx has no file", tag, pc);
		snprintf(want, sizeof(want), "%s:%d", file, lineno);
		cr_assert_str_eq(want, where, "%s: pc %llx", tag, pc);
		checked++;
	}
	fclose(f);
	cr_assert_gt(checked, 100);
}

/* A fixture whose header has its text start: layout version, the number
 * of TOPFRAME functions, and the truth file. */
static void check_fixture(const char *tag, enum gopclntab_version version, size_t want_top)
{
	struct gopclntab t;
	size_t size, asm_funcs, top;
	uint8_t *d = load(tag, &size);

	cr_assert_eq(gopclntab__open(&t, d, size, 0), 0);
	cr_assert_eq(t.version, version);
	all_functions(&t, &asm_funcs, &top);
	cr_assert_eq(top, want_top, "%s: %zu TOPFRAME functions", tag, top);
	check_truth(&t, tag);
	free(d);
}

Test(gopclntab, go1_15_agrees_with_go_tool_addr2line)
{
	/* no flags before Go 1.17 */
	check_fixture("go1.15", GOPCLNTAB_1_2, 0);
}

Test(gopclntab, go1_17_agrees_with_go_tool_addr2line)
{
	/* runtime.goexit, mstart, rt0_go carry TOPFRAME */
	check_fixture("go1.17", GOPCLNTAB_1_16, 3);
}

Test(gopclntab, go1_26_zero_text_start_from_module_data)
{
	struct gopclntab t;
	struct go_func f;
	size_t size, asm_funcs, top;
	uint8_t *d = load("go1.26", &size);
	int64_t i;

	/* the header stores no text start: without the module's, no table */
	cr_assert_eq(gopclntab__open(&t, d, size, 0), -EINVAL);
	cr_assert_eq(gopclntab__open(&t, d, size, GO126_TEXT), 0);
	cr_assert_eq(t.version, GOPCLNTAB_1_20);
	all_functions(&t, &asm_funcs, &top);
	cr_assert_gt(asm_funcs, 100);
	cr_assert_geq(top, 3);
	/* the ELF entry point is the runtime's entry stub */
	i = gopclntab__find(&t, GO126_ENTRY);
	cr_assert_geq(i, 0);
	cr_assert_eq(gopclntab__func(&t, (uint64_t)i, &f), 0);
	cr_assert_str_eq(f.name, "_rt0_amd64_linux");
	cr_assert_eq(f.entry, GO126_ENTRY);
	free(d);
}

/* Reads everything a table offers, as the unwinder and symbolizer do. */
static void read_everything(const struct gopclntab *t)
{
	for (uint64_t i = 0; i < t->nfunc; i++) {
		struct go_func f;
		struct go_pcvalue it;
		uint64_t s, e;
		int32_t v;

		if (gopclntab__func(t, i, &f))
			continue;
		if (gopclntab__pcvalue(t, &f, f.pcsp, &it))
			while (gopclntab__pcvalue_next(&it, &s, &e, &v) == 1)
				cr_assert(s >= f.entry && e <= f.end && s <= e);
		if (gopclntab__value_at(t, &f, f.pcfile, f.entry, &v))
			(void)gopclntab__file(t, &f, v);
		(void)gopclntab__value_at(t, &f, f.pcln, f.end - 1, &v);
		(void)gopclntab__find(t, f.entry);
	}
}

Test(gopclntab, truncated_tables_stay_inside)
{
	static const char *const tags[] = { "go1.15", "go1.17", "go1.26" };

	for (size_t k = 0; k < 3; k++) {
		size_t size;
		uint8_t *d = load(tags[k], &size);

		for (size_t cut = 0; cut < size; cut += size / 7 + 1) {
			struct gopclntab t;
			/* a copy of exactly cut bytes: reading past it is caught */
			uint8_t *c = malloc(cut ? cut : 1);

			memcpy(c, d, cut);
			if (gopclntab__open(&t, c, cut, GO126_TEXT) == 0)
				read_everything(&t);
			free(c);
		}
		free(d);
	}
}

Test(gopclntab, corrupted_tables_stay_inside)
{
	size_t size;
	uint8_t *d = load("go1.17", &size);
	uint32_t seed = 12345;

	for (int round = 0; round < 40; round++) {
		struct gopclntab t;
		uint8_t *c = malloc(size);

		memcpy(c, d, size);
		/* overwrite words of the header, the function table and the
		 * records with random values */
		for (int k = 0; k < 64; k++) {
			size_t at;

			seed = seed * 1103515245u + 12345u;
			at = k < 8 ? 8 + (seed >> 8) % 64 : (seed >> 4) % (size < 200000 ? size : 200000);
			seed = seed * 1103515245u + 12345u;
			c[at] = (uint8_t)(seed >> 16);
		}
		if (gopclntab__open(&t, c, size, 0) == 0)
			read_everything(&t);
		free(c);
	}
	free(d);
}

Test(gopclntab, not_a_table)
{
	struct gopclntab t;
	uint8_t junk[128] = { 0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8 };

	cr_assert_eq(gopclntab__open(&t, junk, 8, GO126_TEXT), -EINVAL);
	/* nfunc 0 */
	cr_assert_eq(gopclntab__open(&t, junk, sizeof(junk), GO126_TEXT), -EINVAL);
	/* more functions than the bound, before anything is read for them */
	junk[8 + 3] = 0x01;
	cr_assert_eq(gopclntab__open(&t, junk, sizeof(junk), GO126_TEXT), -E2BIG);
	junk[6] = 3;	/* no such quantum */
	cr_assert_eq(gopclntab__open(&t, junk, sizeof(junk), GO126_TEXT), -EINVAL);
}
