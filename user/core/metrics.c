// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"

#define METRICS_BUF_INITIAL 4096

struct metrics_buf {
	char *data;             /* NUL-terminated: data[len] == '\0' */
	size_t len, cap, max;   /* len <= max, len < cap <= max + 1 */
	int full_err;           /* -ENOSPC or -ENOMEM once truncated, else 0 */
	char **families;        /* names written since the reset; the last
				 * one is the family of the next sample */
	size_t nfamilies, families_cap;
};

struct metrics_buf *metrics_buf__new(size_t max_size)
{
	struct metrics_buf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->max = max_size ? max_size : METRICS_BUF_DEFAULT_MAX;
	if (b->max > SIZE_MAX / 2)
		b->max = SIZE_MAX / 2;  /* so that max + 1 and doubling never wrap */
	b->cap = b->max < METRICS_BUF_INITIAL ? b->max + 1 : METRICS_BUF_INITIAL;
	b->data = malloc(b->cap);
	if (!b->data) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	b->data[0] = '\0';
	return b;
}

static void forget_families(struct metrics_buf *b)
{
	for (size_t i = 0; i < b->nfamilies; i++)
		free(b->families[i]);
	b->nfamilies = 0;
}

void metrics_buf__free(struct metrics_buf *b)
{
	if (!b)
		return;
	forget_families(b);
	free(b->families);
	free(b->data);
	free(b);
}

void metrics_buf__reset(struct metrics_buf *b)
{
	forget_families(b);
	b->len = 0;
	b->data[0] = '\0';
	b->full_err = 0;
}

const char *metrics_buf__data(const struct metrics_buf *b, size_t *len)
{
	if (len)
		*len = b->len;
	return b->data;
}

bool metrics_buf__truncated(const struct metrics_buf *b)
{
	return b->full_err != 0;
}

static bool is_name_char(char c, bool first, bool colon_ok)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (c == ':')
		return colon_ok;
	return !first && c >= '0' && c <= '9';
}

static int check_name(const char *name, bool colon_ok)
{
	if (!name || !is_name_char(name[0], true, colon_ok))
		return -EINVAL;
	for (const char *p = name + 1; *p; p++)
		if (!is_name_char(*p, false, colon_ok))
			return -EINVAL;
	return 0;
}

int metrics_name__check(const char *name)
{
	return check_name(name, true);
}

static int check_labels(const struct metrics_label *labels, size_t n)
{
	if (n && !labels)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (check_name(labels[i].name, false) ||
		    strncmp(labels[i].name, "__", 2) == 0 || !labels[i].value)
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (strcmp(labels[i].name, labels[j].name) == 0)
				return -EINVAL;
	}
	return 0;
}

/* Appends n bytes, growing the buffer up to max + 1 (the NUL). */
static int put(struct metrics_buf *b, const char *s, size_t n)
{
	if (n > b->max - b->len)
		return -ENOSPC;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap;
		char *data;

		while (cap < b->len + n + 1)
			cap = cap > b->max / 2 ? b->max + 1 : cap * 2;
		data = realloc(b->data, cap);
		if (!data)
			return -ENOMEM;
		b->data = data;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static int put_str(struct metrics_buf *b, const char *s)
{
	return put(b, s, strlen(s));
}

/* HELP text escapes '\\' and '\n'; label values also '"'. */
static int put_escaped(struct metrics_buf *b, const char *s, bool quote)
{
	const char *run = s;
	int err = 0;

	for (; *s && !err; s++) {
		const char *esc = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" :
				  (*s == '"' && quote) ? "\\\"" : NULL;

		if (!esc)
			continue;
		err = put(b, run, (size_t)(s - run));
		if (!err)
			err = put(b, esc, 2);
		run = s + 1;
	}
	if (!err)
		err = put(b, run, (size_t)(s - run));
	return err;
}

/* Ends a write: on failure drops its partial line, and on lack of room or
 * memory marks the output truncated so that later writes fail too. */
static int finish(struct metrics_buf *b, size_t start, int err)
{
	if (!err)
		return 0;
	b->len = start;
	b->data[start] = '\0';
	if (err == -ENOSPC || err == -ENOMEM)
		b->full_err = err;
	return err;
}

int metrics_buf__family(struct metrics_buf *b, const char *name,
			enum metrics_type type, const char *help)
{
	size_t start = b->len;
	char *copy = NULL;
	int err;

	if (check_name(name, true) || (type != METRICS_COUNTER && type != METRICS_GAUGE))
		return -EINVAL;
	for (size_t i = 0; i < b->nfamilies; i++)
		if (strcmp(b->families[i], name) == 0)
			return -EEXIST;
	if (b->full_err)
		return b->full_err;

	err = -ENOMEM;
	if (b->nfamilies == b->families_cap) {
		size_t cap = b->families_cap ? b->families_cap * 2 : 32;
		char **families = realloc(b->families, cap * sizeof(*families));

		if (!families)
			goto cleanup;
		b->families = families;
		b->families_cap = cap;
	}
	copy = strdup(name);
	if (!copy)
		goto cleanup;

	err = 0;
	if (help) {
		err = put_str(b, "# HELP ");
		if (!err)
			err = put_str(b, name);
		if (!err)
			err = put(b, " ", 1);
		if (!err)
			err = put_escaped(b, help, false);
		if (!err)
			err = put(b, "\n", 1);
	}
	if (!err)
		err = put_str(b, "# TYPE ");
	if (!err)
		err = put_str(b, name);
	if (!err)
		err = put_str(b, type == METRICS_COUNTER ? " counter\n" : " gauge\n");
	if (!err) {
		b->families[b->nfamilies++] = copy;
		copy = NULL;
	}
cleanup:
	free(copy);
	return finish(b, start, err);
}

static int put_sample(struct metrics_buf *b, const struct metrics_label *labels,
		      size_t nlabels, const char *value)
{
	size_t start = b->len;
	int err;

	if (!b->nfamilies || check_labels(labels, nlabels))
		return -EINVAL;
	if (b->full_err)
		return b->full_err;

	err = put_str(b, b->families[b->nfamilies - 1]);
	for (size_t i = 0; i < nlabels && !err; i++) {
		err = put(b, i ? "," : "{", 1);
		if (!err)
			err = put_str(b, labels[i].name);
		if (!err)
			err = put(b, "=\"", 2);
		if (!err)
			err = put_escaped(b, labels[i].value, true);
		if (!err)
			err = put(b, "\"", 1);
	}
	if (!err && nlabels)
		err = put(b, "}", 1);
	if (!err)
		err = put(b, " ", 1);
	if (!err)
		err = put_str(b, value);
	if (!err)
		err = put(b, "\n", 1);
	return finish(b, start, err);
}

int metrics_buf__u64(struct metrics_buf *b, const struct metrics_label *labels,
		     size_t nlabels, uint64_t value)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, value);
	return put_sample(b, labels, nlabels, text);
}

/* The shortest "%g" that reads back as v, as Go's strconv (and so the
 * Prometheus client libraries) would write it. Assumes the C locale for
 * LC_NUMERIC, which the agent never changes. */
static void format_double(double v, char *text, size_t n)
{
	if (isnan(v)) {
		snprintf(text, n, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(text, n, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(text, n, "%.*g", prec, v);
		if (strtod(text, NULL) == v)
			return;
	}
}

int metrics_buf__double(struct metrics_buf *b, const struct metrics_label *labels,
			size_t nlabels, double value)
{
	char text[40];

	format_double(value, text, sizeof(text));
	return put_sample(b, labels, nlabels, text);
}
