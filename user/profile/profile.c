// SPDX-License-Identifier: BSD-2-Clause
/* Builds a profile: interns each frame's strings, mapping and location,
 * then walks the stack tree down from the root along the location keys. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "profile/profile_priv.h"

static uint64_t mapping_hash(const struct mapping *m)
{
	uint64_t h = hash__mix((uint64_t)m->file << 32 | m->build_id);

	h = hash__add(h, m->start);
	h = hash__add(h, m->limit);
	return hash__add(h, m->offset);
}

static bool mapping_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct mapping *a = &((const struct profile *)ctx)->maps[idx];
	const struct mapping *b = key;

	return a->file == b->file && a->build_id == b->build_id &&
	       a->start == b->start && a->limit == b->limit &&
	       a->offset == b->offset;
}

static uint64_t location_hash(const struct location *l)
{
	uint64_t h = hash__mix((uint64_t)l->name << 32 | l->mapping);

	h = hash__add(h, l->addr);
	h = hash__add(h, (uint64_t)l->file << 32 | l->line);
	return hash__add(h, l->kind | l->inlined << 8 | l->unnamed << 9);
}

static bool location_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct location *a = &((const struct profile *)ctx)->locs[idx];
	const struct location *b = key;

	return a->addr == b->addr && a->name == b->name &&
	       a->mapping == b->mapping && a->kind == b->kind && a->file == b->file &&
	       a->line == b->line && a->inlined == b->inlined && a->unnamed == b->unnamed;
}

/* Whether mapping id is f's: every field equal. */
static bool map_memo_holds(const struct profile *p, uint32_t id, const struct frame *f)
{
	const struct mapping *m = &p->maps[id - 1];

	return m->start == f->map_start && m->limit == f->map_limit && m->offset == f->map_offset &&
	       strcmp(strtab__get(&p->strings, m->file), f->map_file) == 0 &&
	       (f->map_build_id ? m->build_id &&
				  strcmp(strtab__get(&p->strings, m->build_id), f->map_build_id) == 0 :
				  m->build_id == 0);
}

/* Mapping id (index + 1) of f's mapping. 0 or -ENOMEM. */
static int intern_mapping(struct profile *p, const struct frame *f,
			  uint32_t *id)
{
	struct mapping m = {
		.start = f->map_start,
		.limit = f->map_limit,
		.offset = f->map_offset,
	};
	size_t memo_n = sizeof(p->map_memo) / sizeof(p->map_memo[0]);
	uint32_t *memo = &p->map_memo[hash__add(f->map_start, f->map_limit ^ f->map_offset) &
				      (memo_n - 1)];
	uint64_t hash;
	uint32_t idx;
	int err;

	if (*memo && *memo <= p->nmaps && map_memo_holds(p, *memo, f)) {
		*id = *memo;
		return 0;
	}
	err = strtab__intern(&p->strings, f->map_file, &m.file);
	if (!err && f->map_build_id)
		err = strtab__intern(&p->strings, f->map_build_id, &m.build_id);
	if (err)
		return err;
	hash = mapping_hash(&m);
	idx = hashmap__find_idx(&p->map_index, hash, mapping_eq, p, &m);
	if (idx == HASHMAP_NO_INDEX) {
		if (p->nmaps >= HASHMAP_NO_INDEX - 1) /* ids are index + 1 */
			return -ENOMEM;
		err = array_reserve(p->maps, p->maps_cap, p->nmaps + 1);
		if (!err)
			err = hashmap__add_idx(&p->map_index, hash, p->nmaps);
		if (err)
			return err;
		idx = p->nmaps;
		p->maps[p->nmaps++] = m;
	}
	*id = idx + 1;
	*memo = *id;
	return 0;
}

/* Slots of a profile's location memo (16 KiB), made once the profile has
 * LOC_MEMO_FROM locations: a label set's frames recur stack after stack,
 * and a small profile's own tables stay in the CPU's cache anyway. */
#define LOC_MEMO 4096
#define LOC_MEMO_FROM 512

static uint32_t *loc_memo_slot(struct profile *p, const struct frame *f, uint32_t mapping)
{
	uint64_t h = hash__add(f->addr ^ (uint64_t)mapping << 40, f->kind | f->inlined << 8 | f->line << 9);

	return &p->loc_memo[h & (LOC_MEMO - 1)];
}

/* Whether location idx is f's (in mapping): every field equal. */
static bool memo_holds(const struct profile *p, uint32_t idx, const struct frame *f,
		       uint32_t mapping)
{
	const struct location *l = &p->locs[idx];
	/* (a root or label frame's location is its name alone) */
	bool in_code = f->kind != FRAME_ROOT && f->kind != FRAME_LABELS;

	if (l->kind != f->kind || l->mapping != mapping ||
	    (in_code && (l->addr != f->addr || l->line != f->line || l->inlined != f->inlined ||
			 l->unnamed != f->unnamed)) ||
	    strcmp(strtab__get(&p->strings, l->name), f->name) != 0)
		return false;
	if (!in_code)
		return true;
	return f->file ? l->file && strcmp(strtab__get(&p->strings, l->file), f->file) == 0 :
			 l->file == 0;
}

/* Location index of f, whose mapping id is known (0: none). 0 or -ENOMEM. */
static int intern_location_in(struct profile *p, const struct frame *f, uint32_t mapping,
			      uint32_t *idx)
{
	struct location l = { .kind = f->kind, .mapping = mapping };
	uint32_t *memo = NULL;
	uint64_t hash;
	int err;

	if (!p->loc_memo && p->nlocs >= LOC_MEMO_FROM)
		p->loc_memo = calloc(LOC_MEMO, sizeof(*p->loc_memo));
	if (p->loc_memo) {
		memo = loc_memo_slot(p, f, mapping);
		if (*memo && *memo <= p->nlocs && memo_holds(p, *memo - 1, f, mapping)) {
			*idx = *memo - 1;
			return 0;
		}
	}
	err = strtab__intern(&p->strings, f->name, &l.name);
	if (err)
		return err;
	if (f->kind != FRAME_ROOT && f->kind != FRAME_LABELS) {
		l.addr = f->addr;
		l.line = f->line;
		l.inlined = f->inlined;
		l.unnamed = f->unnamed;
		if (f->file)
			err = strtab__intern(&p->strings, f->file, &l.file);
		if (err)
			return err;
	}
	hash = location_hash(&l);
	*idx = hashmap__find_idx(&p->loc_index, hash, location_eq, p, &l);
	if (*idx == HASHMAP_NO_INDEX) {
		if (p->nlocs >= HASHMAP_NO_INDEX)
			return -ENOMEM;
		err = array_reserve(p->locs, p->locs_cap, p->nlocs + 1);
		if (!err)
			err = hashmap__add_idx(&p->loc_index, hash, p->nlocs);
		if (err)
			return err;
		*idx = p->nlocs;
		p->locs[p->nlocs++] = l;
	}
	if (memo)
		*memo = *idx + 1;
	return 0;
}

/* Neighbouring frames mostly share a mapping: b's mapping id serves a when
 * their mapping fields are the same pointers and values (the strings stay
 * put for one profile__add call). Saves hashing two strings a frame. */
static bool same_mapping(const struct frame *a, const struct frame *b)
{
	return a->kind != FRAME_ROOT && b->kind != FRAME_ROOT && a->kind != FRAME_LABELS && a->map_file &&
	       a->map_file == b->map_file && a->map_build_id == b->map_build_id &&
	       a->map_start == b->map_start && a->map_limit == b->map_limit &&
	       a->map_offset == b->map_offset;
}

/* Slots of a profile's memo of locations by frame id: 4 KiB from its
 * first frame with one (a label set's profile of a few hundred frames,
 * each seen in many stacks), 32 KiB from LOC_MEMO_FROM locations. */
#define ID_MEMO_SMALL 256
#define ID_MEMO_LARGE 2048

/* Where f's id is remembered (f has one), or NULL without memory. */
static struct id_location *id_memo_slot(struct profile *p, const struct frame *f)
{
	size_t want = p->nlocs >= LOC_MEMO_FROM ? ID_MEMO_LARGE : ID_MEMO_SMALL;

	if (p->id_slots < want) {
		struct id_location *m = calloc(want, sizeof(*m));

		if (!m)
			return NULL;
		free(p->id_memo);
		p->id_memo = m;
		p->id_slots = want;
	}
	return &p->id_memo[hash__mix(f->id) & (p->id_slots - 1)];
}

/* Location index of f. 0 or -ENOMEM. */
static int intern_location(struct profile *p, const struct frame *f, uint32_t *idx)
{
	uint32_t mapping = 0;
	int err = 0;

	if (f->kind != FRAME_ROOT && f->kind != FRAME_LABELS && f->map_file)
		err = intern_mapping(p, f, &mapping);
	return err ? err : intern_location_in(p, f, mapping, idx);
}

struct profile *profile__new(void)
{
	struct profile *p = calloc(1, sizeof(*p));
	int err;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	err = strtab__init(&p->strings);
	if (!err)
		err = stack_tree__init(&p->tree);
	if (err) {
		profile__free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

int profile__add(struct profile *p, const struct frame *frames, size_t n,
		 uint64_t count)
{
	uint32_t node = STACK_TREE_ROOT, loc = 0, prev_mapping = 0;
	size_t i;
	int err;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!frames[i].name)
			return -EINVAL;
	if (!count)
		return 0;
	for (i = 0; i < n; i++) {
		struct id_location *known = frames[i].id ? id_memo_slot(p, &frames[i]) : NULL;

		if (known && known->id == frames[i].id) {
			loc = known->loc;
			err = 0;
		} else {
			if (i && same_mapping(&frames[i], &frames[i - 1]))
				err = intern_location_in(p, &frames[i], prev_mapping, &loc);
			else
				err = intern_location(p, &frames[i], &loc);
			if (!err && known)
				*known = (struct id_location){ frames[i].id, loc };
		}
		if (!err)
			err = stack_tree__child(&p->tree, node, loc, &node);
		if (err)
			return err;
		prev_mapping = p->locs[loc].mapping;
	}
	stack_tree__count(&p->tree, node, count);
	return 0;
}

/* The frame location l of p stands for; strings point into p. */
static struct frame location_frame(const struct profile *p, const struct location *l)
{
	struct frame f = {
		.kind = l->kind, .name = strtab__get(&p->strings, l->name), .addr = l->addr,
		.file = l->file ? strtab__get(&p->strings, l->file) : NULL, .line = l->line,
		.inlined = l->inlined, .unnamed = l->unnamed,
	};

	if (l->mapping) {
		const struct mapping *m = &p->maps[l->mapping - 1];

		f.map_file = strtab__get(&p->strings, m->file);
		f.map_build_id = m->build_id ? strtab__get(&p->strings, m->build_id) : NULL;
		f.map_start = m->start;
		f.map_limit = m->limit;
		f.map_offset = m->offset;
	}
	return f;
}

/* The frames of p's node i, root first, into *frames (*cap entries,
 * grown); *depth gets their number. 0 or -ENOMEM. */
static int stack_frames(const struct profile *p, uint32_t i, struct frame **frames, size_t *cap,
			size_t *depth)
{
	const struct stack_node *nodes = p->tree.nodes;
	size_t k = 0;
	int err;

	for (uint32_t n = i; n != STACK_TREE_ROOT; n = nodes[n].parent)
		k++;
	err = array_reserve(*frames, *cap, k);
	if (err)
		return err;
	*depth = k;
	for (uint32_t n = i; n != STACK_TREE_ROOT; n = nodes[n].parent)
		(*frames)[--k] = location_frame(p, &p->locs[nodes[n].key]);
	return 0;
}

/* Adds the stack of src's node i to dst, count times; frames is scratch
 * (*cap entries). 0 or -ENOMEM. */
static int add_stack_of(struct profile *dst, const struct profile *src, uint32_t i,
			uint64_t count, struct frame **frames, size_t *cap)
{
	size_t depth;
	int err = stack_frames(src, i, frames, cap, &depth);

	return err ? err : profile__add(dst, *frames, depth, count);
}

int profile__merge_under(struct profile *dst, const struct profile *src, const struct frame *top)
{
	uint32_t *loc_of = malloc((src->nlocs ? src->nlocs : 1) * sizeof(*loc_of));
	uint32_t *node_of = malloc(src->tree.len * sizeof(*node_of));
	uint32_t under = STACK_TREE_ROOT, loc;
	int err = loc_of && node_of ? 0 : -ENOMEM;

	/* each location interned once, then the tree's shape copied: no
	 * stack is walked frame by frame */
	for (size_t i = 0; i < src->nlocs && !err; i++) {
		struct frame f = location_frame(src, &src->locs[i]);

		err = intern_location(dst, &f, &loc_of[i]);
	}
	if (!err && top && !(err = intern_location(dst, top, &loc)))
		err = stack_tree__child(&dst->tree, STACK_TREE_ROOT, loc, &under);
	if (!err)
		err = stack_tree__graft(&dst->tree, &src->tree, loc_of, node_of, under);
	for (size_t i = 1; i < src->tree.len && !err; i++)
		if (src->tree.nodes[i].self)
			stack_tree__count(&dst->tree, node_of[i], src->tree.nodes[i].self);
	free(loc_of);
	free(node_of);
	return err;
}

int profile__merge(struct profile *dst, const struct profile *src)
{
	return profile__merge_under(dst, src, NULL);
}

int profile__each_stack(const struct profile *p,
			int (*fn)(void *ctx, const struct frame *frames, size_t n, uint64_t count),
			void *ctx)
{
	struct frame *frames = NULL;
	size_t cap = 0, depth;
	int err = 0;

	for (uint32_t i = 1; i < p->tree.len && !err; i++)
		if (p->tree.nodes[i].self && !(err = stack_frames(p, i, &frames, &cap, &depth)))
			err = fn(ctx, frames, depth, p->tree.nodes[i].self);
	free(frames);
	return err;
}

size_t profile__stacks(const struct profile *p)
{
	size_t n = 0;

	for (size_t i = 1; i < p->tree.len; i++)
		n += p->tree.nodes[i].self != 0;
	return n;
}

/* Larger counts first, then tree order: deterministic. */
static int heavier_first(const void *a, const void *b, void *ctx)
{
	const struct stack_node *nodes = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (nodes[x].self != nodes[y].self)
		return nodes[x].self > nodes[y].self ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct profile *profile__top(const struct profile *p, size_t keep, uint64_t *folded)
{
	const struct stack_node *nodes = p->tree.nodes;
	size_t n = profile__stacks(p), k = 0, cap = 0;
	uint32_t *order = calloc(n ? n : 1, sizeof(*order));
	struct profile *out = profile__new();
	struct frame *frames = NULL;
	uint64_t rest = 0;
	int err = order && out ? 0 : -ENOMEM;

	for (uint32_t i = 1; !err && i < p->tree.len; i++)
		if (nodes[i].self)
			order[k++] = i;
	if (!err)
		qsort_r(order, n, sizeof(*order), heavier_first, (void *)nodes);
	if (n > keep && keep)
		keep--;         /* room for [other] */
	for (size_t i = 0; !err && i < n; i++) {
		if (i < keep)
			err = add_stack_of(out, p, order[i], nodes[order[i]].self, &frames, &cap);
		else
			rest += nodes[order[i]].self;
	}
	if (!err && rest) {
		struct frame other = { .kind = FRAME_ROOT, .name = "[other]" };

		err = profile__add(out, &other, 1, rest);
	}
	free(frames);
	free(order);
	if (err) {
		profile__free(out);
		errno = -err;
		return NULL;
	}
	*folded = rest;
	return out;
}

uint64_t profile__total(const struct profile *p)
{
	return p->tree.total;
}

size_t profile__nodes(const struct profile *p)
{
	return p->tree.len;
}

size_t profile__bytes(const struct profile *p)
{
	return sizeof(*p) + strtab__bytes(&p->strings) +
	       p->maps_cap * sizeof(*p->maps) + hashmap__bytes(&p->map_index) +
	       p->locs_cap * sizeof(*p->locs) + hashmap__bytes(&p->loc_index) +
	       (p->loc_memo ? LOC_MEMO * sizeof(*p->loc_memo) : 0) + stack_tree__bytes(&p->tree);
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	strtab__release(&p->strings);
	free(p->maps);
	hashmap__clear(&p->map_index);
	free(p->locs);
	hashmap__clear(&p->loc_index);
	free(p->loc_memo);
	free(p->id_memo);
	stack_tree__release(&p->tree);
	free(p);
}
