// SPDX-License-Identifier: BSD-2-Clause
/* Samples held until their names can be complete (deferred.h). A sample
 * costs its struct, its ips and its group's labels, all counted against
 * max_bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/deferred.h"

void deferred__init(struct deferred *q, size_t max_bytes)
{
	memset(q, 0, sizeof(*q));
	q->max_bytes = max_bytes;
}

static size_t sample_bytes(const struct deferred_sample *s)
{
	return sizeof(*s) + (s->kn + s->un) * sizeof(s->ips[0]) + s->group.len;
}

int deferred__add(struct deferred *q, const struct drained_sample *d, struct proc_snapshot *snap,
		  const struct labels *group, unsigned waiting)
{
	size_t ips = (size_t)d->kn + d->un;
	size_t need = sizeof(struct deferred_sample) + ips * sizeof(uint64_t) + group->len;
	struct deferred_sample *s;

	if (q->bytes + need > q->max_bytes)
		return -ENOSPC;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct deferred_sample **v = realloc(q->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	s = calloc(1, sizeof(*s) + ips * sizeof(s->ips[0]));
	if (!s || labels__copy(&s->group, group)) {
		free(s);
		return -ENOMEM;
	}
	s->key = *d->key;
	s->snap = snap;
	s->count = d->count;
	s->kn = d->kn;
	s->un = d->un;
	s->uflags = d->uflags;
	s->waiting = waiting;
	/* A stack the sampler did not take comes as (NULL, 0). */
	if (d->kn)
		memcpy(s->ips, d->kips, d->kn * sizeof(s->ips[0]));
	if (d->un)
		memcpy(s->ips + d->kn, d->uips, d->un * sizeof(s->ips[0]));
	q->v[q->n++] = s;
	q->bytes += sample_bytes(s);
	return 0;
}

struct drained_sample deferred__sample(const struct deferred_sample *s)
{
	return (struct drained_sample){
		.key = &s->key,
		.count = s->count,
		.kips = s->ips,
		.kn = s->kn,
		.uips = s->ips + s->kn,
		.un = s->un,
		.uflags = s->uflags,
	};
}

struct deferred_sample **deferred__take(struct deferred *q, size_t *n)
{
	struct deferred_sample **v = q->v;

	*n = q->n;
	q->v = NULL;
	q->n = q->cap = q->bytes = 0;
	return v;
}

void deferred__free_sample(struct deferred_sample *s)
{
	if (!s)
		return;
	labels__release(&s->group);
	free(s);
}

void deferred__release(struct deferred *q)
{
	for (size_t i = 0; i < q->n; i++)
		deferred__free_sample(q->v[i]);
	free(q->v);
	deferred__init(q, q->max_bytes);
}
