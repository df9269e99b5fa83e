/* SPDX-License-Identifier: BSD-2-Clause */
/* The shared machinery of core/: the hash map (u64 keys, keys the caller
 * keeps, intern indexes), the string hash. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"

Test(hashmap, u64_put_get_delete_many)
{
	struct hashmap m = { 0 };

	for (uint64_t k = 1; k <= 5000; k++)
		cr_assert_eq(hashmap__put_u64(&m, k * 4096, (void *)(uintptr_t)k), 0);
	cr_assert_eq(m.len, 5000);
	for (uint64_t k = 1; k <= 5000; k += 2)
		cr_assert_eq((uintptr_t)hashmap__del_u64(&m, k * 4096), k);
	for (uint64_t k = 1; k <= 5000; k++)
		cr_assert_eq((uintptr_t)hashmap__get_u64(&m, k * 4096), k % 2 ? 0 : k);
	cr_assert_eq(m.len, 2500);
	cr_assert_eq(hashmap__put_u64(&m, 0, NULL), -EINVAL);
	hashmap__clear(&m);
}

static bool str_eq(const void *ctx, const void *val, const void *key)
{
	(void)ctx;
	return strcmp(val, key) == 0;
}

/* Every key under one hash: eq alone tells them apart, and deleting from
 * the middle of the probe run keeps the rest reachable. */
Test(hashmap, colliding_hashes_are_told_apart_by_eq)
{
	static char keys[64][16];
	struct hashmap m = { 0 };

	for (unsigned i = 0; i < 64; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%u", i);
		cr_assert_eq(hashmap__put(&m, 42, str_eq, NULL, keys[i], keys[i]), 0);
	}
	cr_assert_eq(m.len, 64);
	/* Replacing keeps one entry. */
	cr_assert_eq(hashmap__put(&m, 42, str_eq, NULL, "k7", keys[7]), 0);
	cr_assert_eq(m.len, 64);
	for (int i = 0; i < 64; i += 3)
		cr_assert_eq(hashmap__del(&m, 42, str_eq, NULL, keys[i]), keys[i]);
	for (int i = 0; i < 64; i++)
		cr_assert_eq(hashmap__get(&m, 42, str_eq, NULL, keys[i]), i % 3 ? keys[i] : NULL,
			     "key %d", i);
	cr_assert_null(hashmap__get(&m, 42, str_eq, NULL, "absent"));
	cr_assert_null(hashmap__del(&m, 42, str_eq, NULL, "absent"));
	/* A hash of 0 is a hash like any other when eq decides. */
	cr_assert_eq(hashmap__put(&m, 0, str_eq, NULL, "zero", "zero"), 0);
	cr_assert_str_eq(hashmap__get(&m, 0, str_eq, NULL, "zero"), "zero");
	hashmap__clear(&m);
	cr_assert_eq(m.len, 0);
	cr_assert_eq(hashmap__bytes(&m), 0);
}

static const char *const words[] = { "alpha", "beta", "gamma", "delta", "epsilon" };

static bool word_eq(const void *ctx, uint32_t idx, const void *key)
{
	const char *const *w = ctx;

	return strcmp(w[idx], key) == 0;
}

Test(hashmap, intern_indexes)
{
	struct hashmap m = { 0 };

	for (uint32_t i = 0; i < 5; i++) {
		cr_assert_eq(hashmap__find_idx(&m, hash__str(words[i]), word_eq, words, words[i]),
			     HASHMAP_NO_INDEX);
		cr_assert_eq(hashmap__add_idx(&m, hash__str(words[i]), i), 0);
	}
	for (uint32_t i = 0; i < 5; i++)
		cr_assert_eq(hashmap__find_idx(&m, hash__str(words[i]), word_eq, words, words[i]), i);
	cr_assert_gt(hashmap__bytes(&m), 0);
	hashmap__clear(&m);
}

Test(hash, bytes_and_str_agree_and_spread)
{
	cr_assert_eq(hash__str("kiln"), hash__bytes("kiln", 4));
	cr_assert_neq(hash__str("kiln"), hash__str("kilm"));
	cr_assert_neq(hash__bytes("a\0b", 3), hash__bytes("a\0c", 3));
	/* FNV-1a of "" is its offset basis; mixed, it is not 0. */
	cr_assert_neq(hash__str(""), 0);
}
