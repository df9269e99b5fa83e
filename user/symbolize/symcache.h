/* Symbol tables shared by every process mapping the same binary, keyed by
 * build id ("b:<hex>") else device and inode ("i:<dev>:<ino>"), bounded in
 * bytes with least-recently-used eviction. */
#ifndef KILN_SYMBOLIZE_SYMCACHE_H
#define KILN_SYMBOLIZE_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_symtab.h"

struct symcache;

struct symcache_stats {
	uint64_t hits, misses, evictions;
	size_t bytes, entries, max_bytes;
};

struct symcache *symcache__new(size_t max_bytes);
/* The table under key (and marks it most recently used), or NULL. The
 * pointer stays valid until the next symcache__put. */
const struct symtab *symcache__get(struct symcache *c, const char *key);
/* Takes ownership of st and returns it; evicts least recently used entries
 * until the total fits max_bytes (a table larger than the bound alone is
 * still kept, as the only entry). An entry costs symtab__bytes plus its key
 * and bookkeeping. A table already under key is replaced and freed. On
 * failure (NULL argument, no memory) st is freed: NULL + errno. */
const struct symtab *symcache__put(struct symcache *c, const char *key,
				   struct symtab *st);
void symcache__stats(const struct symcache *c, struct symcache_stats *out);
void symcache__free(struct symcache *c);

#endif
