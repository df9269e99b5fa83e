/* SPDX-License-Identifier: BSD-2-Clause */
/* What the cache file targets (table_cache.c, symtab_cache.c) do with an
 * input: read it as it is, under the key it names (key_len is a u32 at
 * key_len_off, the key follows the header), then once more with fix()
 * making the fields a reader refuses first right (format, fingerprint)
 * and its trailing CRC-32 recomputed, so the checks behind those see
 * mutated files too. */
#ifndef KILN_TESTS_FUZZ_CACHE_FILE_H
#define KILN_TESTS_FUZZ_CACHE_FILE_H

#include <string.h>
#include <zlib.h>

#include "fuzz.h"

struct cache_file_target {
	size_t header, key_len_off, key_max;
	void (*fix)(uint8_t *file);
	void (*check)(const uint8_t *data, size_t size, const char *key);
};

static inline void cache_file_input(const struct cache_file_target *t, const uint8_t *data,
				    size_t size)
{
	char *key = calloc(1, t->key_max + 1);
	uint32_t klen = 0, crc;
	uint8_t *fixed;

	FUZZ_CHECK(key != NULL);
	if (size >= t->header) {
		memcpy(&klen, data + t->key_len_off, sizeof(klen));
		if (klen <= t->key_max && t->header + (size_t)klen <= size)
			memcpy(key, data + t->header, klen);
	}
	t->check(data, size, key);
	if (size >= t->header + sizeof(crc)) {
		fixed = malloc(size);
		FUZZ_CHECK(fixed != NULL);
		memcpy(fixed, data, size);
		t->fix(fixed);
		crc = (uint32_t)crc32_z(crc32_z(0, NULL, 0), fixed, size - sizeof(crc));
		memcpy(fixed + size - sizeof(crc), &crc, sizeof(crc));
		t->check(fixed, size, key);
		free(fixed);
	}
	free(key);
}

#endif
