// SPDX-License-Identifier: BSD-2-Clause
/* The function-keyed tree behind the HTML page and the diff: locations are
 * mapped to functions, the profile's stack tree is grafted onto the
 * flame's under those keys, and counts land in the column asked for. */
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "profile/flame.h"
#include "profile/profile_priv.h"

const char *const func_class_names[CLASS_COUNT] = {
	[CLASS_PROCESS] = "process",
	[CLASS_KERNEL] = "kernel",
	[CLASS_LIBC] = "libc",
	[CLASS_PROGRAM] = "program",
	[CLASS_LIBRARY] = "library",
	[CLASS_UNKNOWN] = "unknown",
};

/* The C library: glibc's pieces and loader, musl's. */
static const char *const libc_globs[] = {
	"libc.so*", "libc-*.so", "libm.so*", "libm-*.so", "libpthread.so*",
	"libpthread-*.so", "libdl.so*", "libdl-*.so", "librt.so*", "librt-*.so",
	"ld-linux*.so*", "ld-*.so", "ld-musl-*.so*", "libc.musl-*.so*",
};

static enum func_class classify(enum frame_kind kind, const char *module)
{
	size_t i;

	if (kind == FRAME_ROOT)
		return CLASS_PROCESS;
	if (kind == FRAME_KERNEL)
		return CLASS_KERNEL;
	if (!*module)
		return CLASS_UNKNOWN;
	if (!strcmp(module, "[vdso]"))
		return CLASS_LIBRARY;
	if (*module == '[')     /* [heap], [stack], [anon:...]: JIT code and such */
		return CLASS_UNKNOWN;
	for (i = 0; i < sizeof(libc_globs) / sizeof(libc_globs[0]); i++)
		if (!fnmatch(libc_globs[i], module, 0))
			return CLASS_LIBC;
	if (!fnmatch("*.so", module, 0) || !fnmatch("*.so.*", module, 0))
		return CLASS_LIBRARY;
	return CLASS_PROGRAM;
}

static uint64_t func_hash(const struct flame_func *f)
{
	return hash__add(hash__mix((uint64_t)f->name << 32 | f->module), f->kind);
}

static bool func_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct flame_func *a = &((const struct flame *)ctx)->funcs[idx];
	const struct flame_func *b = key;

	return a->name == b->name && a->module == b->module && a->kind == b->kind;
}

/* Index of the function (kind, name, module), added when new; file, its
 * source file, is kept from the first frame that knows it. */
static int intern_func(struct flame *fl, enum frame_kind kind, const char *name,
		       const char *module, const char *file, uint32_t *idx)
{
	struct flame_func f = { .kind = kind };
	const char *slash = strrchr(module, '/');
	uint64_t hash;
	int err;

	module = slash ? slash + 1 : module;
	err = strtab__intern(&fl->strings, name, &f.name);
	if (!err)
		err = strtab__intern(&fl->strings, module, &f.module);
	if (err)
		return err;
	if (!err && *file)
		err = strtab__intern(&fl->strings, file, &f.file);
	if (err)
		return err;
	hash = func_hash(&f);
	*idx = hashmap__find_idx(&fl->func_index, hash, func_eq, fl, &f);
	if (*idx != HASHMAP_NO_INDEX) {
		if (!fl->funcs[*idx].file)
			fl->funcs[*idx].file = f.file;
		return 0;
	}
	if (fl->nfuncs >= HASHMAP_NO_INDEX)
		return -ENOMEM;
	f.cls = classify(kind, module);
	err = array_reserve(fl->funcs, fl->funcs_cap, fl->nfuncs + 1);
	if (!err)
		err = hashmap__add_idx(&fl->func_index, hash, fl->nfuncs);
	if (err)
		return err;
	*idx = fl->nfuncs;
	fl->funcs[fl->nfuncs++] = f;
	return 0;
}

int flame__init(struct flame *fl)
{
	uint32_t all;
	int err;

	memset(fl, 0, sizeof(*fl));
	err = strtab__init(&fl->strings);
	if (!err)
		err = strtab__init(&fl->sets);
	if (!err)
		err = stack_tree__init(&fl->tree);
	if (!err)
		err = intern_func(fl, FRAME_ROOT, "all", "", "", &all);
	return err;
}

/* Makes every column hold a count for each node of the tree. */
static int grow_columns(struct flame *fl)
{
	for (int c = 0; c < FLAME_COLS; c++) {
		size_t had = fl->self_cap[c];
		int err = array_reserve(fl->self[c], fl->self_cap[c], fl->tree.len);

		if (err)
			return err;
		memset(fl->self[c] + had, 0, (fl->self_cap[c] - had) * sizeof(uint64_t));
	}
	return 0;
}

/* keep_labels: each counted node of p as (label set, flame node, self).
 * A node's set is that of its FRAME_LABELS ancestor (before the root),
 * none for a stack without one; parents come before their children. */
static int add_label_counts(struct flame *fl, const struct profile *p, const uint32_t *node_of)
{
	uint32_t *set_of = calloc(p->tree.len, sizeof(*set_of));
	int err = set_of ? 0 : -ENOMEM;

	for (size_t i = 1; i < p->tree.len && !err; i++) {
		const struct stack_node *n = &p->tree.nodes[i];
		const struct location *l = &p->locs[n->key];

		if (l->kind == FRAME_LABELS)
			err = strtab__intern(&fl->sets, strtab__get(&p->strings, l->name),
					     &set_of[i]);
		else
			set_of[i] = set_of[n->parent];
		if (err || !n->self)
			continue;
		err = array_reserve(fl->lcounts, fl->lcounts_cap, fl->nlcounts + 1);
		if (!err)
			fl->lcounts[fl->nlcounts++] = (struct flame_label_count){
				set_of[i], node_of[i], n->self };
	}
	free(set_of);
	return err;
}

int flame__add(struct flame *fl, const struct profile *p, int col)
{
	uint32_t *func_of = calloc(p->nlocs ? p->nlocs : 1, sizeof(*func_of));
	uint32_t *node_of = calloc(p->tree.len, sizeof(*node_of));
	size_t i;
	int err = func_of && node_of ? 0 : -ENOMEM;

	for (i = 0; i < p->nlocs && !err; i++) {
		const struct location *l = &p->locs[i];

		if (l->kind == FRAME_LABELS) {
			func_of[i] = STACK_TREE_SKIP;
			continue;
		}
		err = intern_func(fl, l->kind, strtab__get(&p->strings, l->name),
				  l->mapping ? strtab__get(&p->strings,
							   p->maps[l->mapping - 1].file) : "",
				  strtab__get(&p->strings, l->file), &func_of[i]);
	}
	if (!err)
		err = stack_tree__graft(&fl->tree, &p->tree, func_of, node_of, STACK_TREE_ROOT);
	if (!err)
		err = grow_columns(fl);
	for (i = 0; i < p->tree.len && !err; i++) {
		fl->self[col][node_of[i]] += p->tree.nodes[i].self;
		fl->total[col] += p->tree.nodes[i].self;
	}
	if (!err && fl->keep_labels && col == FLAME_NEW)
		err = add_label_counts(fl, p, node_of);
	free(func_of);
	free(node_of);
	return err;
}

/* Siblings sort by name, then module, then kind. */
static int sibling_cmp(const void *a, const void *b, void *ctx)
{
	const struct flame *fl = ctx;
	const struct flame_func *fa = &fl->funcs[fl->tree.nodes[*(const uint32_t *)a].key];
	const struct flame_func *fb = &fl->funcs[fl->tree.nodes[*(const uint32_t *)b].key];
	int c = strcmp(flame__str(fl, fa->name), flame__str(fl, fb->name));

	if (!c)
		c = strcmp(flame__str(fl, fa->module), flame__str(fl, fb->module));
	return c ? c : (int)fa->kind - (int)fb->kind;
}

int flame__order(struct flame *fl)
{
	size_t n = fl->tree.len, i, top = 0, pos = 0;
	uint32_t *first = calloc(n + 1, sizeof(*first));  /* children of i: kids[first[i]..first[i+1]) */
	uint32_t *kids = calloc(n, sizeof(*kids));
	uint32_t *fill = calloc(n + 1, sizeof(*fill));
	uint32_t *stack = calloc(n, sizeof(*stack));
	int err = -ENOMEM;

	free(fl->order);
	free(fl->depth);
	fl->order = calloc(n, sizeof(*fl->order));
	fl->depth = calloc(n, sizeof(*fl->depth));
	if (!first || !kids || !fill || !stack || !fl->order || !fl->depth)
		goto cleanup;
	for (i = 1; i < n; i++)
		first[fl->tree.nodes[i].parent + 1]++;
	for (i = 0; i < n; i++)
		first[i + 1] += first[i];
	memcpy(fill, first, (n + 1) * sizeof(*fill));
	for (i = 1; i < n; i++)
		kids[fill[fl->tree.nodes[i].parent]++] = i;
	for (i = 0; i < n; i++)
		qsort_r(kids + first[i], first[i + 1] - first[i], sizeof(*kids),
			sibling_cmp, fl);
	/* depth first; children pushed last to first so the first pops first.
	 * A node's depth is its parent's plus one, and parents come first. */
	stack[top++] = STACK_TREE_ROOT;
	while (top) {
		uint32_t node = stack[--top];

		fl->depth[node] = node == STACK_TREE_ROOT ? 0 :
				  fl->depth[fl->tree.nodes[node].parent] + 1;
		fl->order[pos++] = node;
		for (uint32_t k = first[node + 1]; k-- > first[node];)
			stack[top++] = kids[k];
	}
	/* depth by position in order, as documented */
	for (i = 0; i < n; i++)
		fill[i] = fl->depth[fl->order[i]];
	memcpy(fl->depth, fill, n * sizeof(*fl->depth));
	err = 0;
cleanup:
	free(first);
	free(kids);
	free(fill);
	free(stack);
	return err;
}

int flame__func_totals(const struct flame *fl, struct func_totals **out)
{
	size_t n = fl->tree.len, i, top = 0;
	uint64_t *sub[FLAME_COLS] = { 0 };
	uint32_t *active = calloc(fl->nfuncs, sizeof(*active));
	uint32_t *path = calloc(n, sizeof(*path));      /* functions root..node */
	struct func_totals *t = calloc(fl->nfuncs, sizeof(*t));
	int c, err = -ENOMEM;

	for (c = 0; c < FLAME_COLS; c++)
		sub[c] = calloc(n, sizeof(uint64_t));
	if (!active || !path || !t || !sub[0] || !sub[1])
		goto cleanup;
	/* subtree totals: children have higher indexes than parents */
	for (i = n; i-- > 0;)
		for (c = 0; c < FLAME_COLS; c++) {
			sub[c][i] += fl->self[c][i];
			if (i != STACK_TREE_ROOT)
				sub[c][fl->tree.nodes[i].parent] += sub[c][i];
		}
	/* depth first with the functions on the current path: a node adds
	 * its subtree to its function's total unless the function is above
	 * it already (recursion) */
	for (i = 1; i < n; i++) {
		uint32_t node = fl->order[i], f = fl->tree.nodes[node].key;

		while (top >= fl->depth[i])
			active[path[--top]]--;
		for (c = 0; c < FLAME_COLS; c++) {
			t[f].self[c] += fl->self[c][node];
			if (!active[f])
				t[f].total[c] += sub[c][node];
		}
		active[f]++;
		path[top++] = f;
	}
	*out = t;
	t = NULL;
	err = 0;
cleanup:
	for (c = 0; c < FLAME_COLS; c++)
		free(sub[c]);
	free(active);
	free(path);
	free(t);
	return err;
}

void flame__release(struct flame *fl)
{
	strtab__release(&fl->strings);
	strtab__release(&fl->sets);
	free(fl->lcounts);
	free(fl->funcs);
	hashmap__clear(&fl->func_index);
	stack_tree__release(&fl->tree);
	for (int c = 0; c < FLAME_COLS; c++)
		free(fl->self[c]);
	free(fl->order);
	free(fl->depth);
	memset(fl, 0, sizeof(*fl));
}
