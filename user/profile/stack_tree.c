// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "profile/stack_tree.h"

struct edge {
	uint32_t parent, key;
};

static uint64_t edge_hash(uint32_t parent, uint32_t key)
{
	return hash__mix((uint64_t)parent << 32 | key);
}

static bool edge_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct stack_node *n = &((const struct stack_tree *)ctx)->nodes[idx];
	const struct edge *e = key;

	return n->parent == e->parent && n->key == e->key;
}

/* Room for one more node whose index still fits a hash entry. */
static int node_reserve(struct stack_tree *t)
{
	if (t->len >= HASHMAP_NO_INDEX)
		return -ENOMEM;
	return array_reserve(t->nodes, t->cap, t->len + 1);
}

int stack_tree__init(struct stack_tree *t)
{
	int err;

	memset(t, 0, sizeof(*t));
	err = node_reserve(t);
	if (err)
		return err;
	t->nodes[t->len++] = (struct stack_node){ .parent = STACK_TREE_ROOT };
	return 0;
}

int stack_tree__child(struct stack_tree *t, uint32_t parent, uint32_t key,
		      uint32_t *child)
{
	struct edge e = { .parent = parent, .key = key };
	uint64_t hash = edge_hash(parent, key);
	uint32_t idx;
	int err;

	idx = hashmap__find_idx(&t->children, hash, edge_eq, t, &e);
	if (idx == HASHMAP_NO_INDEX) {
		err = node_reserve(t);
		if (!err)
			err = hashmap__add_idx(&t->children, hash, t->len);
		if (err)
			return err;
		idx = t->len++;
		t->nodes[idx] = (struct stack_node){ .parent = parent, .key = key };
	}
	*child = idx;
	return 0;
}

int stack_tree__graft(struct stack_tree *t, const struct stack_tree *src,
		      const uint32_t *key_map, uint32_t *node_map, uint32_t under)
{
	const struct stack_node *nodes = src->nodes;
	size_t i;
	int err;

	node_map[STACK_TREE_ROOT] = under;
	/* index order visits parents before their children */
	for (i = 1; i < src->len; i++) {
		if (key_map[nodes[i].key] == STACK_TREE_SKIP) {
			node_map[i] = node_map[nodes[i].parent];
			continue;
		}
		err = stack_tree__child(t, node_map[nodes[i].parent],
					key_map[nodes[i].key], &node_map[i]);
		if (err)
			return err;
	}
	return 0;
}

void stack_tree__count(struct stack_tree *t, uint32_t node, uint64_t n)
{
	t->nodes[node].self += n;
	t->total += n;
}

size_t stack_tree__bytes(const struct stack_tree *t)
{
	return t->cap * sizeof(*t->nodes) + hashmap__bytes(&t->children);
}

void stack_tree__release(struct stack_tree *t)
{
	free(t->nodes);
	hashmap__clear(&t->children);
	memset(t, 0, sizeof(*t));
}
