// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>

#include "core/u64map.h"

static size_t slot_of(uint64_t key, size_t cap)
{
	/* Fibonacci hashing spreads sequential ids and inode numbers. */
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

void *u64map__get(const struct u64map *m, uint64_t key)
{
	if (!m->cap || !key)
		return NULL;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (!m->keys[i])
			return NULL;
	}
}

static int grow(struct u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));
	struct u64map old = *m;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	m->len = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			u64map__put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
	return 0;
}

int u64map__put(struct u64map *m, uint64_t key, void *val)
{
	size_t i;

	if (!key)
		return -EINVAL;
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m))
		return -ENOMEM;
	for (i = slot_of(key, m->cap); m->keys[i] && m->keys[i] != key;
	     i = (i + 1) & (m->cap - 1))
		;
	if (!m->keys[i])
		m->len++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

void *u64map__del(struct u64map *m, uint64_t key)
{
	size_t i, j, mask = m->cap - 1;
	void *val;

	if (!m->cap || !key)
		return NULL;
	for (i = slot_of(key, m->cap); m->keys[i] != key; i = (i + 1) & mask)
		if (!m->keys[i])
			return NULL;
	val = m->vals[i];
	/* Shift back later members of the probe run into the hole. */
	for (j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
		size_t home = slot_of(m->keys[j], m->cap);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->vals[i] = NULL;
	m->len--;
	return val;
}

void u64map__each(const struct u64map *m, void (*fn)(uint64_t key, void *val, void *ctx),
		  void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			fn(m->keys[i], m->vals[i], ctx);
}

void u64map__clear(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->len = 0;
}
