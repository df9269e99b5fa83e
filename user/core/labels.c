/* SPDX-License-Identifier: BSD-2-Clause */
/* Label sets: sorted name/value pairs in one buffer (core/labels.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/labels.h"

const char *labels__get(const struct labels *l, const char *name)
{
	size_t pos = 0;
	const char *n, *v;

	while (labels__next(l, &pos, &n, &v))
		if (strcmp(n, name) == 0)
			return v;
	return NULL;
}

bool labels__next(const struct labels *l, size_t *pos, const char **name,
		  const char **value)
{
	size_t p = *pos;

	if (!l->buf || p >= l->len)
		return false;
	*name = l->buf + p;
	p += strlen(*name) + 1;
	if (p >= l->len)
		return false;
	*value = l->buf + p;
	*pos = p + strlen(*value) + 1;
	return true;
}

int labels__reserve(struct labels *l, size_t need)
{
	char *b;
	size_t cap;

	if (need <= l->cap)
		return 0;
	cap = l->cap ? l->cap : 256;
	while (cap < need)
		cap *= 2;
	b = realloc(l->buf, cap);
	if (!b)
		return -ENOMEM;
	l->buf = b;
	l->cap = cap;
	return 0;
}

int labels__copy(struct labels *dst, const struct labels *src)
{
	if (labels__reserve(dst, src->len))
		return -ENOMEM;
	if (src->len)
		memcpy(dst->buf, src->buf, src->len);
	dst->len = src->len;
	dst->n = src->n;
	return 0;
}

void labels__release(struct labels *l)
{
	if (!l)
		return;
	free(l->buf);
	*l = (struct labels){ 0 };
}

struct pair {
	const char *name, *value;
	size_t order;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->order < y->order ? -1 : x->order > y->order;
}

int labels__set_pairs(struct labels *l, const char *const *names, const char *const *values,
		      size_t n)
{
	struct pair *v = calloc(n ? n : 1, sizeof(*v));
	size_t need = 0, at = 0;
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct pair){ names[i], values[i], i };
		need += strlen(names[i]) + strlen(values[i]) + 2;
	}
	qsort(v, n, sizeof(*v), pair_cmp);
	err = labels__reserve(l, need);
	l->len = l->n = 0;
	for (size_t i = 0; i < n && !err; i++) {
		size_t nl = strlen(v[i].name) + 1, vl = strlen(v[i].value) + 1;

		if (i && !strcmp(v[i].name, v[i - 1].name))
			continue;
		memcpy(l->buf + at, v[i].name, nl);
		memcpy(l->buf + at + nl, v[i].value, vl);
		at += nl + vl;
		l->n++;
	}
	l->len = at;
	free(v);
	return err;
}

int labels__to_text(const struct labels *l, char *buf, size_t cap)
{
	if (l->len + 1 > cap)
		return -ENOSPC;
	for (size_t i = 0; i < l->len; i++)
		buf[i] = l->buf[i] == '\0' ? LABELS_TEXT_SEP :
			 l->buf[i] == LABELS_TEXT_SEP ? '?' : l->buf[i];
	buf[l->len] = '\0';
	return (int)l->len;
}

int labels__from_text(struct labels *l, const char *text)
{
	size_t len = strlen(text), strings = 0;
	const char *prev = NULL;

	if (labels__reserve(l, len + 1))
		return -ENOMEM;
	memcpy(l->buf, text, len);
	l->len = l->n = 0;
	for (size_t i = 0; i < len; i++) {
		if (l->buf[i] != LABELS_TEXT_SEP)
			continue;
		l->buf[i] = '\0';
		strings++;
	}
	if (len && text[len - 1] != LABELS_TEXT_SEP)
		return -EINVAL;
	if (strings % 2)
		return -EINVAL;
	l->len = len;
	l->n = strings / 2;
	/* names sorted and unique: the canonical form */
	for (size_t pos = 0; pos < l->len;) {
		const char *name = l->buf + pos;

		if (prev && strcmp(prev, name) >= 0) {
			l->len = l->n = 0;
			return -EINVAL;
		}
		prev = name;
		pos += strlen(name) + 1;
		pos += strlen(l->buf + pos) + 1;
	}
	return 0;
}
