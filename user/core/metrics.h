/* SPDX-License-Identifier: BSD-2-Clause */
/* Prometheus text exposition (format 0.0.4) written into a bounded,
 * growable buffer, for the agent's /metrics endpoint.
 *
 * Usage: one metrics_buf__family() per metric family, then that family's
 * samples (the text format wants a family's samples grouped under its
 * header, so samples always take the name of the family declared last).
 * Counter family names end in "_total" by convention
 * (kiln_samples_total); this is documented, not enforced.
 *
 * Every write adds whole lines or nothing: a write that fails leaves the
 * output as it was, so the text is always well formed up to its last
 * line. Once a write fails for lack of room (-ENOSPC) or memory (-ENOMEM)
 * the output is marked truncated and every later write fails the same
 * way, so a truncated output is a prefix of the complete one, not the
 * complete one with holes. Invalid names and labels are caller bugs:
 * -EINVAL, nothing written, output not marked.
 *
 * Not thread safe: one writer per buffer. */
#ifndef KILN_CORE_METRICS_H
#define KILN_CORE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_BUF_DEFAULT_MAX (4u << 20)
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE };

/* Label names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__"
 * (reserved by Prometheus); values are any UTF-8 text, escaped here. */
struct metrics_label {
	const char *name;
	const char *value;
};

struct metrics_buf;

/* max_size bounds the output in bytes (0: METRICS_BUF_DEFAULT_MAX).
 * NULL + errno (ENOMEM) on failure. */
struct metrics_buf *metrics_buf__new(size_t max_size);
void metrics_buf__free(struct metrics_buf *b);
/* Empties the output, forgets the families and clears the truncated mark;
 * keeps the memory for the next scrape. */
void metrics_buf__reset(struct metrics_buf *b);

/* Writes "# HELP name help" (help with '\\' and '\n' escaped; no HELP
 * line when help is NULL) and "# TYPE name counter|gauge", and makes name
 * the family of the samples that follow. name matches
 * [a-zA-Z_:][a-zA-Z0-9_:]*. 0, -EINVAL (bad name or type), -EEXIST (the
 * family was already written to this output), -ENOSPC or -ENOMEM. */
int metrics_buf__family(struct metrics_buf *b, const char *name,
			enum metrics_type type, const char *help);

/* Writes one sample of the current family:
 * 'name{k="v",k2="v2"} value' (no braces when nlabels is 0), label values
 * with '\\', '"' and '\n' escaped. 0, -EINVAL (no family yet, bad or
 * repeated label name, labels NULL with nlabels > 0, NULL value),
 * -ENOSPC or -ENOMEM. */
int metrics_buf__u64(struct metrics_buf *b, const struct metrics_label *labels,
		     size_t nlabels, uint64_t value);
/* As metrics_buf__u64; the value as the shortest decimal that reads back
 * as the same double, NaN as "NaN", infinities as "+Inf" and "-Inf". */
int metrics_buf__double(struct metrics_buf *b, const struct metrics_label *labels,
			size_t nlabels, double value);

/* The output, NUL-terminated; *len (when not NULL) gets its length. Valid
 * until the next write, reset or free. */
const char *metrics_buf__data(const struct metrics_buf *b, size_t *len);
/* True when a write failed for lack of room or memory since the last
 * reset: the output is then a prefix of what the caller meant to write. */
bool metrics_buf__truncated(const struct metrics_buf *b);

/* 0 when name is a valid metric name, else -EINVAL. */
int metrics_name__check(const char *name);

#endif
