/* SPDX-License-Identifier: BSD-2-Clause */
/* A hash map from non-zero uint64_t keys to pointers: open addressing,
 * linear probing, backward-shift deletion. The map owns no values. */
#ifndef KILN_CORE_U64MAP_H
#define KILN_CORE_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;         /* 0 = empty slot */
	void **vals;
	size_t cap, len;        /* cap: power of two */
};

void *u64map__get(const struct u64map *m, uint64_t key);
/* Inserts or replaces. 0 or -ENOMEM (key 0 is -EINVAL). */
int u64map__put(struct u64map *m, uint64_t key, void *val);
/* Removes key and returns its value, or NULL. */
void *u64map__del(struct u64map *m, uint64_t key);
/* Calls fn for every entry; fn must not change the map. */
void u64map__each(const struct u64map *m, void (*fn)(uint64_t key, void *val, void *ctx),
		  void *ctx);
void u64map__clear(struct u64map *m);   /* frees the table, not values */

#endif
