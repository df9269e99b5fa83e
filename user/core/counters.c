/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "core/counters.h"

double counter__value(const struct counter *c, const void *snap)
{
	const char *field = (const char *)snap + c->offset;

	switch (c->kind) {
	case COUNTER_U64:
		return (double)*(const uint64_t *)field;
	case COUNTER_BOOL:
		return *(const bool *)field ? 1 : 0;
	case COUNTER_DOUBLE:
		return *(const double *)field;
	case COUNTER_NS:
		return (double)*(const uint64_t *)field / 1e9;
	case COUNTER_GET:
		return c->get(snap);
	}
	return 0;
}

int counters__write_metrics(const struct counter *rows, size_t n, const void *snap,
			    struct metrics_buf *b)
{
	const char *family = NULL;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		const struct counter *c = &rows[i];
		struct metrics_label l = { c->label, c->label_value };

		if (!c->metric)
			continue;
		if (!family || strcmp(family, c->metric)) {
			family = c->metric;
			err = metrics_buf__family(b, c->metric, c->type, c->help);
			if (err)
				break;
		}
		/* Integers stay exact: a u64 is written as one, not as a double. */
		if (c->kind == COUNTER_U64 || c->kind == COUNTER_BOOL)
			err = metrics_buf__u64(b, c->label ? &l : NULL, c->label ? 1 : 0,
					       c->kind == COUNTER_BOOL ?
					       (uint64_t)counter__value(c, snap) :
					       *(const uint64_t *)((const char *)snap + c->offset));
		else
			err = metrics_buf__double(b, c->label ? &l : NULL, c->label ? 1 : 0,
						  counter__value(c, snap));
	}
	return err;
}

/* The object a dotted key "a.b" goes into (created), and b. NULL: no memory. */
static json_t *json_parent(json_t *obj, const char *key, const char **leaf)
{
	const char *dot = strchr(key, '.');
	char name[64];
	json_t *sub;

	*leaf = key;
	if (!dot)
		return obj;
	snprintf(name, sizeof(name), "%.*s", (int)(dot - key), key);
	*leaf = dot + 1;
	sub = json_object_get(obj, name);
	if (sub)
		return sub;
	sub = json_object();
	if (!sub || json_object_set_new(obj, name, sub))
		return NULL;
	return sub;
}

int counters__add_json(const struct counter *rows, size_t n, const void *snap, json_t *obj)
{
	for (size_t i = 0; i < n; i++) {
		const struct counter *c = &rows[i];
		const char *field = (const char *)snap + c->offset;
		const char *leaf;
		json_t *parent, *v;

		if (!c->json)
			continue;
		parent = json_parent(obj, c->json, &leaf);
		if (c->kind == COUNTER_U64 || c->kind == COUNTER_NS)
			v = json_integer((json_int_t)*(const uint64_t *)field);
		else if (c->kind == COUNTER_BOOL)
			v = json_boolean(*(const bool *)field);
		else
			v = json_real(counter__value(c, snap));
		if (!parent || !v || json_object_set_new(parent, leaf, v))
			return -ENOMEM;
	}
	return 0;
}

void counters__summary(const struct counter *rows, size_t n, const void *snap,
		       const char *prefix, FILE *f)
{
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		double v;

		if (!rows[i].summary)
			continue;
		v = counter__value(&rows[i], snap);
		if (v == 0)
			continue;
		fprintf(f, "%s %s %.15g", any ? "," : prefix, rows[i].summary, v);
		any = true;
	}
	if (any)
		fputc('\n', f);
}
