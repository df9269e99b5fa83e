// SPDX-License-Identifier: BSD-2-Clause
/* The store of samples held for their debug files: copies, the byte
 * bound, handing them back as they were drained. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/deferred.h"
#include "unit_helpers.h"

static const uint64_t kips[] = { 0xffffffff81000010ull, 0xffffffff81000020ull };
static const uint64_t uips[] = { 0x401000, 0x401100, 0x401200 };

static struct drained_sample sample(struct kiln_sample_key *key, uint64_t count)
{
	memset(key, 0, sizeof(*key));
	key->pid = 42;
	key->instance = 7;
	strcpy(key->comm, "prog");
	return (struct drained_sample){ .key = key,
					.count = count,
					.kips = kips,
					.kn = 2,
					.uips = uips,
					.un = 3,
					.uflags = 1 };
}

Test(deferred, copies_and_hands_back)
{
	struct deferred q;
	struct kiln_sample_key key;
	struct drained_sample d = sample(&key, 5), back;
	struct deferred_sample **v;
	struct labels group = { 0 };
	size_t n;

	labels_of_pairs(&group, "service_name", "prog", NULL);
	deferred__init(&q, 1 << 20);
	cr_assert_eq(deferred__add(&q, &d, NULL, &group, 1), 0);
	/* a stack the sampler did not take comes as (NULL, 0) */
	d.kips = NULL;
	d.kn = 0;
	cr_assert_eq(deferred__add(&q, &d, NULL, &group, 2), 0);
	key.pid = 1; /* the store kept its own copy */
	labels__release(&group);
	cr_assert_gt(q.bytes, 0);
	v = deferred__take(&q, &n);
	cr_assert_eq(n, 2);
	cr_assert_eq(q.n, 0);
	cr_assert_eq(q.bytes, 0);
	back = deferred__sample(v[0]);
	cr_assert_eq(back.key->pid, 42);
	cr_assert_str_eq(back.key->comm, "prog");
	cr_assert_eq(back.count, 5);
	cr_assert_eq(back.kn, 2);
	cr_assert_eq(back.un, 3);
	cr_assert_eq(back.uflags, 1);
	cr_assert_arr_eq(back.kips, kips, sizeof(kips));
	cr_assert_arr_eq(back.uips, uips, sizeof(uips));
	cr_assert_str_eq(labels__get(&v[0]->group, "service_name"), "prog");
	cr_assert_eq(v[0]->waiting, 1);
	back = deferred__sample(v[1]);
	cr_assert_eq(v[1]->waiting, 2, "what a sample waits for is kept");
	cr_assert_eq(back.kn, 0);
	cr_assert_arr_eq(back.uips, uips, sizeof(uips));
	deferred__free_sample(v[0]);
	deferred__free_sample(v[1]);
	free(v);
	deferred__release(&q);
}

Test(deferred, bounded_in_bytes)
{
	struct deferred q;
	struct kiln_sample_key key;
	struct drained_sample d = sample(&key, 1);
	struct labels group = { 0 };
	size_t held = 0;
	int err;

	deferred__init(&q, 4096);
	while ((err = deferred__add(&q, &d, NULL, &group, 1)) == 0)
		held++;
	cr_assert_eq(err, -ENOSPC);
	cr_assert_gt(held, 10);
	cr_assert_leq(q.bytes, 4096);
	cr_assert_eq(q.n, held);
	deferred__release(&q);
	cr_assert_eq(q.n, 0);
	cr_assert_eq(q.max_bytes, 4096);
}
