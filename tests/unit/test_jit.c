/* SPDX-License-Identifier: BSD-2-Clause */
/* JIT symbol files, read from real files: perf maps and a jitdump written
 * by node 20 and OpenJDK 17 (tests/fixtures/jit/), files written here with
 * the hostile cases (bad lines, overlaps, names and lines too long, bad
 * headers and records, tables over their bound), and the per-process
 * cache on a /proc tree built under /tmp: the namespace pid, the process's
 * root, the owner check, no symlink, re-reads of changed files, the byte
 * bound with LRU eviction, and the files kept open after the process. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/proc.h"
#include "symbolize/jit.h"
#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"
#include "unit_helpers.h"

#define FIXTURES "tests/fixtures/jit/"
#define SEC 1000000000ull

static char dir[128];

static void setup(void)
{
	temp_dir(dir, sizeof(dir), "jit");
}

static void teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(jit, .init = setup, .fini = teardown);

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

/* The table of a file, read by kind ('m': perf map, 'd': jitdump) with a
 * builder of max bytes; the builder's counts in *out. */
static struct jit_table *read_table(const char *path, char kind, size_t max,
				    struct jit_builder *out)
{
	struct jit_builder b;
	struct jit_table *t;
	struct stat st;
	int fd = open(path, O_RDONLY), err;

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(fstat(fd, &st), 0);
	jit_builder__init(&b, path, max);
	err = kind == 'm' ? perf_map__read(&b, fd, (uint64_t)st.st_size) :
			    jitdump__read(&b, fd, (uint64_t)st.st_size);
	close(fd);
	cr_assert_eq(err, 0, "%s: %s", path, strerror(-err));
	if (out)
		*out = b;
	t = jit_builder__finish(&b);
	cr_assert_not_null(t);
	cr_assert_leq(jit_table__bytes(t), max + 64, "%zu bytes over the bound %zu",
		      jit_table__bytes(t), max);
	return t;
}

static struct jit_table *text_table(const char *text, size_t max, struct jit_builder *out)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/text.map", dir);
	write_file(path, text, strlen(text));
	return read_table(path, 'm', max, out);
}

static void expect_name(const struct jit_table *t, uint64_t addr, const char *want)
{
	const char *got = jit_table__lookup(t, addr);

	if (!want)
		cr_expect_null(got, "0x%llx: '%s', want none", (unsigned long long)addr, got);
	else
		cr_expect(got && strcmp(got, want) == 0, "0x%llx: '%s', want '%s'",
			  (unsigned long long)addr, got ? got : "(none)", want);
}

Test(jit, node_perf_basic_prof_map)
{
	struct jit_builder b;
	struct jit_table *t = read_table(FIXTURES "node-perf-basic-prof.map", 'm', 1 << 20, &b);

	for (int r = 0; r < JIT_REFUSAL_COUNT; r++)
		cr_expect_eq(b.refused[r], 0, "%s refused", jit_refusal_names[r]);
	expect_name(t, 0x7f93e8006200, "JS:*hotLoop /tmp/jitx/hot.js:1:17");
	expect_name(t, 0x7f93e8006200 + 0x2d7, "JS:*hotLoop /tmp/jitx/hot.js:1:17");
	expect_name(t, 0x7f93e8006200 + 0x2d8, NULL);
	expect_name(t, 0x7f93e8005b80 + 0x17f, "JS:^hotLoop /tmp/jitx/hot.js:1:17");
	expect_name(t, 0x18c4000, "Builtin:DeoptimizationEntry_Eager");
	cr_expect_gt(jit_table__count(t), 150);
	jit_table__free(t);
}

/* The JVM writes 0x before both numbers and spaces inside names. */
Test(jit, jdk_compiler_perfmap)
{
	struct jit_builder b;
	struct jit_table *t = read_table(FIXTURES "jdk17-perfmap.map", 'm', 1 << 20, &b);

	cr_expect_eq(b.refused[JIT_REFUSED_BAD_LINE], 0);
	expect_name(t, 0x00007f6120ec7620, "double Hot.hotLoop(int)");
	expect_name(t, 0x00007f6119401360 + 0x1cf, "double Hot.hotLoop(int)");
	expect_name(
		t, 0x00007f6120ec71c0 + 0x10,
		"java.lang.Object jdk.internal.misc.Unsafe.getReferenceVolatile(java.lang.Object, long)");
	jit_table__free(t);
}

/* node --perf-prof: code loads among debug-info and unwinding-info
 * records, which are skipped. */
Test(jit, node_perf_prof_jitdump)
{
	struct jit_builder b;
	struct jit_table *t = read_table(FIXTURES "node-perf-prof.dump", 'd', 1 << 20, &b);

	for (int r = 0; r < JIT_REFUSAL_COUNT; r++)
		cr_expect_eq(b.refused[r], 0, "%s refused", jit_refusal_names[r]);
	expect_name(t, 0x7fe70bf86200 + 0x100, "JS:*hotLoop /tmp/jitx/hot.js:1:17");
	expect_name(t, 0x7fe70bf86b80 + 0x3f7, "JS:* /tmp/jitx/hot.js:1:1");
	expect_name(t, 0x7fe70bf86b80 + 0x3f8, NULL);
	expect_name(t, 0x18c4000 + 0x2ff, "Builtin:DeoptimizationEntry_Eager");
	cr_expect_eq(jit_table__count(t), 25);
	jit_table__free(t);
}

/* Later lines win over the part of earlier ones they cover, as perf
 * reads an append-only map; an entry covered whole by later ones is gone. */
Test(jit, later_entries_win_overlaps)
{
	struct jit_table *t = text_table("1000 100 outer\n"
					 "1080 10 inner\n"
					 "2000 10 hidden\n"
					 "1ff0 40 over_hidden\n"
					 "3000 10 first\n"
					 "3000 10 second\n"
					 "4000 100 big\n"
					 "4000 10 a\n"
					 "4008 10 b\n",
					 1 << 20, NULL);

	static const struct {
		uint64_t addr;
		const char *name;
	} want[] = {
		{ 0x1000, "outer" }, { 0x107f, "outer" },	{ 0x1080, "inner" },
		{ 0x108f, "inner" }, { 0x1090, "outer" },	{ 0x10ff, "outer" },
		{ 0x1100, NULL },    { 0x2005, "over_hidden" }, { 0x3005, "second" },
		{ 0x4003, "a" },     { 0x4008, "b" },		{ 0x4017, "b" },
		{ 0x4018, "big" },   { 0x0fff, NULL },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		expect_name(t, want[i].addr, want[i].name);
	cr_expect_eq(jit_table__count(t), 8, "ranges: %zu", jit_table__count(t));
	jit_table__free(t);
}

Test(jit, bad_lines_counted_and_skipped)
{
	struct jit_builder b;
	struct jit_table *t = text_table("\n   \n"
					 "zz 10 not_hex\n"
					 "1000\n"
					 "1000 10\n"
					 "1000 10 \n"
					 "1000,10 comma\n"
					 "0x 10 empty_hex\n"
					 "11112222333344445 10 seventeen_digits\n"
					 "ffffffffffffff00 200 wraps\n"
					 "1000 100000000 four_gib\n"
					 "0 0 empty\n"
					 "\t0x5000\t0X20\t tabs and 0X \r\n"
					 "6000 10 has\0nul\n"
					 "7000 10 partial",
					 1 << 20, &b);

	/* The blank lines and the empty entry are no refusals; the last line
	 * has no newline yet and a NUL ends the text written here. */
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_LINE], 9, "bad lines: %llu",
		     (unsigned long long)b.refused[JIT_REFUSED_BAD_LINE]);
	expect_name(t, 0x5010, "tabs and 0X");
	expect_name(t, 0x1000, NULL);
	expect_name(t, 0x7000, NULL);
	cr_expect_eq(jit_table__count(t), 1);
	jit_table__free(t);
}

/* A NUL inside a name ends it; an unfinished last line waits. */
Test(jit, nul_in_name_and_partial_last_line)
{
	static const char text[] = "6000 10 has\0nul\n7000 10 partial";
	char path[256];
	struct jit_table *t;

	snprintf(path, sizeof(path), "%s/nul.map", dir);
	write_file(path, text, sizeof(text) - 1);
	t = read_table(path, 'm', 1 << 20, NULL);
	expect_name(t, 0x6000, "has");
	expect_name(t, 0x7000, NULL);
	jit_table__free(t);
}

/* Past PERF_MAP_BAD_LINES_MAX bad lines the rest is not read. */
Test(jit, garbage_file_abandoned)
{
	size_t n = (PERF_MAP_BAD_LINES_MAX + 10) * 6 + 64;
	char *text = malloc(n), *p = text;
	struct jit_builder b;
	struct jit_table *t;

	cr_assert_not_null(text);
	p += sprintf(p, "1000 10 before\n");
	for (int i = 0; i < PERF_MAP_BAD_LINES_MAX + 10; i++)
		p += sprintf(p, "junk\n");
	sprintf(p, "2000 10 after\n");
	t = text_table(text, 1 << 20, &b);
	free(text);
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_LINE], PERF_MAP_BAD_LINES_MAX + 1);
	expect_name(t, 0x1000, "before");
	expect_name(t, 0x2000, NULL);
	jit_table__free(t);
}

/* A name over JIT_NAME_MAX is cut and counted; a line longer than the
 * read buffer too, and the line after it is read. */
Test(jit, long_names_and_lines_cut)
{
	size_t n = 200 << 10;
	char *text = malloc(n + 4096), *p = text;
	struct jit_builder b;
	struct jit_table *t;
	const char *name;

	cr_assert_not_null(text);
	p += sprintf(p, "1000 10 ");
	memset(p, 'a', 2000);
	p += 2000;
	p += sprintf(p, "\n2000 10 ");
	memset(p, 'b', n);
	p += n;
	sprintf(p, "\n3000 10 after\n");
	t = text_table(text, 1 << 20, &b);
	free(text);
	cr_expect_eq(b.refused[JIT_REFUSED_NAME_LONG], 2);
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_LINE], 0);
	name = jit_table__lookup(t, 0x1000);
	cr_assert_not_null(name);
	cr_expect_eq(strlen(name), JIT_NAME_MAX - 1);
	name = jit_table__lookup(t, 0x2000);
	cr_assert_not_null(name);
	cr_expect_eq(strlen(name), JIT_NAME_MAX - 1);
	cr_expect_eq(name[0], 'b');
	expect_name(t, 0x3000, "after");
	jit_table__free(t);
}

/* A table stops at its bound: counted once, the rest of the file skipped,
 * the table within the bound. */
Test(jit, table_bound)
{
	char *text = malloc(100000 * 24), *p = text;
	struct jit_builder b;
	struct jit_table *t;

	cr_assert_not_null(text);
	for (int i = 0; i < 100000; i++)
		p += sprintf(p, "%x 10 sym_%d\n", 0x10000 + i * 0x10, i);
	t = text_table(text, 64 << 10, &b);
	free(text);
	cr_expect_eq(b.refused[JIT_REFUSED_TABLE], 1);
	cr_expect(b.full);
	expect_name(t, 0x10000, "sym_0");
	expect_name(t, 0x10000 + 99999 * 0x10, NULL);
	cr_expect_gt(jit_table__count(t), 1000);
	cr_expect_lt(jit_table__count(t), 100000);
	jit_table__free(t);
}

/* The jitdump format, written here: header, then records. */
struct dump {
	uint8_t buf[8192];
	size_t len;
};

static void put(struct dump *d, const void *p, size_t n)
{
	cr_assert_leq(d->len + n, sizeof(d->buf));
	memcpy(d->buf + d->len, p, n);
	d->len += n;
}

static void put32(struct dump *d, uint32_t v)
{
	put(d, &v, 4);
}

static void put64(struct dump *d, uint64_t v)
{
	put(d, &v, 8);
}

static void dump_header(struct dump *d, uint32_t magic, uint32_t version)
{
	d->len = 0;
	put32(d, magic);
	put32(d, version);
	put32(d, 40);
	put32(d, 62); /* EM_X86_64 */
	put32(d, 0);
	put32(d, 1234);
	put64(d, 1);
	put64(d, 0);
}

/* A code load of code_size bytes (zeros) named name (len bytes, as given:
 * without a NUL when the caller says so); total 0: the right size. */
static void dump_load(struct dump *d, uint64_t addr, uint64_t code_size, const char *name,
		      size_t len, uint32_t total)
{
	uint8_t zero[256] = { 0 };

	put32(d, 0);
	put32(d, total ? total : (uint32_t)(16 + 40 + len + code_size));
	put64(d, 2);
	put32(d, 1234);
	put32(d, 1234);
	put64(d, addr);
	put64(d, addr);
	put64(d, code_size);
	put64(d, 7);
	put(d, name, len);
	cr_assert_leq(code_size, sizeof(zero));
	put(d, zero, code_size);
}

/* Another record kind: id, and body bytes of garbage. */
static void dump_other(struct dump *d, uint32_t id, uint32_t body)
{
	uint8_t junk[256];

	memset(junk, 0xa5, sizeof(junk));
	put32(d, id);
	put32(d, 16 + body);
	put64(d, 3);
	put(d, junk, body);
}

static struct jit_table *dump_table(const struct dump *d, struct jit_builder *b)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/jit-1.dump", dir);
	write_file(path, d->buf, d->len);
	return read_table(path, 'd', 1 << 20, b);
}

Test(jit, jitdump_records)
{
	struct dump d;
	struct jit_builder b;
	struct jit_table *t;

	dump_header(&d, 0x4A695444, 1);
	dump_load(&d, 0x1000, 0x40, "first", 6, 0);
	dump_other(&d, 1, 40); /* code move: not applied */
	dump_other(&d, 2, 100); /* debug info */
	dump_other(&d, 4, 200); /* unwinding info */
	dump_other(&d, 99, 8); /* unknown kind */
	dump_load(&d, 0x1010, 0x10, "later", 6, 0);
	dump_load(&d, 0x2000, 0x20, "no room", 8, 16 + 40 + 8 + 0x10); /* code past its record */
	t = dump_table(&d, &b);
	expect_name(t, 0x1000, "first");
	expect_name(t, 0x1015, "later");
	expect_name(t, 0x1025, "first");
	expect_name(t, 0x2000, NULL);
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_RECORD], 1);
	jit_table__free(t);
}

Test(jit, jitdump_bad_headers)
{
	struct dump d;
	struct jit_builder b;

	dump_header(&d, 0x4454694A, 1);
	dump_load(&d, 0x1000, 0x10, "x", 2, 0);
	jit_table__free(dump_table(&d, &b));
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_HEADER], 1);
	dump_header(&d, 0x4A695444, 2);
	jit_table__free(dump_table(&d, &b));
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_HEADER], 1);
	dump_header(&d, 0x12345678, 1);
	jit_table__free(dump_table(&d, &b));
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_HEADER], 1);
	/* Shorter than a header: a file being started, no refusal. */
	d.len = 20;
	jit_table__free(dump_table(&d, &b));
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_HEADER], 0);
}

Test(jit, jitdump_bad_records)
{
	struct dump d;
	struct jit_builder b;
	struct jit_table *t;
	char longname[1500];

	/* A name without its NUL before the code. */
	dump_header(&d, 0x4A695444, 1);
	dump_load(&d, 0x1000, 0x10, "ok", 3, 0);
	dump_load(&d, 0x2000, 0x10, "nonul", 5, 0);
	dump_load(&d, 0x3000, 0x10, "after", 6, 0);
	t = dump_table(&d, &b);
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_RECORD], 1);
	expect_name(t, 0x1000, "ok");
	expect_name(t, 0x3000, NULL);
	jit_table__free(t);
	/* A record shorter than its own prefix. */
	dump_header(&d, 0x4A695444, 1);
	put32(&d, 0);
	put32(&d, 8);
	put64(&d, 0);
	dump_load(&d, 0x3000, 0x10, "after", 6, 0);
	jit_table__free(dump_table(&d, &b));
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_RECORD], 1);
	/* A long name is cut; a last record past the end waits, uncounted. */
	dump_header(&d, 0x4A695444, 1);
	memset(longname, 'n', sizeof(longname));
	longname[sizeof(longname) - 1] = '\0';
	dump_load(&d, 0x1000, 0x10, longname, sizeof(longname), 0);
	dump_load(&d, 0x3000, 0x10, "cut", 4, 0);
	d.len -= 4;
	t = dump_table(&d, &b);
	cr_expect_eq(b.refused[JIT_REFUSED_NAME_LONG], 1);
	cr_expect_eq(b.refused[JIT_REFUSED_BAD_RECORD], 0);
	cr_expect_eq(strlen(jit_table__lookup(t, 0x1000)), JIT_NAME_MAX - 1);
	expect_name(t, 0x3000, NULL);
	jit_table__free(t);
}

/* The cache on a /proc tree under dir: process 100 runs as uid 0 and is
 * pid 7 in its namespace, its root is dir/100/root. */
static struct proc_mapping anon_map = { .start = 0x10000, .end = 0x20000, .name = "[anon]" };

static void fake_process(int pid, int nspid, unsigned uid)
{
	char sub[64], text[256];

	snprintf(text, sizeof(text), "Name:\tfake\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t%d\t%d\n", uid,
		 uid, uid, uid, pid, nspid);
	snprintf(sub, sizeof(sub), "%d", pid);
	write_under(dir, sub, "status", text);
	snprintf(sub, sizeof(sub), "%d/root", pid);
	write_under(dir, sub, "placeholder", "");
	snprintf(sub, sizeof(sub), "%d/root/tmp", pid);
	write_under(dir, sub, "placeholder", "");
}

static void perf_map_of(int pid, int nspid, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%d/root/tmp/perf-%d.map", dir, pid, nspid);
	write_file(path, text, strlen(text));
}

static struct proc_snapshot snapshot(uint32_t instance, int pid)
{
	return (struct proc_snapshot){ .instance = instance,
				       .pid = pid,
				       .maps = &anon_map,
				       .nmaps = 1 };
}

static const char *name_of(struct jit_cache *c, struct proc_snapshot *s, uint64_t addr,
			   uint64_t now)
{
	const char *n = jit_cache__name(c, s, addr, now);

	return n ? n : "(none)";
}

Test(jit, cache_reads_the_namespace_pid_in_the_root)
{
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_snapshot s = snapshot(1, 100);
	struct jit_stats st;

	cr_assert_not_null(c);
	fake_process(100, 7, 0);
	perf_map_of(100, 7, "10100 100 in_ns\n");
	perf_map_of(100, 100, "10100 100 host_pid\n");
	cr_expect_str_eq(name_of(c, &s, 0x10180, 1), "in_ns");
	/* The same file: not read again. */
	cr_expect_str_eq(name_of(c, &s, 0x10300, 5 * SEC), "(none)");
	jit_cache__stats(c, &st);
	cr_expect_eq(st.reads[JIT_PERF_MAP], 1);
	cr_expect_eq(st.processes, 1);
	cr_expect_gt(st.bytes, 0);
	jit_cache__free(c);
}

/* A grown file is read again, but not before the next check is due; after
 * the process ended its file, kept open, is read once more. */
Test(jit, cache_rereads_changed_files_paced)
{
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_snapshot s = snapshot(1, 100);
	char path[512];
	struct jit_stats st;
	FILE *f;

	fake_process(100, 100, 0);
	perf_map_of(100, 100, "10100 10 one\n");
	cr_expect_str_eq(name_of(c, &s, 0x10100, 10 * SEC), "one");
	perf_map_of(100, 100, "10100 10 one\n10200 10 two\n");
	cr_expect_str_eq(name_of(c, &s, 0x10200, 10 * SEC + 1), "(none)");
	cr_expect_str_eq(name_of(c, &s, 0x10200, 12 * SEC), "two");
	/* Ended: the directory is gone, the open file is not. */
	snprintf(path, sizeof(path), "%s/100/root/tmp/perf-100.map", dir);
	f = fopen(path, "a");
	cr_assert_not_null(f);
	fputs("10300 10 three\n", f);
	fclose(f);
	unlink(path);
	s.ended = true;
	cr_expect_str_eq(name_of(c, &s, 0x10300, 12 * SEC + 2), "three");
	jit_cache__stats(c, &st);
	cr_expect_eq(st.reads[JIT_PERF_MAP], 3);
	jit_cache__free(c);
}

static void cmdline_of(int pid, const char *args, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%d/cmdline", dir, pid);
	write_file(path, args, len);
}

/* A JVM that writes its perf map as it exits: its frames wait for it
 * while it lives, and the map is read after it ended in the /tmp it had,
 * though its /proc entry (and root) went with it. */
Test(jit, cache_reads_the_exit_map_in_the_tmp_it_had)
{
	static const char args[] = "java\0-XX:+DumpPerfMapAtExit\0-cp\0.\0Hot";
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_snapshot s = snapshot(1, 100), other = snapshot(2, 101);
	char from[512], to[512];

	fake_process(100, 7, 0);
	cmdline_of(100, args, sizeof(args));
	fake_process(101, 101, 0);
	cmdline_of(101, "java\0Hot", 9);
	cr_expect_str_eq(name_of(c, &s, 0x10100, 1), "(none)");
	cr_expect(jit_cache__names_at_exit(c, &s), "the flag on its command line");
	cr_expect_str_eq(name_of(c, &other, 0x10100, 1), "(none)");
	cr_expect_not(jit_cache__names_at_exit(c, &other), "no flag, no wait");
	/* It writes the map as it exits; then its /proc entry is gone. */
	perf_map_of(100, 7, "10100 100 at_exit\n");
	snprintf(from, sizeof(from), "%s/100", dir);
	snprintf(to, sizeof(to), "%s/gone", dir);
	cr_assert_eq(rename(from, to), 0);
	s.ended = true;
	cr_expect_not(jit_cache__names_at_exit(c, &s), "ended: nothing more to wait for");
	cr_expect_str_eq(name_of(c, &s, 0x10100, 2), "at_exit");
	jit_cache__free(c);
}

/* WHOLE: every argument ends with its NUL; CUT: the last one does not. */
#define WHOLE(args, on) { args, sizeof(args), on }
#define CUT(args) { args, sizeof(args) - 1, false }

Test(jit, asks_exit_map)
{
	static const struct {
		const char *args;
		size_t len;
		bool on;
	} cases[] = {
		WHOLE("java\0-XX:+DumpPerfMapAtExit\0Hot", true),
		WHOLE("java\0-XX:+DumpPerfMapAtExit\0-XX:-DumpPerfMapAtExit\0Hot", false),
		WHOLE("java\0-XX:-DumpPerfMapAtExit\0-XX:+DumpPerfMapAtExit", true),
		/* the flag inside another argument, or cut at the end */
		WHOLE("sh\0-c\0java -XX:+DumpPerfMapAtExit Hot", false),
		CUT("java\0-XX:+DumpPerfMapAtExit"),
		CUT("java\0-XX:+DumpPerfMapAtExi"),
		CUT(""),
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(jit__asks_exit_map(cases[i].args, cases[i].len), cases[i].on,
			     "case %zu", i);
}

/* A process with JIT code has its files opened as soon as its mappings
 * are read: a short-lived one is named after its /proc entry is gone. One
 * without JIT code costs nothing. */
Test(jit, cache_opens_files_when_mapped)
{
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_mapping file_map = { .start = 0x10000, .end = 0x20000, .name = "/bin/true" };
	struct proc_snapshot s = snapshot(1, 100),
			     plain = { .instance = 2, .pid = 200, .maps = &file_map, .nmaps = 1 };
	char cmd[256];
	struct jit_stats st;

	fake_process(100, 100, 0);
	perf_map_of(100, 100, "10100 10 short_lived\n");
	jit_cache__mapped(c, &s, 1);
	jit_cache__mapped(c, &plain, 1);
	jit_cache__stats(c, &st);
	cr_expect_eq(st.processes, 1);
	cr_expect_eq(st.reads[JIT_PERF_MAP], 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/100", dir);
	cr_assert_eq(system(cmd), 0);
	s.ended = true;
	cr_expect_str_eq(name_of(c, &s, 0x10100, 2), "short_lived");
	jit_cache__free(c);
}

/* A file the process's users do not own, a symlink (to a file that would
 * name the frame), a FIFO: refused and counted, never read. */
Test(jit, cache_refuses_owner_link_fifo)
{
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_snapshot a = snapshot(1, 100), b = snapshot(2, 200), f = snapshot(3, 300);
	char path[512], target[512];
	struct jit_stats st;

	fake_process(100, 100, 4242);
	perf_map_of(100, 100, "10100 10 not_yours\n");
	cr_expect_str_eq(name_of(c, &a, 0x10100, 1), "(none)");
	fake_process(200, 200, 0);
	snprintf(target, sizeof(target), "%s/decoy.map", dir);
	write_file(target, "10100 10 decoy\n", 15);
	snprintf(path, sizeof(path), "%s/200/root/tmp/perf-200.map", dir);
	cr_assert_eq(symlink(target, path), 0);
	cr_expect_str_eq(name_of(c, &b, 0x10100, 1), "(none)");
	fake_process(300, 300, 0);
	snprintf(path, sizeof(path), "%s/300/root/tmp/perf-300.map", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_expect_str_eq(name_of(c, &f, 0x10100, 1), "(none)");
	jit_cache__stats(c, &st);
	cr_expect_eq(st.refused[JIT_REFUSED_OWNER], 1);
	cr_expect_eq(st.reads[JIT_PERF_MAP], 0);
	/* Refused: not tried again for a while. */
	cr_expect_str_eq(name_of(c, &a, 0x10100, 5 * SEC), "(none)");
	jit_cache__stats(c, &st);
	cr_expect_eq(st.refused[JIT_REFUSED_OWNER], 1);
	jit_cache__free(c);
}

/* The jitdump is the file the process maps as jit-<pid>.dump: opened
 * through map_files (here a plain file of the fake tree). */
Test(jit, cache_jitdump_from_the_mappings)
{
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_mapping maps[2] = {
		{ .start = 0x10000, .end = 0x20000, .name = "[anon]" },
		{ .start = 0x30000, .end = 0x31000, .name = "/work/jit-400.dump (deleted)" },
	};
	struct proc_snapshot s = { .instance = 4, .pid = 400, .maps = maps, .nmaps = 2 };
	char path[512];
	struct dump d;

	fake_process(400, 400, 0);
	write_under(dir, "400/map_files", "placeholder", "");
	dump_header(&d, 0x4A695444, 1);
	dump_load(&d, 0x10400, 0x40, "from_dump", 10, 0);
	snprintf(path, sizeof(path), "%s/400/map_files/30000-31000", dir);
	write_file(path, d.buf, d.len);
	cr_expect_str_eq(name_of(c, &s, 0x10410, 1), "from_dump");
	jit_cache__free(c);
}

/* Over the bound, the least recently used other process's tables go;
 * its next unnamed frame reads them again. A table takes at most a
 * quarter of the bound: seven of about 2 KiB overflow 12 KiB once. */
Test(jit, cache_evicts_least_recently_used)
{
	struct jit_cache *c = jit_cache__new(dir, 12 << 10);
	struct proc_snapshot s[7];
	char text[8192], *p = text;
	struct jit_stats st;

	for (int i = 0; i < 40; i++)
		p += sprintf(p, "%x 10 a_symbol_with_a_longish_name_%d\n", 0x10000 + i * 0x10, i);
	for (int i = 0; i < 7; i++) {
		fake_process(100 + i, 100 + i, 0);
		perf_map_of(100 + i, 100 + i, text);
		s[i] = snapshot(1 + (uint32_t)i, 100 + i);
		cr_expect_str_eq(name_of(c, &s[i], 0x10000, 1), "a_symbol_with_a_longish_name_0");
	}
	jit_cache__stats(c, &st);
	cr_expect_eq(st.evictions, 1);
	cr_expect_leq(st.bytes, 12 << 10);
	cr_expect_str_eq(name_of(c, &s[0], 0x10010, 5 * SEC), "a_symbol_with_a_longish_name_1");
	jit_cache__stats(c, &st);
	cr_expect_eq(st.evictions, 2);
	cr_expect_eq(st.reads[JIT_PERF_MAP], 8);
	/* The second process went: the first was read again, then touched. */
	cr_expect_str_eq(name_of(c, &s[1], 0x10010, 5 * SEC), "a_symbol_with_a_longish_name_1");
	jit_cache__stats(c, &st);
	cr_expect_eq(st.reads[JIT_PERF_MAP], 9);
	jit_cache__free(c);
}

/* Entries go with their snapshots. */
Test(jit, cache_forgets_reaped_processes)
{
	struct jit_cache *c = jit_cache__new(dir, 1 << 20);
	struct proc_table *procs = proc_table__new(dir, 64, 4096);
	struct proc_snapshot s = snapshot(9, 100);
	struct jit_stats st;

	cr_assert_not_null(procs);
	fake_process(100, 100, 0);
	perf_map_of(100, 100, "10100 10 one\n");
	cr_expect_str_eq(name_of(c, &s, 0x10100, 1), "one");
	jit_cache__age(c, procs);
	jit_cache__stats(c, &st);
	cr_expect_eq(st.processes, 0);
	cr_expect_eq(st.bytes, 0);
	cr_expect_eq(st.symbols, 0);
	proc_table__free(procs);
	jit_cache__free(c);
}

Test(jit, code_mappings)
{
	struct binary bin = { .fd = -1 };
	struct proc_mapping m[] = {
		{ .name = "[anon]" },
		{ .name = "[anon:v8 code]" },
		{ .name = "/memfd:doublemapper (deleted)", .bin = &bin },
		{ .name = "/usr/bin/node", .bin = &bin },
		{ .name = "[vdso]" },
		{ .name = "[heap]" },
	};

	cr_expect(jit__code_mapping(&m[0]));
	cr_expect(jit__code_mapping(&m[1]));
	cr_expect(jit__code_mapping(&m[2]));
	cr_expect(!jit__code_mapping(&m[3]));
	cr_expect(!jit__code_mapping(&m[4]));
	cr_expect(!jit__code_mapping(&m[5]));
}
