// SPDX-License-Identifier: BSD-2-Clause
/* Symbol tables by key, bounded in bytes, least recently used out first,
 * idle ones out after a while.
 *
 * DESIGN: a core/hashmap keyed by the key's hash finds entries; a core/lru
 * list orders them from most (head) to least (tail) recently used. An
 * entry's bytes are its table's symtab__bytes plus the entry itself with
 * its key, so the bound covers everything the cache holds but the map's
 * slots. Each entry keeps the time of its last use; as the caller's clock
 * never goes back, the list is also ordered by that time, so expiry only
 * looks at the tail. Not thread-safe: one owner at a time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "core/lru.h"
#include "symbolize/symcache.h"

struct entry {
	struct lru_node lru;
	struct symtab *st;
	size_t bytes;
	uint64_t hash;                  /* of key */
	uint64_t used;                  /* last get or put, caller's clock */
	char key[];
};

struct symcache {
	struct hashmap index;           /* hash of key -> struct entry */
	struct lru lru;
	struct symcache_stats stats;
};

#define TAIL(c) LRU_ENTRY((c)->lru.tail, struct entry, lru)

static bool key_is(const void *ctx, const void *val, const void *key)
{
	(void)ctx;
	return strcmp(((const struct entry *)val)->key, key) == 0;
}

struct symcache *symcache__new(size_t max_bytes)
{
	struct symcache *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->stats.max_bytes = max_bytes;
	return c;
}

/* Unlinks e from the map and the list, frees it and its table. */
static void entry_remove(struct symcache *c, struct entry *e)
{
	hashmap__del(&c->index, e->hash, key_is, NULL, e->key);
	lru__unlink(&c->lru, &e->lru);
	c->stats.bytes -= e->bytes;
	c->stats.entries--;
	symtab__free(e->st);
	free(e);
}

/* Marks e most recently used at now. */
static void touch(struct symcache *c, struct entry *e, uint64_t now)
{
	lru__touch(&c->lru, &e->lru);
	e->used = now;
}

const struct symtab *symcache__get(struct symcache *c, const char *key, uint64_t now)
{
	struct entry *e;

	if (!c || !key)
		return NULL;
	e = hashmap__get(&c->index, hash__chunks(key, strlen(key)), key_is, NULL, key);
	if (!e) {
		c->stats.misses++;
		return NULL;
	}
	c->stats.hits++;
	touch(c, e, now);
	return e->st;
}

const struct symtab *symcache__put(struct symcache *c, const char *key,
				   struct symtab *st, uint64_t now)
{
	struct entry *e, *old;
	uint64_t h;
	size_t len;

	if (!c || !key || !st) {
		symtab__free(st);
		errno = EINVAL;
		return NULL;
	}
	h = hash__chunks(key, strlen(key));
	old = hashmap__get(&c->index, h, key_is, NULL, key);
	if (old && old->st == st) {
		touch(c, old, now);
		return st;
	}
	if (old)
		entry_remove(c, old);
	len = strlen(key) + 1;
	e = malloc(sizeof(*e) + len);
	if (!e || hashmap__add(&c->index, h, e)) {
		free(e);
		symtab__free(st);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(e->key, key, len);
	e->st = st;
	e->hash = h;
	e->used = now;
	e->bytes = sizeof(*e) + len + symtab__bytes(st);
	lru__push(&c->lru, &e->lru);
	c->stats.bytes += e->bytes;
	c->stats.entries++;
	while (c->stats.bytes > c->stats.max_bytes && TAIL(c) != e) {
		entry_remove(c, TAIL(c));
		c->stats.evictions++;
	}
	return st;
}

size_t symcache__expire(struct symcache *c, uint64_t now, uint64_t max_idle)
{
	size_t n = 0;

	if (!c || !max_idle || now <= max_idle)
		return 0;
	while (c->lru.tail && TAIL(c)->used < now - max_idle) {
		entry_remove(c, TAIL(c));
		n++;
	}
	c->stats.expired += n;
	return n;
}

size_t symcache__drop_if(struct symcache *c, bool (*drop)(const struct symtab *st, void *ctx),
			 void *ctx)
{
	struct lru_node *n = c ? c->lru.head : NULL;
	size_t dropped = 0;

	while (n) {
		struct entry *e = LRU_ENTRY(n, struct entry, lru);

		n = n->next;
		if (drop(e->st, ctx)) {
			entry_remove(c, e);
			dropped++;
		}
	}
	return dropped;
}

void symcache__stats(const struct symcache *c, struct symcache_stats *out)
{
	if (!out)
		return;
	if (!c) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = c->stats;
}

void symcache__free(struct symcache *c)
{
	if (!c)
		return;
	while (c->lru.head)
		entry_remove(c, LRU_ENTRY(c->lru.head, struct entry, lru));
	hashmap__clear(&c->index);
	free(c);
}
