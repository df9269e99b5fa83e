/* SPDX-License-Identifier: BSD-2-Clause */
/* The one LRU list of kiln: an intrusive doubly linked list, most recently
 * used at the head, the next to evict at the tail. Embed a struct lru_node
 * in the entry and get the entry back with LRU_ENTRY. Zero-initialized is
 * empty; the list owns nothing. Not thread-safe: the owner serializes. */
#ifndef KILN_CORE_LRU_H
#define KILN_CORE_LRU_H

#include <stddef.h>

struct lru_node {
	struct lru_node *prev, *next;
};

struct lru {
	struct lru_node *head, *tail;   /* most, least recently used */
};

/* The entry of type `type` whose `member` is node, or NULL for NULL. */
#define LRU_ENTRY(node, type, member) \
	((node) ? (type *)(void *)((char *)(node) - offsetof(type, member)) : (type *)NULL)

/* Links n (not in any list) at the head. */
void lru__push(struct lru *l, struct lru_node *n);
/* Unlinks n from l; n is then in no list. */
void lru__unlink(struct lru *l, struct lru_node *n);
/* Moves n (in l) to the head. */
void lru__touch(struct lru *l, struct lru_node *n);

#endif
