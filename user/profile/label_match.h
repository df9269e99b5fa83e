/* SPDX-License-Identifier: BSD-2-Clause */
/* Label selectors for reading profiles (kiln view and diff --match):
 * KEY=VALUE, KEY!=VALUE, KEY=~REGEX and KEY!~REGEX, as Prometheus and
 * Pyroscope write them; a regular expression (POSIX extended) matches the
 * whole value. A missing label has the empty value. */
#ifndef KILN_PROFILE_LABEL_MATCH_H
#define KILN_PROFILE_LABEL_MATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/labels.h"

#define LABEL_MATCH_MAX 32      /* selectors of one list */

struct label_match;

/* Adds the selector text to *m (created on first use). 0, or -EINVAL
 * with a one-line reason in why (why_len bytes), -E2BIG past
 * LABEL_MATCH_MAX, -ENOMEM. */
int label_match__add(struct label_match **m, const char *text, char *why, size_t why_len);
/* Whether l satisfies every selector of m (NULL: every set does). */
bool label_match__test(const struct label_match *m, const struct labels *l);
void label_match__free(struct label_match *m);

#endif
