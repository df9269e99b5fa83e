// SPDX-License-Identifier: BSD-2-Clause
/* Linear probing over a power-of-two slot array; the stored 32-bit hash
 * both rejects most mismatches without calling eq and lets the table grow
 * without rehashing the keys. */
#include <errno.h>
#include <stdlib.h>

#include "profile/idxhash.h"

static inline uint64_t slot_make(uint32_t hash, uint32_t idx)
{
	return (uint64_t)hash << 32 | ((uint64_t)idx + 1);
}

static inline uint32_t slot_hash(uint64_t slot)
{
	return slot >> 32;
}

static inline uint32_t slot_idx(uint64_t slot)
{
	return (uint32_t)slot - 1;
}

/* Stores slot into the first free position of its probe sequence. */
static void slots_put(uint64_t *slots, size_t cap, uint64_t slot)
{
	size_t i = slot_hash(slot) & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = slot;
}

uint32_t idxhash__find(const struct idxhash *h, uint64_t hash,
		       idxhash_eq_fn eq, const void *ctx, const void *key)
{
	uint32_t h32 = (uint32_t)hash;
	size_t i;

	if (!h->cap)
		return IDXHASH_NONE;
	for (i = h32 & (h->cap - 1); h->slots[i]; i = (i + 1) & (h->cap - 1)) {
		uint64_t s = h->slots[i];

		if (slot_hash(s) == h32 && eq(ctx, slot_idx(s), key))
			return slot_idx(s);
	}
	return IDXHASH_NONE;
}

static int idxhash_grow(struct idxhash *h)
{
	size_t ncap = h->cap ? h->cap * 2 : 16, i;
	uint64_t *n;

	if (ncap > SIZE_MAX / 2 / sizeof(*n))
		return -ENOMEM;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (i = 0; i < h->cap; i++)
		if (h->slots[i])
			slots_put(n, ncap, h->slots[i]);
	free(h->slots);
	h->slots = n;
	h->cap = ncap;
	return 0;
}

int idxhash__add(struct idxhash *h, uint64_t hash, uint32_t idx)
{
	int err;

	if ((h->len + 1) * 2 > h->cap) {
		err = idxhash_grow(h);
		if (err)
			return err;
	}
	slots_put(h->slots, h->cap, slot_make((uint32_t)hash, idx));
	h->len++;
	return 0;
}

size_t idxhash__bytes(const struct idxhash *h)
{
	return h->cap * sizeof(*h->slots);
}

void idxhash__release(struct idxhash *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = 0;
	h->len = 0;
}
