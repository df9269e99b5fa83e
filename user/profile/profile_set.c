// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile_set.h"

struct profile_set {
	struct profile_set_entry *entries;
	size_t n, cap, max;
	struct hashmap index;
};

static bool entry_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct profile_set *s = ctx;
	const struct labels *a = &s->entries[idx].labels, *b = key;

	return a->len == b->len && (a->len == 0 || memcmp(a->buf, b->buf, a->len) == 0);
}

struct profile_set *profile_set__new(size_t max_sets)
{
	struct profile_set *s = calloc(1, sizeof(*s));

	if (s)
		s->max = max_sets;
	return s;
}

struct profile_set_entry *profile_set__get(struct profile_set *s, const struct labels *labels,
					   int *err)
{
	uint64_t h = hash__bytes(labels->buf, labels->len);
	uint32_t idx = hashmap__find_idx(&s->index, h, entry_eq, s, labels);
	struct profile_set_entry *e;

	if (idx != HASHMAP_NO_INDEX)
		return &s->entries[idx];
	if (s->n >= s->max) {
		*err = -ENOSPC;
		return NULL;
	}
	*err = -ENOMEM;
	if (array_reserve(s->entries, s->cap, s->n + 1))
		return NULL;
	e = &s->entries[s->n];
	memset(e, 0, sizeof(*e));
	e->profile = profile__new();
	if (!e->profile || labels__copy(&e->labels, labels) ||
	    hashmap__add_idx(&s->index, h, (uint32_t)s->n)) {
		profile__free(e->profile);
		labels__release(&e->labels);
		return NULL;
	}
	s->n++;
	*err = 0;
	return e;
}

size_t profile_set__count(const struct profile_set *s)
{
	return s->n;
}

struct profile_set_entry *profile_set__entry(struct profile_set *s, size_t i)
{
	return i < s->n ? &s->entries[i] : NULL;
}

uint64_t profile_set__total(const struct profile_set *s)
{
	uint64_t t = 0;

	for (size_t i = 0; i < s->n; i++)
		t += profile__total(s->entries[i].profile);
	return t;
}

size_t profile_set__bytes(const struct profile_set *s)
{
	size_t b = sizeof(*s) + s->cap * sizeof(*s->entries) + hashmap__bytes(&s->index);

	for (size_t i = 0; i < s->n; i++)
		b += profile__bytes(s->entries[i].profile) + s->entries[i].labels.cap;
	return b;
}

void profile_set__free(struct profile_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		profile__free(s->entries[i].profile);
		labels__release(&s->entries[i].labels);
	}
	free(s->entries);
	hashmap__clear(&s->index);
	free(s);
}

struct split {
	struct profile_set *set;
	struct labels labels;
};

static int split_stack(void *ctx, const struct frame *frames, size_t n, uint64_t count)
{
	struct split *sp = ctx;
	size_t first = frames[0].kind == FRAME_LABELS;
	struct profile_set_entry *e;
	int err = 0;

	sp->labels.len = sp->labels.n = 0;
	if (first && (err = labels__from_text(&sp->labels, frames[0].name)))
		return err;
	if (n == first)
		return 0;       /* labels and nothing else: no stack to add */
	e = profile_set__get(sp->set, &sp->labels, &err);
	if (!e)
		return err;
	e->samples += count;
	return profile__add(e->profile, frames + first, n - first, count);
}

int profile_set__split(struct profile_set *set, const struct profile *src)
{
	struct split sp = { set, { 0 } };
	int err = profile__each_stack(src, split_stack, &sp);

	labels__release(&sp.labels);
	return err;
}
