// SPDX-License-Identifier: BSD-2-Clause
/* Symbol tables by key, bounded in bytes, least recently used out first,
 * idle ones out after a while.
 *
 * DESIGN: a chained hash table (power-of-two buckets, doubled when the
 * load passes 1) finds entries; a doubly linked list orders them from most
 * (head) to least (tail) recently used. An entry's bytes are its table's
 * symtab__bytes plus the entry itself with its key, so the bound covers
 * everything the cache holds. Each entry keeps the time of its last use;
 * as the caller's clock never goes back, the list is also ordered by that
 * time, so expiry only looks at the tail. Not thread-safe: one owner at a
 * time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symcache.h"

struct entry {
	struct entry *chain;		/* next in the bucket */
	struct entry *prev, *next;	/* LRU list */
	struct symtab *st;
	size_t bytes;
	size_t hash;
	uint64_t used;                  /* last get or put, caller's clock */
	char key[];
};

struct symcache {
	struct entry **buckets;
	size_t nbuckets;		/* power of two */
	struct entry *head, *tail;	/* most, least recently used */
	struct symcache_stats stats;
};

static size_t key_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

struct symcache *symcache__new(size_t max_bytes)
{
	struct symcache *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->nbuckets = 64;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->stats.max_bytes = max_bytes;
	return c;
}

static struct entry **find_slot(const struct symcache *c, const char *key, size_t h)
{
	struct entry **pp = &c->buckets[h & (c->nbuckets - 1)];

	for (; *pp; pp = &(*pp)->chain)
		if ((*pp)->hash == h && strcmp((*pp)->key, key) == 0)
			return pp;
	return pp;
}

static void lru_unlink(struct symcache *c, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_head(struct symcache *c, struct entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* Unlinks e from its bucket and the list, frees it and its table. */
static void entry_remove(struct symcache *c, struct entry *e)
{
	struct entry **pp = find_slot(c, e->key, e->hash);

	*pp = e->chain;
	lru_unlink(c, e);
	c->stats.bytes -= e->bytes;
	c->stats.entries--;
	symtab__free(e->st);
	free(e);
}

/* Doubling keeps chains short; a failed allocation only costs speed. */
static void maybe_grow(struct symcache *c)
{
	size_t n = c->nbuckets * 2;
	struct entry **b;

	if (c->stats.entries < c->nbuckets)
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->chain;
			e->chain = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
}

/* Marks e most recently used at now. */
static void touch(struct symcache *c, struct entry *e, uint64_t now)
{
	lru_unlink(c, e);
	lru_push_head(c, e);
	e->used = now;
}

const struct symtab *symcache__get(struct symcache *c, const char *key, uint64_t now)
{
	struct entry *e;

	if (!c || !key)
		return NULL;
	e = *find_slot(c, key, key_hash(key));
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
	size_t h, len;
	struct entry **pp, *e;

	if (!c || !key || !st) {
		symtab__free(st);
		errno = EINVAL;
		return NULL;
	}
	h = key_hash(key);
	pp = find_slot(c, key, h);
	if (*pp && (*pp)->st == st) {
		touch(c, *pp, now);
		return st;
	}
	if (*pp)
		entry_remove(c, *pp);
	len = strlen(key) + 1;
	e = malloc(sizeof(*e) + len);
	if (!e) {
		symtab__free(st);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(e->key, key, len);
	e->st = st;
	e->hash = h;
	e->used = now;
	e->bytes = sizeof(*e) + len + symtab__bytes(st);
	pp = find_slot(c, key, h);
	e->chain = NULL;
	*pp = e;
	lru_push_head(c, e);
	c->stats.bytes += e->bytes;
	c->stats.entries++;
	while (c->stats.bytes > c->stats.max_bytes && c->tail != e) {
		entry_remove(c, c->tail);
		c->stats.evictions++;
	}
	maybe_grow(c);
	return st;
}

size_t symcache__expire(struct symcache *c, uint64_t now, uint64_t max_idle)
{
	size_t n = 0;

	if (!c || !max_idle || now <= max_idle)
		return 0;
	while (c->tail && c->tail->used < now - max_idle) {
		entry_remove(c, c->tail);
		n++;
	}
	c->stats.expired += n;
	return n;
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
	while (c->head)
		entry_remove(c, c->head);
	free(c->buckets);
	free(c);
}
