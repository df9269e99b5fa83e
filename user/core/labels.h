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
/* Sets l to the n pairs names[i]=values[i], sorted by name; of pairs with
 * one name the first is kept. 0 or -ENOMEM. */
int labels__set_pairs(struct labels *l, const char *const *names, const char *const *values,
		      size_t n);

/* The text form of a label set, one string: every name and value followed
 * by LABELS_TEXT_SEP (one inside a name or value becomes '?'). How a
 * profile keeps a stack's labels (a FRAME_LABELS frame's name). */
#define LABELS_TEXT_SEP '\x1f'
/* Bytes of a text form kiln writes or reads: metadata's sets (at most 30
 * labels of 1 KiB names and 2 KiB values) fit. */
#define LABELS_TEXT_MAX (96u << 10)
/* l's text form into buf (cap bytes, NUL-terminated). Its length, or
 * -ENOSPC when it does not fit. */
int labels__to_text(const struct labels *l, char *buf, size_t cap);
/* Reads labels__to_text's form into l. 0, -EINVAL (an odd count of
 * strings, names out of order or repeated) or -ENOMEM. */
int labels__from_text(struct labels *l, const char *text);
void labels__release(struct labels *l);

#endif
