/* SPDX-License-Identifier: BSD-2-Clause */
/* The on-disk unwind table cache (unwind/table_cache.h): the file format
 * read back exactly, and refused when truncated, corrupted, lying about
 * its counts, of another version or key; the directory kiln's alone; a
 * bad file deleted and counted; a table built without a debug file stale
 * once one appears; the size bound kept by deleting the least recently
 * used files. Tables are real ones (python3.11, libc, small binaries). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/elf.h"
#include "core/safe_open.h"
#include "unit_helpers.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_table.h"

#define PYTHON "/usr/bin/python3.11"
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define KEY "f:1:2:3:4.000000005 b:abcdef"

/* Field offsets in the header (table_cache.c's struct header). */
#define OFF_FORMAT 8
#define OFF_KEYLEN 20
#define OFF_BUILDER 24
#define OFF_NROWS 32
#define OFF_NRULES 36
#define OFF_MACHINE 50
#define HEADER 296

/* Removes dir and everything under it. */
static void rm_rf(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static int open_file(const char *path)
{
	int fd = safe_open__in("", path, ELF_FILE_MAX, NULL);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(-fd));
	return fd;
}

static struct unwind_table *build(const char *path)
{
	int fd = open_file(path);
	struct unwind_table *t = unwind_table__build(fd, "", path, NULL);

	cr_assert_not_null(t, "%s: no table", path);
	close(fd);
	return t;
}

static void same_table(const struct unwind_table *a, const struct unwind_table *b)
{
	size_t na, nb, ra, rb;
	const struct kiln_unwind_row *x = unwind_table__rows(a, &na),
				     *y = unwind_table__rows(b, &nb);
	const struct kiln_unwind_rule *p = unwind_table__rules(a, &ra),
				      *q = unwind_table__rules(b, &rb);
	struct unwind_table_info ia, ib;

	cr_assert_eq(na, nb);
	cr_assert_eq(ra, rb);
	cr_assert_eq(memcmp(x, y, na * sizeof(*x)), 0);
	cr_assert_eq(memcmp(p, q, ra * sizeof(*p)), 0);
	unwind_table__info(a, &ia);
	unwind_table__info(b, &ib);
	cr_assert_eq(ia.base, ib.base);
	cr_assert_eq(ia.nsegs, ib.nsegs);
	cr_assert_eq(memcmp(ia.segs, ib.segs, sizeof(ia.segs)), 0);
	cr_assert_str_eq(ia.debug_source, ib.debug_source);
	cr_assert_eq(ia.debug_lookup, ib.debug_lookup);
	cr_assert_eq(ia.fdes_eh, ib.fdes_eh);
	cr_assert_eq(ia.invalid_rows, ib.invalid_rows);
}

static void put_u32(uint8_t *buf, size_t off, uint32_t v)
{
	memcpy(buf + off, &v, sizeof(v));
}

/* The trailing CRC made right again after an edit: only the checks after
 * it can refuse the file. */
static void fix_crc(uint8_t *buf, size_t len)
{
	uint32_t crc = (uint32_t)crc32_z(crc32_z(0, NULL, 0), buf, len - 4);

	memcpy(buf + len - 4, &crc, 4);
}

static int decode(const uint8_t *buf, size_t len)
{
	struct unwind_table *t = NULL;
	int err = table_cache__decode(buf, len, KEY, NULL, &t);

	cr_assert_eq(!err, t != NULL);
	unwind_table__free(t);
	return err;
}

Test(table_cache, format_round_trip)
{
	struct unwind_table *t = build(PYTHON), *back = NULL;
	uint8_t *buf;
	size_t len, nrows, nrules;

	cr_assert_eq(table_cache__encode(t, KEY, &buf, &len), 0);
	unwind_table__rows(t, &nrows);
	unwind_table__rules(t, &nrules);
	cr_assert_eq(len, HEADER + strlen(KEY) + nrows * 8 + nrules * 16 + 4);
	cr_assert_eq(table_cache__decode(buf, len, KEY, NULL, &back), 0);
	same_table(t, back);
	unwind_table__free(back);
	/* Another key (a hash collision): a miss, not corruption. */
	cr_assert_eq(table_cache__decode(buf, len, "f:1:2:3:4.000000005 b:", NULL, &back), -ENOENT);
	cr_assert_null(back);
	/* More rows than the reader's bound: not used. */
	{
		struct unwind_limits lim = unwind_default_limits;

		lim.max_rows = (uint32_t)nrows - 1;
		cr_assert_eq(table_cache__decode(buf, len, KEY, &lim, &back), -E2BIG);
	}
	free(buf);
	unwind_table__free(t);
}

Test(table_cache, truncated_and_corrupt)
{
	struct unwind_table *t = build(LIBC);
	uint8_t *buf, *copy;
	size_t len;

	cr_assert_eq(table_cache__encode(t, KEY, &buf, &len), 0);
	copy = malloc(len);
	cr_assert_not_null(copy);
	/* Cut anywhere: the header, the key, rows, rules, the checksum. */
	for (size_t cut = 0; cut < len; cut += cut < HEADER + 64 ? 1 : 4093)
		cr_assert_eq(decode(buf, cut), -EBADMSG, "cut at %zu of %zu", cut, len);
	cr_assert_eq(decode(buf, len - 1), -EBADMSG);
	/* One byte flipped anywhere: refused (version fields say ESTALE). */
	for (size_t at = 0; at < len; at += at < HEADER + 64 ? 1 : 997) {
		int err;

		memcpy(copy, buf, len);
		copy[at] ^= 0x5a;
		err = decode(copy, len);
		cr_assert(err == -EBADMSG || err == -ESTALE, "byte %zu flipped: %d", at, err);
	}
	memcpy(copy, buf, len);
	copy[len - 1] ^= 1;
	cr_assert_eq(decode(copy, len), -EBADMSG);
	cr_assert_eq(decode(buf, len), 0);
	free(copy);
	free(buf);
	unwind_table__free(t);
}

Test(table_cache, lying_counts_and_rows)
{
	struct unwind_table *t = build(LIBC);
	uint8_t *buf, *copy;
	size_t len, nrows, nrules;
	const size_t rows_at = HEADER + strlen(KEY);
	struct kiln_unwind_row row;
	uint32_t lies[] = { UINT32_MAX, UNWIND_ROWS_MAX + 1, UNWIND_ROWS_MAX, 0, 1 };

	unwind_table__rows(t, &nrows);
	unwind_table__rules(t, &nrules);
	cr_assert_eq(table_cache__encode(t, KEY, &buf, &len), 0);
	copy = malloc(len);
	cr_assert_not_null(copy);
	/* Counts that do not add up to the size, with a good checksum: refused
	 * before anything is allocated for them. */
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		memcpy(copy, buf, len);
		put_u32(copy, OFF_NROWS, lies[i]);
		fix_crc(copy, len);
		cr_assert_eq(decode(copy, len), -EBADMSG, "nrows %u", lies[i]);
		memcpy(copy, buf, len);
		put_u32(copy, OFF_NRULES, lies[i]);
		fix_crc(copy, len);
		cr_assert_eq(decode(copy, len), -EBADMSG, "nrules %u", lies[i]);
		memcpy(copy, buf, len);
		put_u32(copy, OFF_KEYLEN, lies[i]);
		fix_crc(copy, len);
		cr_assert_eq(decode(copy, len), -EBADMSG, "key_len %u", lies[i]);
	}
	/* Counts that add up but rows the walker must not get: unsorted, a
	 * rule index past the rules, an unknown command, no INVALID last. */
	memcpy(copy, buf, len);
	memcpy(copy + rows_at, buf + rows_at + 8, 8);
	memcpy(copy + rows_at + 8, buf + rows_at, 8);
	fix_crc(copy, len);
	cr_assert_eq(decode(copy, len), -EBADMSG);
	for (size_t i = 0; i < nrows; i++) {
		memcpy(&row, buf + rows_at + i * 8, 8);
		if (row.rule & KILN_UNWIND_CMD)
			continue;
		memcpy(copy, buf, len);
		row.rule = (uint16_t)nrules;
		memcpy(copy + rows_at + i * 8, &row, 8);
		fix_crc(copy, len);
		cr_assert_eq(decode(copy, len), -EBADMSG);
		memcpy(copy, buf, len);
		row.rule = KILN_UNWIND_CMD | 0x7f;
		memcpy(copy + rows_at + i * 8, &row, 8);
		fix_crc(copy, len);
		cr_assert_eq(decode(copy, len), -EBADMSG);
		break;
	}
	memcpy(copy, buf, len);
	memcpy(&row, buf + rows_at + (nrows - 1) * 8, 8);
	row.rule = KILN_UNWIND_CMD | KILN_CMD_STOP;
	memcpy(copy + rows_at + (nrows - 1) * 8, &row, 8);
	fix_crc(copy, len);
	cr_assert_eq(decode(copy, len), -EBADMSG);
	/* A machine the walker does not know, and one it knows but the
	 * reader did not ask for. */
	memcpy(copy, buf, len);
	copy[OFF_MACHINE] = EM_ARM;
	fix_crc(copy, len);
	cr_assert_eq(decode(copy, len), -EBADMSG);
	{
		struct unwind_limits arm64 = unwind_default_limits;
		struct unwind_table *other = NULL;

		arm64.machine = EM_AARCH64;
		cr_assert_eq(table_cache__decode(buf, len, KEY, &arm64, &other), -EBADMSG);
		cr_assert_null(other);
	}
	/* A rule with a register the walker does not know. */
	memcpy(copy, buf, len);
	copy[rows_at + nrows * 8] = 9;
	fix_crc(copy, len);
	cr_assert_eq(decode(copy, len), -EBADMSG);
	free(copy);
	free(buf);
	unwind_table__free(t);
}

Test(table_cache, other_versions_are_stale)
{
	struct unwind_table *t = build(LIBC);
	uint8_t *buf;
	size_t len;
	uint64_t builder;

	cr_assert_eq(table_cache__encode(t, KEY, &buf, &len), 0);
	put_u32(buf, OFF_FORMAT, 1);
	fix_crc(buf, len);
	cr_assert_eq(decode(buf, len), -ESTALE);
	put_u32(buf, OFF_FORMAT, 2);
	memcpy(&builder, buf + OFF_BUILDER, 8);
	builder ^= 1;
	memcpy(buf + OFF_BUILDER, &builder, 8);
	fix_crc(buf, len);
	cr_assert_eq(decode(buf, len), -ESTALE);
	builder ^= 1;
	memcpy(buf + OFF_BUILDER, &builder, 8);
	fix_crc(buf, len);
	cr_assert_eq(decode(buf, len), 0);
	memcpy(buf, "KILNUWT\r", 8);
	fix_crc(buf, len);
	cr_assert_eq(decode(buf, len), -EBADMSG);
	free(buf);
	unwind_table__free(t);
}

/* The one cache file in dir (there must be exactly one). */
static void only_file(const char *dir, char *path, size_t len)
{
	char cmd[256];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls %s/*.uwt", dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(path, (int)len, f));
	path[strcspn(path, "\n")] = '\0';
	cr_assert_null(fgets(cmd, sizeof(cmd), f), "more than one cache file");
	pclose(f);
}

Test(table_cache, directory_get_put_and_bad_files)
{
	char d[128], dir[160], file[256];
	struct table_cache_stats st;
	struct table_cache *c;
	struct unwind_table *t = build(PYTHON), *back;
	int fd = open_file(PYTHON), w;

	temp_dir(d, sizeof(d), "tcache");
	snprintf(dir, sizeof(dir), "%s/sub/kiln", d); /* parent made too */
	c = table_cache__open(dir, 64 << 20, false, false);
	cr_assert_not_null(c);
	cr_assert_str_eq(table_cache__dir(c), dir);
	cr_assert_null(table_cache__get(c, fd, "", PYTHON, NULL));
	table_cache__put(c, fd, t);
	back = table_cache__get(c, fd, "", PYTHON, NULL);
	cr_assert_not_null(back);
	same_table(t, back);
	unwind_table__free(back);
	table_cache__stats(c, &st);
	cr_assert_eq(st.hits, 1);
	cr_assert_eq(st.misses, 1);
	cr_assert_eq(st.writes, 1);
	cr_assert_gt(st.bytes, 0);
	only_file(dir, file, sizeof(file));
	{
		struct stat sb;

		cr_assert_eq(stat(dir, &sb), 0);
		cr_assert_eq(sb.st_mode & 0777, 0700);
		cr_assert_eq(stat(file, &sb), 0);
		cr_assert_eq(sb.st_mode & 0777, 0600);
	}
	/* A corrupted file: refused, counted, deleted. */
	w = open(file, O_WRONLY);
	cr_assert_geq(w, 0);
	cr_assert_eq(pwrite(w, "X", 1, HEADER + 40), 1);
	close(w);
	cr_assert_null(table_cache__get(c, fd, "", PYTHON, NULL));
	table_cache__stats(c, &st);
	cr_assert_eq(st.refused[TABLE_CACHE_CORRUPT], 1);
	cr_assert_neq(access(file, F_OK), 0, "the corrupt file is still there");
	/* A symlink at the name (to a good copy elsewhere): not followed,
	 * refused, the link deleted and the target left alone. */
	table_cache__put(c, fd, t);
	{
		char elsewhere[256];

		snprintf(elsewhere, sizeof(elsewhere), "%s/good.uwt", d);
		cr_assert_eq(rename(file, elsewhere), 0);
		cr_assert_eq(symlink(elsewhere, file), 0);
		cr_assert_null(table_cache__get(c, fd, "", PYTHON, NULL));
		table_cache__stats(c, &st);
		cr_assert_eq(st.refused[TABLE_CACHE_NOT_OURS], 1);
		cr_assert_neq(access(file, F_OK), 0);
		cr_assert_eq(access(elsewhere, F_OK), 0);
	}
	/* "none" is no cache at all. */
	cr_assert_null(table_cache__open("none", 1 << 20, false, false));
	table_cache__close(c);
	close(fd);
	unwind_table__free(t);
	rm_rf(d);
}

/* The bytes of dir's cache files, as ls counts them. */
static uint64_t dir_bytes(const char *dir)
{
	char cmd[256];
	unsigned long long n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "cat %s/*.uwt | wc -c", dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%llu", &n), 1);
	pclose(f);
	return n;
}

/* Counted at open when asked (the agent), else at the first write
 * (record): a run that only reads never lists the directory; the count
 * then removes a crash's stale temporary file, and is the directory's. */
Test(table_cache, counted_at_open_or_first_write)
{
	char d[128], tmp[192];
	struct table_cache_stats st;
	struct table_cache *c;
	struct unwind_table *libc = build(LIBC), *tru = build("/bin/true"), *back;
	struct timespec old[2] = { { 0, UTIME_OMIT }, { 1, 0 } };
	int fl = open_file(LIBC), ft = open_file("/bin/true"), w;

	temp_dir(d, sizeof(d), "tcache");
	c = table_cache__open(d, 64 << 20, false, false);
	table_cache__put(c, fl, libc);
	table_cache__close(c);
	snprintf(tmp, sizeof(tmp), "%s/.kiln-crash.tmp", d);
	w = open(tmp, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(w, 0);
	close(w);
	cr_assert_eq(utimensat(AT_FDCWD, tmp, old, 0), 0);

	c = table_cache__open(d, 64 << 20, false, false);
	back = table_cache__get(c, fl, "", LIBC, NULL);
	cr_assert_not_null(back);
	unwind_table__free(back);
	table_cache__stats(c, &st);
	cr_assert_eq(st.hits, 1);
	cr_assert(!st.counted, "counted without a write");
	cr_assert_eq(st.bytes, 0);
	cr_assert_eq(access(tmp, F_OK), 0, "the directory was scanned");
	table_cache__put(c, ft, tru);
	table_cache__stats(c, &st);
	cr_assert(st.counted);
	cr_assert_eq(st.bytes, dir_bytes(d), "bytes %llu, on disk %llu",
		     (unsigned long long)st.bytes, (unsigned long long)dir_bytes(d));
	cr_assert_neq(access(tmp, F_OK), 0, "a stale temporary file left");
	table_cache__close(c);

	c = table_cache__open(d, 64 << 20, false, true);
	table_cache__stats(c, &st);
	cr_assert(st.counted);
	cr_assert_eq(st.bytes, dir_bytes(d));
	table_cache__close(c);
	close(fl);
	close(ft);
	unwind_table__free(libc);
	unwind_table__free(tru);
	rm_rf(d);
}

Test(table_cache, directory_of_another_user_is_refused)
{
	char d[128], dir[160];
	struct table_cache_stats st;
	struct table_cache *c;
	struct unwind_table *t = build(LIBC);
	struct stat sb;
	int fd = open_file(LIBC);

	temp_dir(d, sizeof(d), "tcache");
	/* kiln's own but open to others (an emptyDir): closed, then used. */
	cr_assert_eq(chmod(d, 0777), 0);
	c = table_cache__open(d, 64 << 20, true, false);
	cr_assert_not_null(c);
	cr_assert_str_eq(table_cache__dir(c), d);
	cr_assert_eq(stat(d, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0700);
	table_cache__close(c);
	/* Another user's: not used, counted; a symlink to kiln's: not followed. */
	snprintf(dir, sizeof(dir), "%s/other", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	c = table_cache__open(dir, 64 << 20, true, false);
	cr_assert_not_null(c);
	cr_assert_null(table_cache__dir(c));
	table_cache__put(c, fd, t);
	cr_assert_null(table_cache__get(c, fd, "", LIBC, NULL));
	table_cache__stats(c, &st);
	cr_assert_eq(st.refused[TABLE_CACHE_DIR], 1);
	cr_assert_eq(st.writes + st.hits + st.misses, 0);
	table_cache__close(c);
	snprintf(dir, sizeof(dir), "%s/link", d);
	cr_assert_eq(symlink(d, dir), 0);
	c = table_cache__open(dir, 64 << 20, true, false);
	cr_assert_null(table_cache__dir(c));
	table_cache__close(c);
	close(fd);
	unwind_table__free(t);
	rm_rf(d);
}

/* Small binaries of the host, for tables of a few KB each. */
static const char *const small[] = { "/bin/true", "/bin/echo", "/bin/cat",  "/bin/head",
				     "/bin/wc",	  "/bin/tail", "/bin/date", "/bin/dd" };
#define NSMALL (sizeof(small) / sizeof(small[0]))

static uint64_t file_size(const struct unwind_table *t)
{
	uint8_t *buf;
	size_t len;

	cr_assert_eq(table_cache__encode(t, KEY, &buf, &len), 0);
	free(buf);
	return len + 64; /* a longer key than KEY */
}

Test(table_cache, eviction_keeps_the_bound_least_recently_used_first)
{
	struct unwind_table *t[NSMALL];
	struct table_cache_stats st;
	struct table_cache *c;
	uint64_t largest = 0, sum = 0;
	size_t big = 0;
	int fd[NSMALL];
	char d[128];

	for (size_t i = 0; i < NSMALL; i++) {
		uint64_t n;

		t[i] = build(small[i]);
		fd[i] = open_file(small[i]);
		n = file_size(t[i]);
		if (n > largest) {
			largest = n;
			big = i;
		}
		sum += n;
	}
	temp_dir(d, sizeof(d), "tcache");
	/* Room for about four: each fits (a quarter at most), all do not. */
	cr_assert_gt(sum, 4 * largest);
	c = table_cache__open(d, 4 * largest, false, false);
	cr_assert_not_null(c);
	table_cache__put(c, fd[0], t[0]);
	table_cache__put(c, fd[1], t[1]);
	/* The first is used again: the second is now the oldest. */
	unwind_table__free(table_cache__get(c, fd[0], "", small[0], NULL));
	for (size_t i = 2; i < NSMALL; i++)
		table_cache__put(c, fd[i], t[i]);
	table_cache__stats(c, &st);
	cr_assert_eq(st.writes, NSMALL);
	cr_assert_gt(st.evictions, 0);
	cr_assert_leq(st.bytes, 4 * largest);
	{
		struct unwind_table *second = table_cache__get(c, fd[1], "", small[1], NULL);
		struct unwind_table *last =
			table_cache__get(c, fd[NSMALL - 1], "", small[NSMALL - 1], NULL);

		cr_assert_null(second, "the least recently used table was kept");
		cr_assert_not_null(last, "the newest table was evicted");
		unwind_table__free(last);
	}
	/* A table over a quarter of the bound is not written. */
	table_cache__close(c);
	rm_rf(d);
	cr_assert_eq(mkdir(d, 0700), 0);
	c = table_cache__open(d, largest * 2, false, false);
	table_cache__put(c, fd[big], t[big]);
	table_cache__stats(c, &st);
	cr_assert_eq(st.refused[TABLE_CACHE_TOO_LARGE], 1);
	table_cache__close(c);
	for (size_t i = 0; i < NSMALL; i++) {
		close(fd[i]);
		unwind_table__free(t[i]);
	}
	rm_rf(d);
}

/* A library whose a.c has .eh_frame and whose b.c has .debug_frame only,
 * stripped of it: its table covers a.c until the debug file (found by
 * build id under the root) appears. */
Test(table_cache, stale_once_a_debug_file_appears)
{
	char d[128], root[160], so[256], dbg[300], cmd[2048];
	struct table_cache_stats st;
	struct table_cache *c;
	struct unwind_table *t, *again;
	struct unwind_table_info in;
	char id[2 * ELF_BUILD_ID_MAX + 1];
	int fd;

	temp_dir(d, sizeof(d), "tcache");
	snprintf(root, sizeof(root), "%s/root", d);
	snprintf(so, sizeof(so), "%s/lib/libx.so", root);
	snprintf(
		cmd, sizeof(cmd),
		"set -e; cd %s; mkdir -p root/lib; "
		"echo 'long a(long x) { return x * 3 + 1; }' > a.c; "
		"echo 'long b(long x) { long s = 0; for (long i = 0; i < x; i++) s += i; return s; }' > b.c; "
		"gcc -O2 -fPIC -c a.c -o a.o; "
		"gcc -O2 -g -fPIC -fno-asynchronous-unwind-tables -fno-exceptions -c b.c -o b.o; "
		"gcc -shared -Wl,--build-id -o full.so a.o b.o; "
		"objcopy --only-keep-debug full.so x.debug; "
		"strip --strip-debug full.so -o %s",
		d, so);
	cr_assert_eq(system(cmd), 0);
	fd = open_file(so);
	cr_assert_eq(elf__build_id(fd, id, sizeof(id)), 0);
	t = unwind_table__build(fd, root, "/lib/libx.so", NULL);
	cr_assert_not_null(t);
	unwind_table__info(t, &in);
	cr_assert_eq(in.debug_lookup, UNWIND_DEBUG_NOT_FOUND);
	snprintf(dbg, sizeof(dbg), "%s/cache", d);
	c = table_cache__open(dbg, 64 << 20, false, false);
	table_cache__put(c, fd, t);
	again = table_cache__get(c, fd, root, "/lib/libx.so", NULL);
	cr_assert_not_null(again);
	unwind_table__free(again);
	/* The debug file appears under the root, by build id. */
	snprintf(
		cmd, sizeof(cmd),
		"mkdir -p %s/usr/lib/debug/.build-id/%.2s && cp %s/x.debug %s/usr/lib/debug/.build-id/%.2s/%s.debug",
		root, id, d, root, id, id + 2);
	cr_assert_eq(system(cmd), 0);
	cr_assert_null(table_cache__get(c, fd, root, "/lib/libx.so", NULL));
	table_cache__stats(c, &st);
	cr_assert_eq(st.refused[TABLE_CACHE_STALE], 1);
	/* Built again, with the debug file: not cached (it depends on it). */
	unwind_table__free(t);
	t = unwind_table__build(fd, root, "/lib/libx.so", NULL);
	cr_assert_not_null(t);
	unwind_table__info(t, &in);
	cr_assert_eq(in.debug_lookup, UNWIND_DEBUG_FOUND);
	cr_assert_str_eq(in.debug_source, "debug-file");
	table_cache__put(c, fd, t);
	table_cache__stats(c, &st);
	cr_assert_eq(st.refused[TABLE_CACHE_DEBUG_FILE], 1);
	cr_assert_eq(st.writes, 1);
	table_cache__close(c);
	unwind_table__free(t);
	close(fd);
	rm_rf(d);
}
