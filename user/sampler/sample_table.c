// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: a CPU sends a stack before the first sample of a generation
 * that uses it, and the ring keeps each CPU's order, so a sample's stacks
 * are in the table when the sample comes, unless the table was full then:
 * such a sample is dropped and counted, never shown without its frames. */
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/hash.h"
#include "sampler/sample_table.h"

/* A stack kept: frames[off, off + n). */
struct stack_slot {
	uint32_t n, flags;
	uint64_t off;
};

struct sample_entry {
	struct kiln_sample_key key;
	uint64_t count;
};

void sample_table__init(struct sample_table *t, uint32_t gen, uint32_t max_keys,
			uint32_t max_stacks)
{
	memset(t, 0, sizeof(*t));
	t->gen = gen;
	t->max_keys = max_keys;
	t->max_stacks = max_stacks;
}

void sample_table__add_stack(struct sample_table *t, const struct kiln_stack_rec *r, size_t size)
{
	uint32_t len = r->stack.len;

	if (len == 0 || len > KILN_MAX_STACK_DEPTH || size < KILN_STACK_REC_BYTES(len) ||
	    r->id == 0 || hashmap__get_u64(&t->stack_ids, r->id))
		return; /* malformed, or sent by another CPU too */
	if (t->nslots >= t->max_stacks || array_reserve(t->slots, t->slots_cap, t->nslots + 1) ||
	    array_reserve(t->frames, t->frames_cap, t->frames_len + len) ||
	    hashmap__put_u64(&t->stack_ids, r->id, (void *)(uintptr_t)(t->nslots + 1))) {
		t->stacks_refused++;
		return;
	}
	t->slots[t->nslots++] =
		(struct stack_slot){ .n = len, .flags = r->stack.flags, .off = t->frames_len };
	memcpy(t->frames + t->frames_len, r->stack.ips, len * sizeof(uint64_t));
	t->frames_len += len;
}

static bool key_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct sample_table *t = ctx;

	return memcmp(&t->entries[idx].key, key, sizeof(struct kiln_sample_key)) == 0;
}

/* Whether stack id (0: none) is missing because the table refused it. */
static bool stack_refused(const struct sample_table *t, uint64_t id)
{
	return id && t->stacks_refused && !hashmap__get_u64(&t->stack_ids, id);
}

static const uint64_t *stack_frames(const struct sample_table *t, uint64_t id, uint32_t *n,
				    uint32_t *flags, uint64_t *missing)
{
	uintptr_t idx = id ? (uintptr_t)hashmap__get_u64(&t->stack_ids, id) : 0;
	const struct stack_slot *slot = idx ? &t->slots[idx - 1] : NULL;

	if (id && !slot && missing)
		(*missing)++;
	*n = slot ? slot->n : 0;
	*flags = slot ? slot->flags : 0;
	return slot ? t->frames + slot->off : NULL;
}

/* Entry e with its stacks as d; counts stacks not there in *missing
 * (NULL: not counted). */
static void entry_sample(const struct sample_table *t, const struct sample_entry *e,
			 struct drained_sample *d, uint64_t *missing)
{
	uint32_t kflags;

	*d = (struct drained_sample){ .key = &e->key, .count = e->count };
	d->kips = stack_frames(t, e->key.kstack, &d->kn, &kflags, missing);
	d->uips = stack_frames(t, e->key.ustack, &d->un, &d->uflags, missing);
}

bool sample_table__add_sample(struct sample_table *t, const struct kiln_sample_rec *r,
			      struct drained_sample *first)
{
	uint64_t h = hash__bytes(&r->key, sizeof(r->key));
	uint32_t idx = hashmap__find_idx(&t->key_idx, h, key_eq, t, &r->key);

	if (idx != HASHMAP_NO_INDEX) {
		t->entries[idx].count += r->count;
		return false;
	}
	if (stack_refused(t, r->key.kstack) || stack_refused(t, r->key.ustack)) {
		t->dropped_stack += r->count;
		return false;
	}
	if (t->nentries >= t->max_keys ||
	    array_reserve(t->entries, t->entries_cap, t->nentries + 1) ||
	    hashmap__add_idx(&t->key_idx, h, (uint32_t)t->nentries)) {
		t->dropped_keys += r->count;
		return false;
	}
	t->entries[t->nentries++] = (struct sample_entry){ .key = r->key, .count = r->count };
	if (first)
		entry_sample(t, &t->entries[t->nentries - 1], first, NULL);
	return true;
}

void sample_table__emit(const struct sample_table *t, sample_fn fn, void *ctx,
			struct drain_stats *st)
{
	uint64_t dropped = t->dropped_stack + t->dropped_keys;

	st->outcomes[KILN_DROP_STACK_FULL] += t->dropped_stack;
	st->outcomes[KILN_DROP_COUNTS_FULL] += t->dropped_keys;
	st->outcomes[KILN_SAMPLED] -=
		dropped < st->outcomes[KILN_SAMPLED] ? dropped : st->outcomes[KILN_SAMPLED];
	for (size_t i = 0; i < t->nentries; i++) {
		struct drained_sample d;

		entry_sample(t, &t->entries[i], &d, &st->stacks_missing);
		for (unsigned b = 0; b < sizeof(st->ustack_flags) / sizeof(st->ustack_flags[0]);
		     b++)
			if (d.uflags & (1u << b))
				st->ustack_flags[b] += d.count;
		st->drained += d.count;
		st->keys++;
		fn(&d, ctx);
	}
}

void sample_table__reset(struct sample_table *t, uint32_t gen)
{
	hashmap__clear(&t->stack_ids);
	hashmap__clear(&t->key_idx);
	t->gen = gen;
	t->nslots = t->frames_len = t->nentries = 0;
	t->stacks_refused = t->dropped_stack = t->dropped_keys = 0;
}

void sample_table__free(struct sample_table *t)
{
	hashmap__clear(&t->stack_ids);
	hashmap__clear(&t->key_idx);
	free(t->slots);
	free(t->frames);
	free(t->entries);
	memset(t, 0, sizeof(*t));
}
