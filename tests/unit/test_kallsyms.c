// SPDX-License-Identifier: BSD-2-Clause
/* kallsyms parser: fixture lookups, modules, junk lines, kptr_restrict. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/kallsyms.h"

#define FIXTURES "tests/fixtures/symbolize/"

static struct kallsyms *load_fixture(void)
{
	struct kallsyms *ks = kallsyms__load(FIXTURES "kallsyms.txt");

	cr_assert_not_null(ks, "load fixture: %s (run from the repo root)", strerror(errno));
	return ks;
}

/* kallsyms__lookup into storage of the caller's: NULL when not found. */
static const struct ksym *lookup_in(struct kallsyms *ks, uint64_t addr, struct ksym *out)
{
	return kallsyms__lookup(ks, addr, out) ? out : NULL;
}

static const struct ksym *lookup(struct kallsyms *ks, uint64_t addr)
{
	static struct ksym found;

	return lookup_in(ks, addr, &found);
}

static void expect_sym(struct kallsyms *ks, uint64_t addr, const char *name,
		       const char *module)
{
	const struct ksym *s = lookup(ks, addr);

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
	cr_assert_gt(kallsyms__bytes(ks), 9 * (sizeof(uint64_t) + 8));
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
	cr_assert_null(lookup(ks, 0xffffffff80ffffffull));
	cr_assert_null(lookup(ks, 0));
	kallsyms__free(ks);
}

Test(kallsyms, module_lookups)
{
	struct kallsyms *ks = load_fixture();
	struct ksym sa, sb, sx;
	const struct ksym *a, *b, *x;

	expect_sym(ks, 0xffffffffc0a01050ull, "ext4_foo", "ext4");
	expect_sym(ks, 0xffffffffc0a01100ull, "ext4_bar", "ext4");
	/* Out of order in the input, sorted in the table. */
	expect_sym(ks, 0xffffffffc0a02010ull, "ext4_later", "ext4");
	expect_sym(ks, 0xffffffffc0a01fffull, "ext4_bar", "ext4");
	expect_sym(ks, 0xffffffffc0b00000ull + 0x1000, "xfs_baz", "xfs");
	/* Module names are interned: one copy per module. */
	a = lookup_in(ks, 0xffffffffc0a01000ull, &sa);
	b = lookup_in(ks, 0xffffffffc0a02000ull, &sb);
	x = lookup_in(ks, 0xffffffffc0b00000ull, &sx);
	cr_assert(a && b && x);
	cr_assert_eq(a->module, b->module);
	cr_assert_neq(a->module, x->module);
	/* Far past the last symbol: no function there. */
	cr_assert_null(lookup(ks, 0xffffffffc0b00000ull + (2u << 20)));
	cr_assert_null(lookup(ks, UINT64_MAX));
	kallsyms__free(ks);
}

Test(kallsyms, restricted)
{
	struct kallsyms *ks = kallsyms__load(FIXTURES "kallsyms_restricted.txt");

	cr_assert_not_null(ks);
	cr_assert(kallsyms__restricted(ks));
	cr_assert_eq(kallsyms__count(ks), 0);
	cr_assert_eq(kallsyms__skipped_lines(ks), 0);
	cr_assert_null(lookup(ks, 0));
	cr_assert_null(lookup(ks, 0xffffffff81000000ull));
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
	cr_assert_null(lookup(ks, 1));
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
			lookup(ks, (uint64_t)rand() << 32 | (uint64_t)rand());
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
		s = lookup(ks, stext + 1);
		cr_assert_not_null(s);
		cr_assert_eq(s->addr, stext);
		cr_assert_null(s->module);
	}
	kallsyms__free(ks);
}

/* ---- the table kept between runs (kallsyms__load_cached) ---- */

struct cache_env {
	char dir[64], kallsyms[96], modules[96], boot_id[96];
	struct kallsyms_paths paths;
	int dirfd;
};

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* The fixture's symbols plus a BPF program's, two modules covering the
 * fixture's module symbols, a boot id; an empty cache directory. */
static void cache_env_init(struct cache_env *e)
{
	FILE *in = fopen(FIXTURES "kallsyms.txt", "r"), *out;
	char line[1024];

	cr_assert_not_null(in);
	snprintf(e->dir, sizeof(e->dir), "/tmp/kiln-ksym-test.XXXXXX");
	cr_assert_not_null(mkdtemp(e->dir));
	snprintf(e->kallsyms, sizeof(e->kallsyms), "%s/kallsyms", e->dir);
	snprintf(e->modules, sizeof(e->modules), "%s/modules", e->dir);
	snprintf(e->boot_id, sizeof(e->boot_id), "%s/boot_id", e->dir);
	out = fopen(e->kallsyms, "w");
	cr_assert_not_null(out);
	while (fgets(line, sizeof(line), in))
		fputs(line, out);
	fputs("ffffffffc0c00000 t bpf_prog_0123456789abcdef_handler\t[bpf]\n", out);
	fclose(out);
	fclose(in);
	write_text(e->modules, "ext4 8192 1 - Live 0xffffffffc0a01000\n"
		   "xfs 8192 0 - Live 0xffffffffc0b00000 (E)\n");
	write_text(e->boot_id, "5e69f33c-06f3-4ef2-b5d0-8b85e79eff19\n");
	e->paths = (struct kallsyms_paths){ e->kallsyms, e->modules, e->boot_id };
	e->dirfd = open(e->dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(e->dirfd, 0);
}

static void cache_env_fini(struct cache_env *e)
{
	char cmd[128];

	close(e->dirfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	cr_assert_eq(system(cmd), 0);
}

static struct kallsyms *load_cached(struct cache_env *e, enum kallsyms_cache_result want)
{
	enum kallsyms_cache_result res;
	struct kallsyms *ks = kallsyms__load_cached(&e->paths, e->dirfd, &res);

	cr_assert_not_null(ks, "load: %s", strerror(errno));
	cr_assert_eq(res, want, "cache result %d, want %d", res, want);
	return ks;
}

Test(kallsyms_cache, written_then_mapped_with_the_same_answers)
{
	struct cache_env e;
	struct kallsyms *read, *cached;
	static const uint64_t probes[] = {
		0xffffffff81000000ull, 0xffffffff81000190ull, 0xffffffff81000700ull,
		0xffffffffc0a01050ull, 0xffffffffc0a02010ull, 0xffffffffc0b01000ull,
		0xffffffff80ffffffull,
	};

	cache_env_init(&e);
	read = load_cached(&e, KALLSYMS_CACHE_MISS);
	cached = load_cached(&e, KALLSYMS_CACHE_HIT);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		struct ksym a, b;
		bool fa = kallsyms__lookup(read, probes[i], &a);
		bool fb = kallsyms__lookup(cached, probes[i], &b);

		cr_assert_eq(fa, fb, "%#llx", (unsigned long long)probes[i]);
		if (!fa)
			continue;
		cr_assert_eq(a.addr, b.addr);
		cr_assert_str_eq(a.name, b.name);
		cr_assert_eq(!a.module, !b.module);
		if (a.module)
			cr_assert_str_eq(a.module, b.module);
	}
	/* The BPF program is named by the read, not by the cache: there it is
	 * past every module's memory, counted for the caller to read again. */
	expect_sym(read, 0xffffffffc0c00010ull, "bpf_prog_0123456789abcdef_handler", "bpf");
	cr_assert_eq(kallsyms__uncovered(cached), 0);
	cr_assert_null(lookup(cached, 0xffffffffc0c00010ull));
	cr_assert_eq(kallsyms__uncovered(cached), 1);
	/* past xfs's 8 KiB, before the 1 MiB span ends */
	cr_assert_null(lookup(cached, 0xffffffffc0b02000ull));
	cr_assert_eq(kallsyms__count(cached), kallsyms__count(read) - 1);
	kallsyms__free(read);
	kallsyms__free(cached);
	cache_env_fini(&e);
}

Test(kallsyms_cache, another_boot_or_other_modules_read_again)
{
	struct cache_env e;

	cache_env_init(&e);
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_MISS));
	write_text(e.boot_id, "00000000-06f3-4ef2-b5d0-8b85e79eff19\n");
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_MISS));
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_HIT));
	/* a module loaded at another address */
	write_text(e.modules, "ext4 8192 1 - Live 0xffffffffc0a01000\n"
		   "xfs 8192 0 - Live 0xffffffffc0d00000\n");
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_MISS));
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_HIT));
	/* no module file at all (a kernel without modules) still has a key */
	unlink(e.modules);
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_MISS));
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_HIT));
	cache_env_fini(&e);
}

Test(kallsyms_cache, hidden_addresses_are_never_cached)
{
	struct cache_env e;
	struct stat st;

	cache_env_init(&e);
	write_text(e.modules, "ext4 8192 1 - Live 0x0000000000000000\n");
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_OFF));
	cr_assert_neq(fstatat(e.dirfd, "kernel.ksym", &st, 0), 0);
	e.paths.kallsyms = FIXTURES "kallsyms_restricted.txt";
	unlink(e.modules);
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_OFF));
	cr_assert_neq(fstatat(e.dirfd, "kernel.ksym", &st, 0), 0);
	cache_env_fini(&e);
}

Test(kallsyms_cache, a_link_is_refused)
{
	struct cache_env e;
	struct kallsyms *ks;

	cache_env_init(&e);
	cr_assert_eq(symlinkat("/etc/passwd", e.dirfd, "kernel.ksym"), 0);
	ks = load_cached(&e, KALLSYMS_CACHE_REFUSED);
	expect_sym(ks, 0xffffffff81000100ull, "do_one", NULL);
	kallsyms__free(ks);
	/* rewritten in its place, as a file of its own */
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_HIT));
	cache_env_fini(&e);
}

/* Any byte changed, the file cut or grown: refused (and rewritten), or a
 * table whose every lookup stays inside it. Never a crash. */
Test(kallsyms_cache, damaged_files_are_refused)
{
	struct cache_env e;
	unsigned char *good;
	long len;
	FILE *f;

	cache_env_init(&e);
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_MISS));
	f = fopen(e.dir, "r");
	cr_assert_not_null(f);
	fclose(f);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/kernel.ksym", e.dir);
		f = fopen(path, "r");
		cr_assert_not_null(f);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		good = malloc((size_t)len + 16);
		cr_assert_eq(fread(good, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		srand(7);
		for (int round = 0; round < 300; round++) {
			long n = len;
			enum kallsyms_cache_result res;
			struct kallsyms *ks;
			unsigned char *bad = malloc((size_t)len + 16);

			memcpy(bad, good, (size_t)len + 16);
			if (round % 3 == 0)
				n = rand() % len;
			else if (round % 3 == 1)
				n = len + 1 + rand() % 15;
			else
				bad[rand() % len] ^= (unsigned char)(1 + rand() % 255);
			f = fopen(path, "w");
			fwrite(bad, 1, (size_t)n, f);
			fclose(f);
			free(bad);
			ks = kallsyms__load_cached(&e.paths, e.dirfd, &res);
			cr_assert_not_null(ks);
			cr_assert(res == KALLSYMS_CACHE_REFUSED || res == KALLSYMS_CACHE_MISS,
				  "round %d: result %d", round, res);
			for (int i = 0; i < 50; i++)
				lookup(ks, 0xffffffff81000000ull + (uint64_t)(rand() % 0x1000) +
				       (i % 2 ? 0x3fa01000ull : 0));
			kallsyms__free(ks);
		}
		free(good);
	}
	kallsyms__free(load_cached(&e, KALLSYMS_CACHE_HIT));
	cache_env_fini(&e);
}
