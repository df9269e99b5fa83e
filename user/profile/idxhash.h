/* SPDX-License-Identifier: BSD-2-Clause */
/* An open-addressing hash of uint32 entry indexes. The entries live in the
 * caller's own array; the hash only maps a key's hash to the index, and an
 * equality callback compares the key against the entry. One implementation
 * serves every intern table of the profile module. */
#ifndef KILN_PROFILE_IDXHASH_H
#define KILN_PROFILE_IDXHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDXHASH_NONE UINT32_MAX /* "not found"; never a valid index */

/* Zero-initialized is empty. Slots hold (32-bit hash << 32) | (index + 1),
 * 0 marking a free slot; load stays at or below one half. */
struct idxhash {
	uint64_t *slots;
	size_t cap;             /* 0 or a power of two */
	size_t len;
};

/* Whether entry idx of ctx equals key. */
typedef bool (*idxhash_eq_fn)(const void *ctx, uint32_t idx, const void *key);

/* Index of the entry equal to key under hash, or IDXHASH_NONE. */
uint32_t idxhash__find(const struct idxhash *h, uint64_t hash,
		       idxhash_eq_fn eq, const void *ctx, const void *key);
/* Adds idx (< IDXHASH_NONE) under hash; the caller has checked that no
 * equal entry is present. 0 or -ENOMEM (h unchanged). */
int idxhash__add(struct idxhash *h, uint64_t hash, uint32_t idx);
size_t idxhash__bytes(const struct idxhash *h);
/* Releases the slots; h is empty and reusable afterwards. */
void idxhash__release(struct idxhash *h);

/* A bijective 64-bit finalizer: every input bit affects every output bit,
 * so the low bits used for the slot position are well spread. */
static inline uint64_t hash_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Folds v into the running hash h. */
static inline uint64_t hash_add(uint64_t h, uint64_t v)
{
	return hash_mix(h * 0x9e3779b97f4a7c15ULL ^ v);
}

/* FNV-1a over a NUL-terminated string, then mixed. */
static inline uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return hash_mix(h);
}

#endif
