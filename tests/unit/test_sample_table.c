/* SPDX-License-Identifier: BSD-2-Clause */
/* sampler/sample_table: a generation's samples and stacks as the ring
 * brings them, its bounds, and what the drain is handed. */
#include <criterion/criterion.h>
#include <string.h>

#include "sampler/sample_table.h"

static struct kiln_stack_rec stack_rec(uint64_t id, uint32_t len, uint64_t first_ip)
{
	struct kiln_stack_rec r = { .type = KILN_REC_STACK, .id = id };

	r.stack.len = len;
	r.stack.flags = KILN_STACK_TABLES | KILN_STACK_ROOT;
	for (uint32_t i = 0; i < len; i++)
		r.stack.ips[i] = first_ip + i;
	return r;
}

static struct kiln_sample_rec sample_rec(uint32_t pid, uint64_t kstack, uint64_t ustack)
{
	struct kiln_sample_rec r = { .type = KILN_REC_SAMPLE, .count = 1 };

	r.key.pid = pid;
	r.key.instance = 1;
	r.key.kstack = kstack;
	r.key.ustack = ustack;
	memcpy(r.key.comm, "worker", 7);
	return r;
}

struct seen {
	unsigned n;
	uint64_t count[8];
	uint32_t pid[8], kn[8], un[8], uflags[8];
	uint64_t uip0[8];
};

static void collect(const struct drained_sample *d, void *ctx)
{
	struct seen *s = ctx;

	cr_assert_lt(s->n, 8);
	s->count[s->n] = d->count;
	s->pid[s->n] = d->key->pid;
	s->kn[s->n] = d->kn;
	s->un[s->n] = d->un;
	s->uflags[s->n] = d->uflags;
	s->uip0[s->n] = d->un ? d->uips[0] : 0;
	s->n++;
}

/* The drain's view: BPF counted sampled records of the generation. */
static void drain(const struct sample_table *t, uint64_t sampled, struct seen *seen,
		  struct drain_stats *st)
{
	memset(seen, 0, sizeof(*seen));
	memset(st, 0, sizeof(*st));
	st->outcomes[KILN_SAMPLED] = sampled;
	sample_table__emit(t, collect, seen, st);
}

Test(sample_table, adds_up_keys_with_their_stacks)
{
	struct sample_table t;
	struct kiln_stack_rec u = stack_rec(0x1234, 5, 0x400000),
			      k = stack_rec(0x99, 3, 0xffff0000);
	struct kiln_sample_rec a = sample_rec(10, 0, 0x1234), b = sample_rec(11, 0x99, 0x1234);
	struct drain_stats st;
	struct seen seen;

	sample_table__init(&t, 4, 16, 16);
	sample_table__add_stack(&t, &u, KILN_STACK_REC_BYTES(5));
	sample_table__add_stack(&t, &u, KILN_STACK_REC_BYTES(5)); /* another CPU's copy */
	sample_table__add_stack(&t, &k, KILN_STACK_REC_BYTES(3));
	for (int i = 0; i < 3; i++)
		sample_table__add_sample(&t, &a, NULL);
	sample_table__add_sample(&t, &b, NULL);
	drain(&t, 4, &seen, &st);

	cr_assert_eq(seen.n, 2);
	cr_assert_eq(seen.count[0], 3);
	cr_assert_eq(seen.pid[0], 10);
	cr_assert_eq(seen.kn[0], 0);
	cr_assert_eq(seen.un[0], 5);
	cr_assert_eq(seen.uip0[0], 0x400000);
	cr_assert_eq(seen.uflags[0], KILN_STACK_TABLES | KILN_STACK_ROOT);
	cr_assert_eq(seen.count[1], 1);
	cr_assert_eq(seen.kn[1], 3);
	cr_assert_eq(st.drained, 4);
	cr_assert_eq(st.keys, 2);
	cr_assert_eq(st.stacks_missing, 0);
	cr_assert_eq(st.outcomes[KILN_SAMPLED], 4);
	cr_assert_eq(st.ustack_flags[1], 4); /* KILN_STACK_ROOT's bit */

	/* Emptied for a later generation: nothing of this one is left. */
	sample_table__reset(&t, 6);
	drain(&t, 0, &seen, &st);
	cr_assert_eq(seen.n, 0);
	cr_assert_eq(t.gen, 6);
	sample_table__free(&t);
}

/* The first sample of a key in a generation comes with its stacks, so
 * that what only a live process can say is read at once; later ones, and
 * one dropped, say nothing. */
Test(sample_table, first_sample_of_a_key_comes_with_its_stacks)
{
	struct sample_table t;
	struct kiln_stack_rec u = stack_rec(0x1234, 4, 0x500000);
	struct kiln_sample_rec a = sample_rec(10, 0, 0x1234), b = sample_rec(11, 0, 0x1234);
	struct drained_sample first;

	sample_table__init(&t, 2, 2, 16);
	sample_table__add_stack(&t, &u, KILN_STACK_REC_BYTES(4));
	cr_assert(sample_table__add_sample(&t, &a, &first));
	cr_assert_eq(first.key->pid, 10);
	cr_assert_eq(first.count, 1);
	cr_assert_eq(first.un, 4);
	cr_assert_eq(first.uips[3], 0x500003);
	cr_assert_eq(first.kn, 0);
	cr_assert_not(sample_table__add_sample(&t, &a, &first));
	cr_assert(sample_table__add_sample(&t, &b, NULL));
	b.key.pid = 12;
	cr_assert_not(sample_table__add_sample(&t, &b, &first)); /* over max_keys */
	cr_assert_eq(t.dropped_keys, 1);
	/* The next generation: first again. */
	sample_table__reset(&t, 4);
	sample_table__add_stack(&t, &u, KILN_STACK_REC_BYTES(4));
	cr_assert(sample_table__add_sample(&t, &a, &first));
	cr_assert_eq(first.uips[0], 0x500000);
	sample_table__free(&t);
}

Test(sample_table, full_tables_drop_and_count_never_show_a_stack_missing)
{
	struct sample_table t;
	struct kiln_stack_rec s1 = stack_rec(1, 2, 0x1000), s2 = stack_rec(2, 2, 0x2000);
	struct kiln_sample_rec on1 = sample_rec(1, 0, 1), on2 = sample_rec(2, 0, 2);
	struct kiln_sample_rec other = sample_rec(3, 0, 1);
	struct drain_stats st;
	struct seen seen;

	sample_table__init(&t, 0, 1, 1); /* one key, one stack */
	sample_table__add_stack(&t, &s1, KILN_STACK_REC_BYTES(2));
	sample_table__add_stack(&t, &s2, KILN_STACK_REC_BYTES(2)); /* refused */
	sample_table__add_sample(&t, &on1, NULL);
	sample_table__add_sample(&t, &on2, NULL); /* its stack refused: dropped */
	sample_table__add_sample(&t, &other, NULL); /* a second key: dropped */
	sample_table__add_sample(&t, &on1, NULL);
	drain(&t, 4, &seen, &st);

	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.count[0], 2);
	cr_assert_eq(st.drained, 2);
	cr_assert_eq(st.outcomes[KILN_SAMPLED], 2);
	cr_assert_eq(st.outcomes[KILN_DROP_STACK_FULL], 1);
	cr_assert_eq(st.outcomes[KILN_DROP_COUNTS_FULL], 1);
	cr_assert_eq(st.stacks_missing, 0);
	sample_table__free(&t);
}

Test(sample_table, refuses_malformed_stack_records)
{
	struct sample_table t;
	struct kiln_stack_rec r = stack_rec(7, 4, 0x1000);
	struct kiln_sample_rec s = sample_rec(1, 0, 7);
	struct drain_stats st;
	struct seen seen;

	sample_table__init(&t, 0, 8, 8);
	sample_table__add_stack(&t, &r, KILN_STACK_REC_BYTES(3)); /* shorter than its len */
	r.stack.len = KILN_MAX_STACK_DEPTH + 1;
	sample_table__add_stack(&t, &r, sizeof(r));
	sample_table__add_sample(&t, &s, NULL);
	drain(&t, 1, &seen, &st);

	/* Not refused for room: the sample stays, and the missing stack is
	 * counted. */
	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.un[0], 0);
	cr_assert_eq(st.stacks_missing, 1);
	sample_table__free(&t);
}
