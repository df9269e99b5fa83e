/* SPDX-License-Identifier: BSD-2-Clause */
/* The one hash map of kiln: open addressing, linear probing,
 * backward-shift deletion, at most 3/4 full.
 *
 * A slot holds a 64-bit hash and a value; keys live where the caller keeps
 * them (in the value itself, or in an array the value indexes). A lookup
 * compares the full hash first and calls the caller's eq only on a match,
 * so eq runs about once per hit. With eq NULL the hash alone is the key:
 * maps from non-zero uint64_t ids (the *_u64 helpers) use that, and so may
 * a caller that accepts what a 64-bit hash collision would merge.
 *
 * Zero-initialized is empty; the map owns its slots, never the values.
 * Not thread-safe: the owner serializes. */
#ifndef KILN_CORE_HASHMAP_H
#define KILN_CORE_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	uint64_t hash;          /* 0 = empty (a hash of 0 is stored as 1) */
	void *val;
};

struct hashmap {
	struct hashmap_slot *slots;
	size_t cap, len;        /* cap: 0 or a power of two */
};

/* Whether val (a value in the map) is the entry for key. */
typedef bool (*hashmap_eq_fn)(const void *ctx, const void *val, const void *key);

/* The value under hash that eq says is key's, or NULL. */
void *hashmap__get(const struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *ctx,
		   const void *key);
/* Replaces the value of key's entry, or adds one. 0, -ENOMEM (m
 * unchanged), or -EINVAL for hash 0 without eq. */
int hashmap__put(struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *ctx,
		 const void *key, void *val);
/* Adds val under hash without looking for an equal entry: the caller has
 * just failed to find one. 0 or -ENOMEM (m unchanged). */
int hashmap__add(struct hashmap *m, uint64_t hash, void *val);
/* Removes key's entry and returns its value, or NULL. */
void *hashmap__del(struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *ctx,
		   const void *key);
/* Calls fn for every entry; fn must not change the map. */
void hashmap__each(const struct hashmap *m, void (*fn)(uint64_t hash, void *val, void *ctx),
		   void *ctx);
size_t hashmap__bytes(const struct hashmap *m);
/* Frees the slots, not the values; m is empty and reusable afterwards. */
void hashmap__clear(struct hashmap *m);

/* Maps from non-zero uint64_t keys: the key is its own hash. */
static inline void *hashmap__get_u64(const struct hashmap *m, uint64_t key)
{
	return key ? hashmap__get(m, key, NULL, NULL, NULL) : NULL;
}

static inline int hashmap__put_u64(struct hashmap *m, uint64_t key, void *val)
{
	return hashmap__put(m, key, NULL, NULL, NULL, val);
}

static inline void *hashmap__del_u64(struct hashmap *m, uint64_t key)
{
	return key ? hashmap__del(m, key, NULL, NULL, NULL) : NULL;
}

/* Intern tables, whose entries live in the caller's array: the value is
 * the entry's index + 1, and eq gets the index. */
#define HASHMAP_NO_INDEX UINT32_MAX

typedef bool (*hashmap_idx_eq_fn)(const void *ctx, uint32_t idx, const void *key);

struct hashmap_idx_eq {
	hashmap_idx_eq_fn eq;
	const void *ctx;
};

bool hashmap__idx_eq(const void *ctx, const void *val, const void *key);

/* Index of the entry eq says is key's, or HASHMAP_NO_INDEX. */
static inline uint32_t hashmap__find_idx(const struct hashmap *m, uint64_t hash,
					 hashmap_idx_eq_fn eq, const void *ctx, const void *key)
{
	struct hashmap_idx_eq e = { eq, ctx };
	void *v = hashmap__get(m, hash, hashmap__idx_eq, &e, key);

	return v ? (uint32_t)((uintptr_t)v - 1) : HASHMAP_NO_INDEX;
}

/* Adds idx (< HASHMAP_NO_INDEX) under hash; as hashmap__add. */
static inline int hashmap__add_idx(struct hashmap *m, uint64_t hash, uint32_t idx)
{
	return hashmap__add(m, hash, (void *)((uintptr_t)idx + 1));
}

#endif
