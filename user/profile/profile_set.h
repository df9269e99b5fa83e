/* SPDX-License-Identifier: BSD-2-Clause */
/* The profiles of one interval, one per label set. Label sets are the
 * metadata stage's canonical byte strings, so equal sets share a profile. */
#ifndef KILN_PROFILE_PROFILE_SET_H
#define KILN_PROFILE_PROFILE_SET_H

#include <stddef.h>
#include <stdint.h>

#include "core/labels.h"
#include "profile/profile.h"

struct profile_set_entry {
	struct labels labels;           /* owned copy */
	struct profile *profile;
	uint64_t samples;               /* routed here, whether added or not */
};

struct profile_set;

/* max_sets bounds the distinct label sets of one interval. */
struct profile_set *profile_set__new(size_t max_sets);
/* The entry of labels, created empty on first use. NULL with -ENOSPC in
 * *err when max_sets are held, -ENOMEM when out of memory. */
struct profile_set_entry *profile_set__get(struct profile_set *s, const struct labels *labels,
					   int *err);
size_t profile_set__count(const struct profile_set *s);
struct profile_set_entry *profile_set__entry(struct profile_set *s, size_t i);
uint64_t profile_set__total(const struct profile_set *s);
size_t profile_set__bytes(const struct profile_set *s);
void profile_set__free(struct profile_set *s);
/* Adds every stack of src to set, each under the labels of its leading
 * FRAME_LABELS frame (which is not added; stacks without one go under the
 * empty set): one profile of several label sets (kiln record's) split
 * into one profile per set. 0, -ENOSPC (max_sets), -EINVAL (a label
 * frame that is no label set) or -ENOMEM; set then holds part of src. */
int profile_set__split(struct profile_set *set, const struct profile *src);

#endif
