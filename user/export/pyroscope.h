/* SPDX-License-Identifier: BSD-2-Clause */
/* Pyroscope wire formats: the push API's PushRequest (protobuf-c) and the
 * legacy /ingest URL. Labels on the wire: `__name__ = process_cpu` first,
 * then the label set with every other `__` label and every empty value
 * stripped and names sanitized to [a-zA-Z_][a-zA-Z0-9_]*; a set without a
 * service_name gets PYROSCOPE_UNKNOWN_SERVICE. */
#ifndef KILN_EXPORT_PYROSCOPE_H
#define KILN_EXPORT_PYROSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/labels.h"

#define PYROSCOPE_PUSH_PATH "/push.v1.PusherService/Push"
/* The query API's merged profile (Connect unary, application/proto). */
#define PYROSCOPE_SELECT_MERGE_PATH "/querier.v1.QuerierService/SelectMergeProfile"
/* The profile type of what kiln pushes, in the CPU time values. */
#define PYROSCOPE_CPU_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define PYROSCOPE_PROFILE_NAME "process_cpu"
/* service_name of a label set without one (OpenTelemetry's word) */
#define PYROSCOPE_UNKNOWN_SERVICE "unknown_service"

/* One series of a push: a label set and its interval's pprof (gzipped). */
struct pyroscope_series {
	const struct labels *labels;
	const uint8_t *pprof;
	size_t len;
};

/* Encodes a PushRequest with one RawSample (random UUID) per series.
 * *out is malloc'd. 0 or -errno. */
int pyroscope__push_request(const struct pyroscope_series *s, size_t n, uint8_t **out,
			    size_t *len);
/* Encodes a SelectMergeProfileRequest for profiles of type_id (see
 * PYROSCOPE_CPU_TYPE) whose labels selector selects ("{k=\"v\",...}")
 * over [start_ms, end_ms] of the epoch. *out is malloc'd. 0 or -errno. */
int pyroscope__select_merge_request(const char *type_id, const char *selector, int64_t start_ms,
				    int64_t end_ms, uint8_t **out, size_t *len);
/* The /ingest URL for one label set's pprof covering [from, until) unix
 * seconds, sampled at hz: name=<service_name>.cpu{k=v,...}, percent-encoded.
 * Pyroscope's name parser has no escapes: the service name keeps only
 * [A-Za-z0-9_./-], tag values lose ',', '=', '{' and '}' (each becomes
 * '_'). *out is malloc'd. 0 or -errno. */
int pyroscope__ingest_url(const char *server, const struct labels *l, int64_t from,
			  int64_t until, unsigned hz, char **out);
/* Sanitizes a label name in place to [a-zA-Z_][a-zA-Z0-9_]*: other
 * characters become '_'; a leading digit is replaced by '_'. */
void pyroscope__sanitize_name(char *name);

#endif
