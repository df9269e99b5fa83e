// SPDX-License-Identifier: BSD-2-Clause
/* Symbol cache: lookups, LRU order, the byte bound, expiry of idle tables,
 * stats. Tables come from this process's vDSO (small) and its own
 * executable (large). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symcache.h"

static struct symtab *small_table(void)
{
	unsigned long s = 0, e = 0;
	struct symtab *st;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &s, &e) == 2)
			break;
	fclose(f);
	if (!s)
		cr_skip_test("no vDSO");
	st = symtab__load_mem((const void *)s, e - s);
	cr_assert_not_null(st, "vdso: %s", strerror(errno));
	return st;
}

static struct symtab *big_table(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct symtab *st;

	cr_assert_geq(fd, 0);
	st = symtab__load_fd(fd, "", "/proc/self/exe");
	close(fd);
	cr_assert_not_null(st, "self: %s", strerror(errno));
	return st;
}

/* Bytes one small table costs in a cache under a key of key_len chars. */
static size_t entry_bytes(size_t key_len)
{
	struct symcache *c = symcache__new(SIZE_MAX);
	struct symcache_stats s;
	char key[64];

	cr_assert_lt(key_len, sizeof(key));
	memset(key, 'k', key_len);
	key[key_len] = '\0';
	symcache__put(c, key, small_table(), 0);
	symcache__stats(c, &s);
	symcache__free(c);
	return s.bytes;
}

static struct symcache_stats stats(const struct symcache *c)
{
	struct symcache_stats s;

	symcache__stats(c, &s);
	return s;
}

Test(symcache, put_get_stats)
{
	struct symcache *c = symcache__new(1 << 30);
	struct symtab *st = small_table();
	size_t tb = symtab__bytes(st);
	const struct symtab *got;
	struct symcache_stats s;

	cr_assert_not_null(c);
	cr_assert_eq(symcache__put(c, "b:0011", st, 0), st);
	got = symcache__get(c, "b:0011", 0);
	cr_assert_eq(got, st);
	cr_assert_null(symcache__get(c, "b:0012", 0));
	cr_assert_null(symcache__get(c, "b:001", 0));
	s = stats(c);
	cr_assert_eq(s.hits, 1);
	cr_assert_eq(s.misses, 2);
	cr_assert_eq(s.evictions, 0);
	cr_assert_eq(s.entries, 1);
	cr_assert_eq(s.max_bytes, 1 << 30);
	/* The table, the key, and a little bookkeeping. */
	cr_assert_geq(s.bytes, tb + strlen("b:0011") + 1);
	cr_assert_lt(s.bytes, tb + 256);
	symcache__free(c);
}

Test(symcache, lru_order)
{
	size_t e = entry_bytes(3);
	struct symcache *c = symcache__new(2 * e + e / 2);
	struct symcache_stats s;

	symcache__put(c, "k:a", small_table(), 0);
	symcache__put(c, "k:b", small_table(), 0);
	cr_assert_eq(stats(c).entries, 2);
	cr_assert_eq(stats(c).bytes, 2 * e);
	/* a becomes the most recently used: b goes first. */
	cr_assert_not_null(symcache__get(c, "k:a", 0));
	symcache__put(c, "k:c", small_table(), 0);
	cr_assert_null(symcache__get(c, "k:b", 0));
	cr_assert_not_null(symcache__get(c, "k:c", 0));
	cr_assert_not_null(symcache__get(c, "k:a", 0));
	/* Order now a, c: d pushes c out. */
	symcache__put(c, "k:d", small_table(), 0);
	cr_assert_null(symcache__get(c, "k:c", 0));
	cr_assert_not_null(symcache__get(c, "k:a", 0));
	cr_assert_not_null(symcache__get(c, "k:d", 0));
	s = stats(c);
	cr_assert_eq(s.evictions, 2);
	cr_assert_eq(s.entries, 2);
	cr_assert_eq(s.bytes, 2 * e);
	cr_assert_leq(s.bytes, s.max_bytes);
	symcache__free(c);
}

Test(symcache, eviction_by_bytes)
{
	size_t e = entry_bytes(3);
	struct symcache *c = symcache__new(4 * e + e / 2);
	struct symtab *big = big_table();
	struct symcache_stats s;
	char key[4] = "k:0";

	cr_assert_gt(symtab__bytes(big), 5 * e, "own executable too small a table");
	for (int i = 0; i < 4; i++) {
		key[2] = (char)('0' + i);
		symcache__put(c, key, small_table(), 0);
	}
	cr_assert_eq(stats(c).entries, 4);
	cr_assert_eq(stats(c).evictions, 0);
	/* Larger than the bound: everything else goes, it stays alone. */
	cr_assert_eq(symcache__put(c, "big", big, 0), big);
	s = stats(c);
	cr_assert_eq(s.entries, 1);
	cr_assert_eq(s.evictions, 4);
	cr_assert_gt(s.bytes, s.max_bytes);
	cr_assert_eq(symcache__get(c, "big", 0), big);
	/* The next table pushes it out. */
	symcache__put(c, "k:9", small_table(), 0);
	s = stats(c);
	cr_assert_eq(s.entries, 1);
	cr_assert_eq(s.evictions, 5);
	cr_assert_eq(s.bytes, e);
	cr_assert_null(symcache__get(c, "big", 0));
	symcache__free(c);
}

Test(symcache, replace_same_key)
{
	struct symcache *c = symcache__new(1 << 30);
	struct symtab *a = small_table(), *b = big_table();

	symcache__put(c, "i:8:42", a, 0);
	cr_assert_eq(symcache__put(c, "i:8:42", b, 0), b);
	cr_assert_eq(symcache__get(c, "i:8:42", 0), b);
	cr_assert_eq(stats(c).entries, 1);
	cr_assert_eq(stats(c).evictions, 0);
	/* Putting the cached table again is a no-op. */
	cr_assert_eq(symcache__put(c, "i:8:42", b, 0), b);
	cr_assert_eq(symcache__get(c, "i:8:42", 0), b);
	cr_assert_gt(stats(c).bytes, symtab__bytes(b));
	symcache__free(c);
}

Test(symcache, many_keys)
{
	struct symcache *c = symcache__new(SIZE_MAX);
	const struct symtab *tabs[2000];
	char key[32];

	for (int i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "b:%08x", i * 2654435761u);
		tabs[i] = symcache__put(c, key, small_table(), 0);
		cr_assert_not_null(tabs[i]);
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "b:%08x", i * 2654435761u);
		cr_assert_eq(symcache__get(c, key, 0), tabs[i], "key %s", key);
	}
	cr_assert_eq(stats(c).entries, 2000);
	cr_assert_eq(stats(c).hits, 2000);
	symcache__free(c);
}

Test(symcache, bad_arguments)
{
	struct symcache *c = symcache__new(1000);
	struct symcache_stats s;

	errno = 0;
	cr_assert_null(symcache__put(c, "k", NULL, 0));
	cr_assert_eq(errno, EINVAL);
	/* The table is freed on failure (the sanitizer build checks). */
	cr_assert_null(symcache__put(c, NULL, small_table(), 0));
	cr_assert_null(symcache__get(c, NULL, 0));
	cr_assert_null(symcache__get(NULL, "k", 0));
	symcache__stats(NULL, &s);
	cr_assert_eq(s.entries, 0);
	cr_assert_eq(stats(c).entries, 0);
	symcache__free(c);
	symcache__free(NULL);
}

#define SEC 1000000000ull

/* A function of this executable, found again through a cached table. */
__attribute__((noinline)) void symcache_test_marker(void)
{
	__asm__ volatile("");
}

/* The file offset of addr in this executable, as the agent computes it
 * from /proc/self/maps. */
static uint64_t self_offset(const void *addr)
{
	unsigned long s, e, pgoff;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t off = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %lx", &s, &e, &pgoff) == 3 &&
		    (unsigned long)addr >= s && (unsigned long)addr < e) {
			off = (unsigned long)addr - s + pgoff;
			break;
		}
	fclose(f);
	cr_assert_neq(off, 0, "%p is in no mapping", addr);
	return off;
}

static void expect_marker(const struct symtab *st, uint64_t off)
{
	const struct sym *sym = symtab__lookup(st, off, NULL, &(struct sym){ 0 });

	cr_assert_not_null(sym, "offset 0x%" PRIx64 " not found", off);
	cr_assert_str_eq(sym->name, "symcache_test_marker");
}

Test(symcache, expire_idle_keep_fresh)
{
	size_t e = entry_bytes(3);
	struct symcache *c = symcache__new(SIZE_MAX);
	struct symtab *big = big_table();
	uint64_t off = self_offset((const void *)symcache_test_marker);
	const struct symtab *a, *cc;
	size_t big_bytes;
	struct symcache_stats s;

	expect_marker(big, off);
	symcache__put(c, "big", big, 1 * SEC);
	big_bytes = stats(c).bytes;
	a = symcache__put(c, "k:a", small_table(), 2 * SEC);
	symcache__put(c, "k:b", small_table(), 3 * SEC);
	cc = symcache__put(c, "k:c", small_table(), 5 * SEC);
	/* Used again: a and big are fresh now, b is the oldest. */
	cr_assert_eq(symcache__get(c, "k:a", 6 * SEC), a);
	cr_assert_eq(symcache__get(c, "big", 7 * SEC), big);
	/* At 10 s with 5 s of idleness allowed: b (3 s) goes; c (5 s, idle
	 * exactly 5 s) stays. */
	cr_assert_eq(symcache__expire(c, 10 * SEC, 5 * SEC), 1);
	s = stats(c);
	cr_assert_eq(s.expired, 1);
	cr_assert_eq(s.evictions, 0);
	cr_assert_eq(s.entries, 3);
	cr_assert_eq(s.bytes, big_bytes + 2 * e);
	cr_assert_null(symcache__get(c, "k:b", 10 * SEC));
	/* The tables left are the same, still whole. */
	cr_assert_eq(symcache__get(c, "k:a", 10 * SEC), a);
	cr_assert_eq(symcache__get(c, "k:c", 10 * SEC), cc);
	cr_assert_gt(symtab__count(cc), 0);
	cr_assert_eq(symcache__get(c, "big", 10 * SEC), big);
	expect_marker(big, off);
	/* Nothing is idle now: nothing goes, and the count stays. */
	cr_assert_eq(symcache__expire(c, 11 * SEC, 5 * SEC), 0);
	cr_assert_eq(stats(c).expired, 1);
	symcache__free(c);
}

Test(symcache, expire_follows_last_use)
{
	struct symcache *c = symcache__new(SIZE_MAX);
	struct symtab *big = big_table();
	uint64_t off = self_offset((const void *)symcache_test_marker);
	struct symcache_stats s;

	/* Put first, then only ever found again: the lookups keep it. */
	symcache__put(c, "big", big, 1 * SEC);
	symcache__put(c, "k:x", small_table(), 2 * SEC);
	for (uint64_t t = 100; t <= 1000; t += 100) {
		cr_assert_eq(symcache__get(c, "big", t * SEC), big);
		symcache__expire(c, t * SEC, 60 * SEC);
	}
	s = stats(c);
	cr_assert_eq(s.expired, 1);             /* k:x, at 100 s */
	cr_assert_eq(s.entries, 1);
	expect_marker(symcache__get(c, "big", 1000 * SEC), off);
	/* Putting the cached table again counts as a use too. */
	cr_assert_eq(symcache__put(c, "big", big, 2000 * SEC), big);
	cr_assert_eq(symcache__expire(c, 2050 * SEC, 60 * SEC), 0);
	/* Once unused long enough, everything goes and the cache is empty. */
	cr_assert_eq(symcache__expire(c, 2061 * SEC, 60 * SEC), 1);
	s = stats(c);
	cr_assert_eq(s.expired, 2);
	cr_assert_eq(s.entries, 0);
	cr_assert_eq(s.bytes, 0);
	cr_assert_null(symcache__get(c, "big", 2061 * SEC));
	/* and takes new tables as before. */
	cr_assert_not_null(symcache__put(c, "k:y", small_table(), 2062 * SEC));
	cr_assert_eq(stats(c).entries, 1);
	symcache__free(c);
}

Test(symcache, ttl_zero_never_expires)
{
	struct symcache *c = symcache__new(SIZE_MAX);
	const struct symtab *a = symcache__put(c, "k:a", small_table(), 0);

	symcache__put(c, "k:b", small_table(), 1);
	cr_assert_eq(symcache__expire(c, UINT64_MAX, 0), 0);
	/* Nothing was idle for longer than it has been running either. */
	cr_assert_eq(symcache__expire(c, 5 * SEC, 10 * SEC), 0);
	cr_assert_eq(stats(c).expired, 0);
	cr_assert_eq(stats(c).entries, 2);
	cr_assert_eq(symcache__get(c, "k:a", UINT64_MAX), a);
	cr_assert_eq(symcache__expire(NULL, 10 * SEC, 1), 0);
	symcache__free(c);
}

Test(symcache, evictions_and_expiries_counted_apart)
{
	size_t e = entry_bytes(3);
	struct symcache *c = symcache__new(2 * e + e / 2);
	struct symcache_stats s;

	symcache__put(c, "k:a", small_table(), 1 * SEC);
	symcache__put(c, "k:b", small_table(), 2 * SEC);
	symcache__put(c, "k:c", small_table(), 3 * SEC);        /* a evicted */
	cr_assert_eq(symcache__expire(c, 63 * SEC, 60 * SEC), 1);   /* b */
	s = stats(c);
	cr_assert_eq(s.evictions, 1);
	cr_assert_eq(s.expired, 1);
	cr_assert_eq(s.entries, 1);
	cr_assert_eq(s.bytes, e);
	cr_assert_not_null(symcache__get(c, "k:c", 64 * SEC));
	symcache__free(c);
}

static bool drop_big(const struct symtab *st, void *ctx)
{
	(void)ctx;
	return symtab__count(st) > 100;
}

/* A dropped table is gone for the next get (the caller loads it again);
 * the others stay, in their order. */
Test(symcache, drop_if)
{
	struct symcache *c = symcache__new(SIZE_MAX);
	struct symcache_stats s;

	symcache__put(c, "small1", small_table(), 1);
	symcache__put(c, "big", big_table(), 2);
	symcache__put(c, "small2", small_table(), 3);
	cr_assert_eq(symcache__drop_if(c, drop_big, NULL), 1);
	cr_assert_null(symcache__get(c, "big", 4));
	cr_assert_not_null(symcache__get(c, "small1", 5));
	cr_assert_not_null(symcache__get(c, "small2", 6));
	symcache__stats(c, &s);
	cr_assert_eq(s.entries, 2);
	cr_assert_eq(s.bytes, 2 * entry_bytes(6));
	cr_assert_eq(s.evictions + s.expired, 0);
	cr_assert_eq(symcache__drop_if(c, drop_big, NULL), 0);
	cr_assert_eq(symcache__drop_if(NULL, drop_big, NULL), 0);
	symcache__free(c);
}
