/* SPDX-License-Identifier: BSD-2-Clause */
/* The names of one symbol table, in the order of its symbols, in blocks of
 * SYM_NAMES_BLOCK names. A table whose names pass SYM_NAMES_DEFLATE_FROM
 * bytes keeps each block deflated: demangled C++ names shrink about six
 * times (node's 78 000 functions: 8.6 MB of names in 1.5 MB). A lookup
 * then inflates the name's block (a few microseconds) and keeps a copy of
 * the name: the table remembers up to SYM_NAMES_CACHED names in
 * SYM_NAMES_CACHE_BYTES, and forgets them all when either is reached (a
 * profile's stacks come back to the same few hundred functions). Smaller
 * tables (a C program, its libc, python3) stay as they are, read without
 * a copy. */
#ifndef KILN_SYMBOLIZE_SYM_NAMES_H
#define KILN_SYMBOLIZE_SYM_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYM_NAMES_BLOCK 16
#define SYM_NAMES_DEFLATE_FROM (256u << 10)
#define SYM_NAMES_CACHED 512
#define SYM_NAMES_CACHE_BYTES (32u << 10)
/* The names a list takes, inflated, against its bound on stored bytes:
 * deflating is work, and a file's names can be one string repeated. */
#define SYM_NAMES_INFLATED_FACTOR 4
/* Bytes of a name, NUL included: sym_names__add cuts longer ones. */
#define SYM_NAMES_NAME_MAX 1024

/* Block b is data[off, next block's off): raw bytes when inflated (its
 * names, each ending in NUL); the entry after the last has off = len. */
struct sym_names_block {
	uint32_t off, raw;
};

struct sym_names_cache;

struct sym_names {
	char *data;
	size_t len;                     /* bytes of data, under UINT32_MAX */
	struct sym_names_block *blocks; /* nblocks + 1, or NULL with no names */
	uint32_t *refs;                 /* count: where each name starts in its block */
	size_t count, nblocks;
	bool deflated;
	uint32_t block_max;             /* the longest block, inflated */
	struct sym_names_cache *cache;  /* deflated: the names lookups read */
};

struct sym_names_builder {
	struct sym_names n;
	size_t max;                     /* bound on len */
	size_t inflated, inflated_max;  /* names' bytes as added, and their bound */
	size_t cap, blocks_cap, refs_cap;
	char *text;                     /* deflated: the names of the block being filled */
	size_t text_len, text_cap;
	void *z;                        /* deflated: the compressor */
};

/* Starts an empty list whose stored bytes may not pass max, nor its
 * names' bytes as added SYM_NAMES_INFLATED_FACTOR times max. */
void sym_names__builder_init(struct sym_names_builder *b, size_t max);
/* Appends len bytes of s and a NUL. 0, -EFBIG past the bound, -ENOMEM. */
int sym_names__add(struct sym_names_builder *b, const char *s, size_t len);
/* Moves what was built to *out (0; -ENOMEM and nothing moved) and
 * releases b either way. */
int sym_names__finish(struct sym_names_builder *b, struct sym_names *out);
void sym_names__builder_release(struct sym_names_builder *b);

/* Name i, valid until the next sym_names__get on n (a deflated table's
 * copies may be forgotten) or its release; NULL when i is out of range or
 * its block cannot be read (no memory, or not what the table says). */
const char *sym_names__get(const struct sym_names *n, size_t i);
/* Heap bytes n holds or may hold (its lookups' copies counted whole). */
size_t sym_names__bytes(const struct sym_names *n);
/* For a list read from a file: data, len, blocks, refs, count, nblocks and
 * deflated set, the rest not. Checks that the blocks lie in order within
 * data, that each name starts inside its block, after the one before,
 * and that a plain block holds exactly its names, each ending in NUL (a
 * deflated one is checked as a lookup inflates it); sets the rest. 0,
 * -EBADMSG or -ENOMEM. */
int sym_names__check(struct sym_names *n);
/* The block count a list of count names has. */
size_t sym_names__nblocks(size_t count);
void sym_names__release(struct sym_names *n);

#endif
