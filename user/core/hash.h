/* SPDX-License-Identifier: BSD-2-Clause */
/* The one string hash of kiln, and the 64-bit mixing that goes with it.
 *
 * hash__bytes is FNV-1a over the bytes followed by a bijective 64-bit
 * finalizer, so every input bit reaches every output bit and any slice of
 * the result (the low bits a table uses, the high bits Fibonacci hashing
 * uses) is well spread. Not keyed: use it for tables whose worst case a
 * hostile input cannot make much worse than linear (every table in kiln is
 * bounded), never as a digest. */
#ifndef KILN_CORE_HASH_H
#define KILN_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A bijective finalizer (MurmurHash3's fmix64). */
static inline uint64_t hash__mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Folds v into the running hash h. */
static inline uint64_t hash__add(uint64_t h, uint64_t v)
{
	return hash__mix(h * 0x9e3779b97f4a7c15ULL ^ v);
}

/* FNV-1a over s[0..n), then mixed. */
static inline uint64_t hash__bytes(const void *s, size_t n)
{
	const unsigned char *p = s;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return hash__mix(h);
}

/* hash__bytes of a NUL-terminated string, without the NUL. */
static inline uint64_t hash__str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return hash__mix(h);
}

/* s[0..n) eight bytes a step, then mixed: for tables kept in memory only
 * (a profile's strings, hashed for every frame of every stack at every
 * drain), about a sixth of hash__bytes' work on a symbol's name. Nothing
 * kept on disk uses it, so it may change between versions. */
static inline uint64_t hash__chunks(const void *s, size_t n)
{
	const unsigned char *p = s;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, n);
	return hash__mix(h ^ w);
}

#endif
