/* SPDX-License-Identifier: BSD-2-Clause */
/* The counter registry's engine: one table of rows (name, type, help, unit,
 * label, where the value lives in a snapshot struct) drives the Prometheus
 * text of /metrics, the JSON of `kiln record --stats` and the lines of
 * record's summary, so a counter is added by adding one row (user/stats.c
 * holds kiln's table).
 *
 * Rows of one Prometheus family are consecutive; the first row of a family
 * gives its type and help. A row without a metric name is JSON-only (a
 * record-only value such as the run's length), one without a JSON key is
 * /metrics-only (the agent's sender). A JSON key "a.b" is key b of the
 * object a. */
#ifndef KILN_CORE_COUNTERS_H
#define KILN_CORE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "core/metrics.h"

enum counter_kind {
	COUNTER_U64,            /* uint64_t or size_t at offset */
	COUNTER_BOOL,           /* bool at offset: 0 or 1 */
	COUNTER_DOUBLE,         /* double at offset */
	COUNTER_NS,             /* uint64_t nanoseconds: seconds in /metrics, ns in JSON */
	COUNTER_GET,            /* get(snapshot) */
};

struct counter {
	const char *metric;     /* Prometheus family name; NULL: JSON only */
	enum metrics_type type;
	const char *label;      /* one label name, or NULL */
	const char *label_value;
	const char *json;       /* --stats key; NULL: /metrics only */
	const char *unit;       /* what one counts: samples, bytes, seconds, ... */
	const char *help;
	const char *summary;    /* record's summary phrase when non-zero; NULL: not shown */
	enum counter_kind kind;
	size_t offset;
	double (*get)(const void *snap);
};

/* The value of row c in snap, as a double (exact below 2^53). */
double counter__value(const struct counter *c, const void *snap);
/* Writes every row with a metric name into b. 0 or metrics_buf's error. */
int counters__write_metrics(const struct counter *rows, size_t n, const void *snap,
			    struct metrics_buf *b);
/* Adds every row with a JSON key to obj (integers, reals for
 * COUNTER_DOUBLE and getters). 0 or -ENOMEM. */
int counters__add_json(const struct counter *rows, size_t n, const void *snap, json_t *obj);
/* One line "PREFIX phrase N, phrase N" of the rows with a summary phrase
 * and a non-zero value; nothing when there is none. */
void counters__summary(const struct counter *rows, size_t n, const void *snap,
		       const char *prefix, FILE *f);

#endif
