/* SPDX-License-Identifier: BSD-2-Clause */
/* OpenTelemetry profiles (OTLP 1.10, v1development): one
 * ExportProfilesServiceRequest of profiles with their resources, every
 * table in one shared dictionary. The mapping of kiln's labels to
 * OpenTelemetry's semantic conventions is here, as docs/otlp.md shows it. */
#ifndef KILN_PROFILE_OTLP_H
#define KILN_PROFILE_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "core/labels.h"
#include "profile/profile.h"

/* Sample attribute naming the process a stack belongs to (its root frame). */
#define OTLP_PROCESS_ATTRIBUTE "process.executable.name"

struct otlp_meta {
	uint64_t period_ns;             /* 1e9 / frequency: cpu/nanoseconds values */
	int64_t time_nanos;             /* start of the interval, unix ns */
	int64_t duration_nanos;
	const char *scope_name, *scope_version; /* the producer: kiln and its version */
};

/* One profile and what it describes: its label set, sent as the
 * resource's attributes (otlp__attribute_name). */
struct otlp_resource_profile {
	const struct profile *profile;
	const struct labels *labels;
};

/* Encodes one request of n resources, each with one profile: sample type
 * and period cpu/nanoseconds, one aggregated value (count x period) per
 * distinct stack, stacks leaf first (the process name, kiln's root frame,
 * outermost), inlined frames as lines of their caller's location, the
 * process name and a FRAME_LABELS frame's labels as sample attributes,
 * build ids as process.executable.build_id.gnu on mappings and
 * profile.frame.type on kernel and native locations. Strings that are not
 * valid UTF-8 get '?' for their bad bytes. *out is malloc'd. 0, -E2BIG
 * (a table past INT32_MAX entries) or -ENOMEM. */
int otlp__encode(const struct otlp_resource_profile *rp, size_t n, const struct otlp_meta *meta,
		 uint8_t **out, size_t *out_len);
/* The attribute name kiln's label name is sent as: service_name ->
 * service.name, namespace -> k8s.namespace.name, pod -> k8s.pod.name,
 * container -> k8s.container.name, container_id -> container.id, pod_uid
 * -> k8s.pod.uid, node -> host.name; any other keeps its name. */
const char *otlp__attribute_name(const char *label);

#endif
