/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbol tables shared by every process mapping the same binary, keyed by
 * what the file is (proc.h: "f:<dev>:<ino>:<size>:<mtime>"), never by the
 * build id it claims (one container could then poison another's names;
 * only files a debuginfod client fetched itself may go by build id), bounded in
 * bytes with least-recently-used eviction, and aged: symcache__expire frees
 * the tables no lookup wanted for a while. Times are the caller's monotonic
 * nanoseconds and must not go backwards from one call to the next. */
#ifndef KILN_SYMBOLIZE_SYMCACHE_H
#define KILN_SYMBOLIZE_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_symtab.h"

struct symcache;

struct symcache_stats {
	uint64_t hits, misses;
	uint64_t evictions;             /* to stay within max_bytes */
	uint64_t expired;               /* idle longer than symcache__expire's max_idle */
	size_t bytes, entries, max_bytes;
};

struct symcache *symcache__new(size_t max_bytes);
/* The table under key (and marks it most recently used, at now), or NULL.
 * The pointer stays valid until a symcache__put (which may evict it) or a
 * symcache__expire removes the entry. */
const struct symtab *symcache__get(struct symcache *c, const char *key, uint64_t now);
/* Takes ownership of st, marks it used at now and returns it; evicts least
 * recently used entries until the total fits max_bytes (a table larger than
 * the bound alone is still kept, as the only entry). An entry costs symtab__bytes plus its key
 * and bookkeeping. A table already under key is replaced and freed. On
 * failure (NULL argument, no memory) st is freed: NULL + errno. */
const struct symtab *symcache__put(struct symcache *c, const char *key,
				   struct symtab *st, uint64_t now);
/* Frees the entries idle for more than max_idle (last used before
 * now - max_idle) and returns how many; max_idle 0 never expires anything.
 * Walks from the least recently used end and stops at the first entry used
 * since, so a call that frees nothing costs one comparison. */
size_t symcache__expire(struct symcache *c, uint64_t now, uint64_t max_idle);
/* Frees the tables drop(table, ctx) says to, so that the next
 * symcache__get of their keys misses and the caller loads them again (a
 * file's debug file arrived), and returns how many. */
size_t symcache__drop_if(struct symcache *c, bool (*drop)(const struct symtab *st, void *ctx),
			 void *ctx);
void symcache__stats(const struct symcache *c, struct symcache_stats *out);
void symcache__free(struct symcache *c);

#endif
