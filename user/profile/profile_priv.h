/* SPDX-License-Identifier: BSD-2-Clause */
/* The profile's insides, shared by the builder (profile.c) and the
 * encoders (pprof.c, folded.c). Nothing outside user/profile includes it. */
#ifndef KILN_PROFILE_PROFILE_PRIV_H
#define KILN_PROFILE_PROFILE_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
#include "profile/stack_tree.h"
#include "profile/strtab.h"

/* Interned by every field; pprof id = index + 1. */
struct mapping {
	uint32_t file, build_id;        /* string ids; build_id 0 = none */
	uint64_t start, limit, offset;
};

/* Interned by every field; pprof id = index + 1. A FRAME_ROOT location
 * has only its name set, so one process name is one location. */
struct location {
	uint64_t addr;
	uint32_t name;                  /* string id */
	uint32_t file;                  /* string id; 0 ("") = unknown */
	uint32_t line;                  /* 0 = unknown */
	uint32_t mapping;               /* mapping index + 1; 0 = none */
	enum frame_kind kind;
	bool inlined, unnamed;          /* struct frame's */
};

struct id_location {
	uint64_t id;            /* 0: none */
	uint32_t loc;
};

/* Stack tree keys are location indexes; strings holds every name, file
 * and build id. */
struct profile {
	struct strtab strings;
	struct mapping *maps;
	size_t nmaps, maps_cap;
	struct hashmap map_index;
	/* Mapping id (0: none) of the last frame seen in each range,
	 * direct-mapped; checked against the frame as loc_memo is. */
	uint32_t map_memo[64];
	struct location *locs;
	size_t nlocs, locs_cap;
	struct hashmap loc_index;
	/* Location index + 1 (0: none) of the last frame seen at each
	 * address, direct-mapped (profile.c's LOC_MEMO; NULL while the
	 * profile is small): a frame found there and equal to it in every
	 * field is that location, found without hashing its strings. */
	uint32_t *loc_memo;
	/* The location of each frame id (core/frame.h) seen last in each
	 * of id_slots slots, direct-mapped (profile.c's ID_MEMO_*; NULL
	 * before the first frame with an id): a frame with that id is that
	 * location, no field compared. */
	struct id_location *id_memo;
	size_t id_slots;
	struct stack_tree tree;
};

/* The node that ends the machine frame starting at node n, walking out:
 * n itself unless n was inlined into its caller, whose frame it shares
 * (an encoder's location spans n .. that node). */
static inline uint32_t profile__frame_end(const struct profile *p, uint32_t n)
{
	const struct stack_node *nodes = p->tree.nodes;

	while (p->locs[nodes[n].key].inlined && nodes[n].parent != STACK_TREE_ROOT)
		n = nodes[n].parent;
	return n;
}

/* Whether tree node n holds a label set (core/labels.h's text form), the
 * outermost node of its stacks. */
static inline bool profile__labels_node(const struct profile *p, uint32_t n)
{
	return p->locs[p->tree.nodes[n].key].kind == FRAME_LABELS;
}

#endif
