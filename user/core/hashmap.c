/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>

#include "core/hashmap.h"

#define MIN_CAP 16

static size_t slot_of(uint64_t hash, size_t cap)
{
	/* Fibonacci hashing spreads sequential ids and inode numbers too,
	 * which are their own hash. */
	return (size_t)((hash * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static uint64_t stored(uint64_t hash)
{
	return hash ? hash : 1;
}

/* The slot of key's entry, or of the empty slot ending its probe run. */
static size_t find(const struct hashmap *m, uint64_t h, hashmap_eq_fn eq, const void *ctx,
		   const void *key)
{
	size_t mask = m->cap - 1, i = slot_of(h, m->cap);

	for (; m->slots[i].hash; i = (i + 1) & mask)
		if (m->slots[i].hash == h && (!eq || eq(ctx, m->slots[i].val, key)))
			break;
	return i;
}

void *hashmap__get(const struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *ctx,
		   const void *key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = find(m, stored(hash), eq, ctx, key);
	return m->slots[i].hash ? m->slots[i].val : NULL;
}

/* Stores a slot in the first free position of its probe run. */
static void place(struct hashmap_slot *slots, size_t cap, struct hashmap_slot s)
{
	size_t i = slot_of(s.hash, cap);

	while (slots[i].hash)
		i = (i + 1) & (cap - 1);
	slots[i] = s;
}

/* Room for one more entry. 0 or -ENOMEM (m unchanged). */
static int reserve_one(struct hashmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : MIN_CAP;
	struct hashmap_slot *slots;

	if ((m->len + 1) * 4 <= m->cap * 3)
		return 0;
	if (cap > SIZE_MAX / 2 / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].hash)
			place(slots, cap, m->slots[i]);
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

int hashmap__put(struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *ctx,
		 const void *key, void *val)
{
	uint64_t h = stored(hash);
	size_t i;

	if (!hash && !eq)
		return -EINVAL;
	if (m->cap) {
		i = find(m, h, eq, ctx, key);
		if (m->slots[i].hash) {
			m->slots[i].val = val;
			return 0;
		}
	}
	return hashmap__add(m, h, val);
}

int hashmap__add(struct hashmap *m, uint64_t hash, void *val)
{
	if (reserve_one(m))
		return -ENOMEM;
	place(m->slots, m->cap, (struct hashmap_slot){ stored(hash), val });
	m->len++;
	return 0;
}

void *hashmap__del(struct hashmap *m, uint64_t hash, hashmap_eq_fn eq, const void *ctx,
		   const void *key)
{
	size_t i, j, mask;
	void *val;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	i = find(m, stored(hash), eq, ctx, key);
	if (!m->slots[i].hash)
		return NULL;
	val = m->slots[i].val;
	/* Backward shift: move later members of the probe run into the hole
	 * unless their home slot lies cyclically in (i, j]. */
	for (j = (i + 1) & mask; m->slots[j].hash; j = (j + 1) & mask) {
		size_t home = slot_of(m->slots[j].hash, m->cap);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i] = (struct hashmap_slot){ 0 };
	m->len--;
	return val;
}

void hashmap__each(const struct hashmap *m, void (*fn)(uint64_t hash, void *val, void *ctx),
		   void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].hash)
			fn(m->slots[i].hash, m->slots[i].val, ctx);
}

size_t hashmap__bytes(const struct hashmap *m)
{
	return m->cap * sizeof(*m->slots);
}

void hashmap__clear(struct hashmap *m)
{
	free(m->slots);
	*m = (struct hashmap){ 0 };
}

bool hashmap__idx_eq(const void *ctx, const void *val, const void *key)
{
	const struct hashmap_idx_eq *e = ctx;

	return e->eq(e->ctx, (uint32_t)((uintptr_t)val - 1), key);
}
