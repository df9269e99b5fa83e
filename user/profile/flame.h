/* SPDX-License-Identifier: BSD-2-Clause */
/* A profile keyed by function rather than by location, ready to draw and
 * to compare: frames of one function (same name, module and kind, any
 * address) under one parent are one node, as in a flame graph. Up to two
 * profiles share one tree, so a diff is a walk over one set of nodes:
 * column FLAME_NEW holds the profile shown (or the only one), FLAME_BASE
 * the one it is compared against. Used by html.c and diff.c only. */
#ifndef KILN_PROFILE_FLAME_H
#define KILN_PROFILE_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
#include "profile/stack_tree.h"
#include "profile/strtab.h"

enum { FLAME_NEW = 0, FLAME_BASE = 1, FLAME_COLS = 2 };

/* Where a function's code lives; picks its colour. */
enum func_class {
	CLASS_PROCESS = 0,      /* a root frame: the process name */
	CLASS_KERNEL,
	CLASS_LIBC,             /* glibc's or musl's libraries and loader */
	CLASS_PROGRAM,          /* an executable */
	CLASS_LIBRARY,          /* any other shared object */
	CLASS_UNKNOWN,          /* no mapping known (folded input, [unknown]) */
	CLASS_COUNT,
};

extern const char *const func_class_names[CLASS_COUNT];

struct flame_func {
	uint32_t name, module;  /* string ids; module: the file's base name */
	uint32_t file;          /* string id of its source file; 0 ("") unknown */
	enum frame_kind kind;
	enum func_class cls;
};

/* Function 0 is "all", the key of the root node. */
struct flame {
	struct strtab strings;
	struct flame_func *funcs;
	size_t nfuncs, funcs_cap;
	struct hashmap func_index;
	struct stack_tree tree;         /* keys: function indexes; self unused */
	uint64_t *self[FLAME_COLS];     /* per node, samples ending there */
	size_t self_cap[FLAME_COLS];
	uint64_t total[FLAME_COLS];
	/* Set by flame__order: the nodes depth first, siblings by name
	 * (root first), and each one's depth (root 0). */
	uint32_t *order, *depth;
};

struct func_totals {
	/* Samples ending in the function, and samples with the function
	 * anywhere on the stack (counted once however often it recurses). */
	uint64_t self[FLAME_COLS], total[FLAME_COLS];
};

/* Sets up an empty flame. 0 or -ENOMEM. */
int flame__init(struct flame *fl);
/* Adds p's samples to column col. 0 or -ENOMEM. */
int flame__add(struct flame *fl, const struct profile *p, int col);
/* Fills order and depth; call after the last flame__add. 0 or -ENOMEM. */
int flame__order(struct flame *fl);
/* Per function totals, indexed like funcs; *out is malloc'd. Needs
 * flame__order. 0 or -ENOMEM. */
int flame__func_totals(const struct flame *fl, struct func_totals **out);
/* Releases everything; fl must be initialized again before reuse. */
void flame__release(struct flame *fl);

static inline const char *flame__str(const struct flame *fl, uint32_t id)
{
	return strtab__get(&fl->strings, id);
}

#endif
