/* SPDX-License-Identifier: BSD-2-Clause */
/* One generation's samples as they come from the ring: the stacks the
 * CPUs sent (by id) and a count per sample key, each table bounded, until
 * the drain hands them over. */
#ifndef KILN_SAMPLER_SAMPLE_TABLE_H
#define KILN_SAMPLER_SAMPLE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hashmap.h"
#include "kiln/sample.h"

/* One drained sample key with its stacks (ips, innermost first). */
struct drained_sample {
	const struct kiln_sample_key *key;
	uint64_t count;
	const uint64_t *kips;
	uint32_t kn;
	const uint64_t *uips;
	uint32_t un;
	uint32_t uflags;                /* KILN_STACK_* of the user stack */
};

struct drain_stats {
	uint64_t outcomes[KILN_OUTCOME_COUNT]; /* this generation */
	uint64_t drained;               /* sum of drained counts */
	uint64_t keys;
	uint64_t stacks_missing;        /* stack ids with no stack sent */
	uint64_t ustack_flags[5];       /* samples whose user stack has each KILN_STACK_* bit */
	uint64_t duration_ns;
};

typedef void (*sample_fn)(const struct drained_sample *s, void *ctx);

struct stack_slot;
struct sample_entry;

struct sample_table {
	uint32_t gen; /* the generation it holds */
	uint32_t max_keys, max_stacks; /* bounds */
	struct hashmap stack_ids; /* stack id -> slot index + 1 */
	struct stack_slot *slots;
	size_t nslots, slots_cap;
	uint64_t *frames;
	size_t frames_len, frames_cap;
	struct hashmap key_idx; /* hash of a key -> entry index + 1 */
	struct sample_entry *entries;
	size_t nentries, entries_cap;
	uint64_t stacks_refused; /* stacks not kept: the table full */
	uint64_t dropped_stack; /* samples whose stack was not kept */
	uint64_t dropped_keys; /* samples of a new key, the table full */
};

void sample_table__init(struct sample_table *t, uint32_t gen, uint32_t max_keys,
			uint32_t max_stacks);
/* A KILN_REC_STACK record of size bytes (checked here). */
void sample_table__add_stack(struct sample_table *t, const struct kiln_stack_rec *r, size_t size);
/* A KILN_REC_SAMPLE record (count samples of its key). True when it is
 * the generation's first of its key; then *first (unless NULL) is that key with its stacks, valid
 * until the next record. */
bool sample_table__add_sample(struct sample_table *t, const struct kiln_sample_rec *r,
			      struct drained_sample *first);
/* Hands every key with its stacks to fn; fills st's drained, keys,
 * stacks_missing and ustack_flags, and moves the samples user space
 * dropped from st->outcomes[KILN_SAMPLED] to their reasons. */
void sample_table__emit(const struct sample_table *t, sample_fn fn, void *ctx,
			struct drain_stats *st);
/* Empties t for generation gen; keeps its arrays for the next. */
void sample_table__reset(struct sample_table *t, uint32_t gen);
void sample_table__free(struct sample_table *t);

#endif
