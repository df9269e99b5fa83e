/* SPDX-License-Identifier: BSD-2-Clause */
/* Drained samples held back because a frame of theirs waits for a debug
 * file being looked up, or for the perf map its live process writes as it
 * exits (symbolizer__waiting), so that they are named with it once it
 * arrived, or once the lookups ended or were given up: kiln
 * record writes one profile at the end, and a sample named at the first
 * drain would keep its bare address for good. Bounded in bytes; a sample
 * that does not fit is the caller's to name at once. */
#ifndef KILN_SYMBOLIZE_DEFERRED_H
#define KILN_SYMBOLIZE_DEFERRED_H

#include <stddef.h>
#include <stdint.h>

#include "core/labels.h"
#include "proc/proc.h"
#include "sampler/sampler.h"

struct deferred_sample {
	struct kiln_sample_key key;
	struct proc_snapshot *snap; /* the caller keeps it alive (proc_table__pin), or NULL */
	struct labels group; /* the labels of the profile it goes to */
	uint64_t count;
	uint32_t kn, un, uflags;
	unsigned waiting; /* SYMBOLIZER_WAIT_*: what its frames waited for when held */
	uint64_t ips[]; /* kn kernel ips, then un user ips */
};

struct deferred {
	struct deferred_sample **v;
	size_t n, cap;
	size_t bytes, max_bytes;
};

void deferred__init(struct deferred *q, size_t max_bytes);
/* Keeps a copy of d (its key, stacks and group) and what it waits for. 0,
 * -ENOSPC when it would pass max_bytes, -ENOMEM. */
int deferred__add(struct deferred *q, const struct drained_sample *d, struct proc_snapshot *snap,
		  const struct labels *group, unsigned waiting);
/* The sample as the drain handed it over, pointing into s. */
struct drained_sample deferred__sample(const struct deferred_sample *s);
/* Hands every held sample over (*n of them) and empties q; the caller
 * frees each with deferred__free_sample, then the array with free(). */
struct deferred_sample **deferred__take(struct deferred *q, size_t *n);
void deferred__free_sample(struct deferred_sample *s);
void deferred__release(struct deferred *q);

#endif
