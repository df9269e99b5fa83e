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
