// SPDX-License-Identifier: BSD-2-Clause
/* kallsyms parser: fixture lookups, modules, junk lines, kptr_restrict. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/kallsyms.h"

#define FIXTURES "tests/fixtures/symbolize/"

static struct kallsyms *load_fixture(void)
{
	struct kallsyms *ks = kallsyms__load(FIXTURES "kallsyms.txt");

	cr_assert_not_null(ks, "load fixture: %s (run from the repo root)", strerror(errno));
	return ks;
}

static void expect_sym(const struct kallsyms *ks, uint64_t addr, const char *name,
		       const char *module)
{
	const struct ksym *s = kallsyms__lookup(ks, addr);

	cr_assert_not_null(s, "lookup %#llx", (unsigned long long)addr);
	cr_assert_str_eq(s->name, name, "lookup %#llx", (unsigned long long)addr);
	if (module)
		cr_assert(s->module && strcmp(s->module, module) == 0,
			  "%s: module %s, want %s", name, s->module ? s->module : "(core)",
			  module);
	else
		cr_assert_null(s->module, "%s: module %s, want core", name, s->module);
}

Test(kallsyms, fixture_counts)
{
	struct kallsyms *ks = load_fixture();

	/* 9 function symbols (one alias folded), 6 junk lines; d and A
	 * lines are not junk, only not functions. */
	cr_assert_eq(kallsyms__count(ks), 9);
	cr_assert_eq(kallsyms__skipped_lines(ks), 6);
	cr_assert_not(kallsyms__restricted(ks));
	cr_assert_gt(kallsyms__bytes(ks), 9 * sizeof(struct ksym));
	kallsyms__free(ks);
}

Test(kallsyms, core_lookups)
{
	struct kallsyms *ks = load_fixture();

	/* T wins over the local alias at the same address. */
	expect_sym(ks, 0xffffffff81000000ull, "_stext", NULL);
	expect_sym(ks, 0xffffffff810000ffull, "_stext", NULL);
	expect_sym(ks, 0xffffffff81000100ull, "do_one", NULL);
	/* some_data (d) is not a function: still inside do_one. */
	expect_sym(ks, 0xffffffff81000190ull, "do_one", NULL);
	expect_sym(ks, 0xffffffff81000201ull, "helper_two", NULL);
	expect_sym(ks, 0xffffffff81000300ull, "weak_three", NULL);
	expect_sym(ks, 0xffffffff81000450ull, "last_core", NULL);
	/* abs_symbol (A) is not a function either. */
	expect_sym(ks, 0xffffffff81000700ull, "last_core", NULL);
	cr_assert_null(kallsyms__lookup(ks, 0xffffffff80ffffffull));
	cr_assert_null(kallsyms__lookup(ks, 0));
	kallsyms__free(ks);
}

Test(kallsyms, module_lookups)
{
	struct kallsyms *ks = load_fixture();
	const struct ksym *a, *b, *x;

	expect_sym(ks, 0xffffffffc0a01050ull, "ext4_foo", "ext4");
	expect_sym(ks, 0xffffffffc0a01100ull, "ext4_bar", "ext4");
	/* Out of order in the input, sorted in the table. */
	expect_sym(ks, 0xffffffffc0a02010ull, "ext4_later", "ext4");
	expect_sym(ks, 0xffffffffc0a01fffull, "ext4_bar", "ext4");
	expect_sym(ks, 0xffffffffc0b00000ull + 0x1000, "xfs_baz", "xfs");
	/* Module names are interned: one copy per module. */
	a = kallsyms__lookup(ks, 0xffffffffc0a01000ull);
	b = kallsyms__lookup(ks, 0xffffffffc0a02000ull);
	x = kallsyms__lookup(ks, 0xffffffffc0b00000ull);
	cr_assert(a && b && x);
	cr_assert_eq(a->module, b->module);
	cr_assert_neq(a->module, x->module);
	/* Far past the last symbol: no function there. */
	cr_assert_null(kallsyms__lookup(ks, 0xffffffffc0b00000ull + (2u << 20)));
	cr_assert_null(kallsyms__lookup(ks, UINT64_MAX));
	kallsyms__free(ks);
}

Test(kallsyms, restricted)
{
	struct kallsyms *ks = kallsyms__load(FIXTURES "kallsyms_restricted.txt");

	cr_assert_not_null(ks);
	cr_assert(kallsyms__restricted(ks));
	cr_assert_eq(kallsyms__count(ks), 0);
	cr_assert_eq(kallsyms__skipped_lines(ks), 0);
	cr_assert_null(kallsyms__lookup(ks, 0));
	cr_assert_null(kallsyms__lookup(ks, 0xffffffff81000000ull));
	kallsyms__free(ks);
}

Test(kallsyms, buffers)
{
	static const char no_newline[] = "ffffffff81000000 T first\nffffffff81000010 t second";
	static const char empty[] = "";
	struct kallsyms *ks;

	ks = kallsyms__parse(no_newline, strlen(no_newline));
	cr_assert_not_null(ks);
	cr_assert_eq(kallsyms__count(ks), 2);
	expect_sym(ks, 0xffffffff81000011ull, "second", NULL);
	kallsyms__free(ks);

	/* Parsing stops at len, not at a NUL. */
	ks = kallsyms__parse(no_newline, strlen("ffffffff81000000 T first\n"));
	cr_assert_not_null(ks);
	cr_assert_eq(kallsyms__count(ks), 1);
	kallsyms__free(ks);

	ks = kallsyms__parse(empty, 0);
	cr_assert_not_null(ks);
	cr_assert_eq(kallsyms__count(ks), 0);
	cr_assert_not(kallsyms__restricted(ks));
	cr_assert_null(kallsyms__lookup(ks, 1));
	kallsyms__free(ks);

	cr_assert_null(kallsyms__load("/nonexistent/kallsyms"));
	cr_assert_eq(errno, ENOENT);
	kallsyms__free(NULL);
}

Test(kallsyms, overlong_and_binary_lines)
{
	size_t len = 4096, n;
	char *buf = malloc(len);

	cr_assert_not_null(buf);
	n = (size_t)snprintf(buf, len, "ffffffff81000000 T ");
	memset(buf + n, 'a', 2000);
	n += 2000;
	n += (size_t)snprintf(buf + n, len - n, "\nffffffff81000100 T ok\n"
			      "ffffffff81000200 T nul");
	buf[n++] = '\0';
	n += (size_t)snprintf(buf + n, len - n, "name\nffffffff81000300 T last\n");
	struct kallsyms *ks = kallsyms__parse(buf, n);

	cr_assert_not_null(ks);
	cr_assert_eq(kallsyms__count(ks), 2);
	cr_assert_eq(kallsyms__skipped_lines(ks), 2);
	expect_sym(ks, 0xffffffff81000100ull, "ok", NULL);
	kallsyms__free(ks);
	free(buf);
}

Test(kallsyms, garbage_never_crashes)
{
	static const char alphabet[] = "0123456789abcdefxT tW\t[]\n\r\0";
	size_t len = 1 << 16;
	char *buf = malloc(len);

	cr_assert_not_null(buf);
	srand(42);
	for (int round = 0; round < 20; round++) {
		struct kallsyms *ks;

		for (size_t i = 0; i < len; i++)
			buf[i] = round % 2 ? (char)rand() :
				 alphabet[(size_t)rand() % (sizeof(alphabet) - 1)];
		ks = kallsyms__parse(buf, len);
		cr_assert_not_null(ks);
		for (int i = 0; i < 100; i++)
			kallsyms__lookup(ks, (uint64_t)rand() << 32 | (uint64_t)rand());
		kallsyms__free(ks);
	}
	free(buf);
}

/* The live file: every line must parse. */
Test(kallsyms, proc_kallsyms)
{
	struct kallsyms *ks = kallsyms__load("/proc/kallsyms");

	if (!ks)
		cr_skip_test("/proc/kallsyms: %s", strerror(errno));
	cr_assert_eq(kallsyms__skipped_lines(ks), 0);
	if (kallsyms__restricted(ks)) {
		cr_assert_eq(kallsyms__count(ks), 0);
	} else {
		unsigned long long stext = 0;
		const struct ksym *s;
		char line[600];
		FILE *f;

		cr_assert_gt(kallsyms__count(ks), 1000);
		f = fopen("/proc/kallsyms", "r");
		cr_assert_not_null(f);
		while (!stext && fgets(line, sizeof(line), f))
			if (strcmp(line + strcspn(line, " "), " T _stext\n") == 0)
				stext = strtoull(line, NULL, 16);
		fclose(f);
		cr_assert_neq(stext, 0, "no _stext in /proc/kallsyms");
		/* Some alias of _stext, or _stext itself. */
		s = kallsyms__lookup(ks, stext + 1);
		cr_assert_not_null(s);
		cr_assert_eq(s->addr, stext);
		cr_assert_null(s->module);
	}
	kallsyms__free(ks);
}
