/* SPDX-License-Identifier: BSD-2-Clause */
/* A trie of call stacks: each node is one frame key (a location index for
 * the profile, a frame text for folded output) under its parent, with the
 * samples whose stack ends exactly there. Children are found through one
 * hash keyed by (parent, key), so adding an n-frame stack costs O(n).
 * Nodes are only appended: a parent's index is below its children's, so a
 * walk in index order meets every parent before its children. */
#ifndef KILN_PROFILE_STACK_TREE_H
#define KILN_PROFILE_STACK_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/hashmap.h"

#define STACK_TREE_ROOT 0       /* the empty stack; has no key */
#define STACK_TREE_SKIP UINT32_MAX /* stack_tree__graft: a key left out */

struct stack_node {
	uint32_t parent;
	uint32_t key;
	uint64_t self;          /* samples of stacks ending at this node */
};

struct stack_tree {
	struct stack_node *nodes;
	size_t len, cap;
	struct hashmap children;
	uint64_t total;         /* sum of all self counts */
};

/* Sets up t holding only the root. 0 or -ENOMEM. */
int stack_tree__init(struct stack_tree *t);
/* The child of parent with key, created with self 0 when missing.
 * 0 or -ENOMEM. */
int stack_tree__child(struct stack_tree *t, uint32_t parent, uint32_t key,
		      uint32_t *child);
/* Adds every path of src to t under t's node under (STACK_TREE_ROOT: at
 * the top) with its keys translated: src's key k becomes key_map[k], and a
 * node whose key maps to STACK_TREE_SKIP is left out (its children join
 * its parent). node_map[i] receives t's node for src's node i, so the
 * caller can move src's counts over; none are copied here. Paths that
 * meet under the new keys merge. 0 or -ENOMEM (t keeps what was added). */
int stack_tree__graft(struct stack_tree *t, const struct stack_tree *src,
		      const uint32_t *key_map, uint32_t *node_map, uint32_t under);
/* Adds n samples ending at node. */
void stack_tree__count(struct stack_tree *t, uint32_t node, uint64_t n);
size_t stack_tree__bytes(const struct stack_tree *t);
/* Releases everything; t must be initialized again before reuse. */
void stack_tree__release(struct stack_tree *t);

#endif
