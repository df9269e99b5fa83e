/* Symbol cache: lookups, LRU order, the byte bound, stats. Tables come
 * from this process's vDSO (small) and its own executable (large). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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
	symcache__put(c, key, small_table());
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
	cr_assert_eq(symcache__put(c, "b:0011", st), st);
	got = symcache__get(c, "b:0011");
	cr_assert_eq(got, st);
	cr_assert_null(symcache__get(c, "b:0012"));
	cr_assert_null(symcache__get(c, "b:001"));
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

	symcache__put(c, "k:a", small_table());
	symcache__put(c, "k:b", small_table());
	cr_assert_eq(stats(c).entries, 2);
	cr_assert_eq(stats(c).bytes, 2 * e);
	/* a becomes the most recently used: b goes first. */
	cr_assert_not_null(symcache__get(c, "k:a"));
	symcache__put(c, "k:c", small_table());
	cr_assert_null(symcache__get(c, "k:b"));
	cr_assert_not_null(symcache__get(c, "k:c"));
	cr_assert_not_null(symcache__get(c, "k:a"));
	/* Order now a, c: d pushes c out. */
	symcache__put(c, "k:d", small_table());
	cr_assert_null(symcache__get(c, "k:c"));
	cr_assert_not_null(symcache__get(c, "k:a"));
	cr_assert_not_null(symcache__get(c, "k:d"));
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
		symcache__put(c, key, small_table());
	}
	cr_assert_eq(stats(c).entries, 4);
	cr_assert_eq(stats(c).evictions, 0);
	/* Larger than the bound: everything else goes, it stays alone. */
	cr_assert_eq(symcache__put(c, "big", big), big);
	s = stats(c);
	cr_assert_eq(s.entries, 1);
	cr_assert_eq(s.evictions, 4);
	cr_assert_gt(s.bytes, s.max_bytes);
	cr_assert_eq(symcache__get(c, "big"), big);
	/* The next table pushes it out. */
	symcache__put(c, "k:9", small_table());
	s = stats(c);
	cr_assert_eq(s.entries, 1);
	cr_assert_eq(s.evictions, 5);
	cr_assert_eq(s.bytes, e);
	cr_assert_null(symcache__get(c, "big"));
	symcache__free(c);
}

Test(symcache, replace_same_key)
{
	struct symcache *c = symcache__new(1 << 30);
	struct symtab *a = small_table(), *b = big_table();

	symcache__put(c, "i:8:42", a);
	cr_assert_eq(symcache__put(c, "i:8:42", b), b);
	cr_assert_eq(symcache__get(c, "i:8:42"), b);
	cr_assert_eq(stats(c).entries, 1);
	cr_assert_eq(stats(c).evictions, 0);
	/* Putting the cached table again is a no-op. */
	cr_assert_eq(symcache__put(c, "i:8:42", b), b);
	cr_assert_eq(symcache__get(c, "i:8:42"), b);
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
		tabs[i] = symcache__put(c, key, small_table());
		cr_assert_not_null(tabs[i]);
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "b:%08x", i * 2654435761u);
		cr_assert_eq(symcache__get(c, key), tabs[i], "key %s", key);
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
	cr_assert_null(symcache__put(c, "k", NULL));
	cr_assert_eq(errno, EINVAL);
	/* The table is freed on failure (the sanitizer build checks). */
	cr_assert_null(symcache__put(c, NULL, small_table()));
	cr_assert_null(symcache__get(c, NULL));
	cr_assert_null(symcache__get(NULL, "k"));
	symcache__stats(NULL, &s);
	cr_assert_eq(s.entries, 0);
	cr_assert_eq(stats(c).entries, 0);
	symcache__free(c);
	symcache__free(NULL);
}
