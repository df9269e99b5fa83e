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

/* Stack tree keys are location indexes; strings holds every name, file
 * and build id. */
struct profile {
	struct strtab strings;
	struct mapping *maps;
	size_t nmaps, maps_cap;
	struct hashmap map_index;
	struct location *locs;
	size_t nlocs, locs_cap;
	struct hashmap loc_index;
	struct stack_tree tree;
};

#endif
