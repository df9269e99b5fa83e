/* SPDX-License-Identifier: BSD-2-Clause */
/* Label sets, the unit every profile is grouped by: built by metadata,
 * keyed on by profile sets, written by the exporters. */
#ifndef KILN_CORE_LABELS_H
#define KILN_CORE_LABELS_H

#include <stdbool.h>
#include <stddef.h>

/* A canonical label set: pairs sorted by name, names unique, serialized as
 * "name\0value\0name\0value\0..." in buf[0..len). Equal label sets have
 * equal bytes, so buf/len can key a hash map. Caller-owned; reuse one
 * across calls, release with labels__release. */
struct labels {
	char *buf;
	size_t len, cap;
	size_t n;                       /* pairs */
};

/* The value of name, or NULL. */
const char *labels__get(const struct labels *l, const char *name);
/* Iterates pairs: start with *pos = 0; returns false at the end. */
bool labels__next(const struct labels *l, size_t *pos, const char **name,
		  const char **value);
/* Grows l's buffer to hold need bytes. 0 or -ENOMEM. */
int labels__reserve(struct labels *l, size_t need);
int labels__copy(struct labels *dst, const struct labels *src);
void labels__release(struct labels *l);

#endif
