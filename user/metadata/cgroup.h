/* SPDX-License-Identifier: BSD-2-Clause */
/* cgroup membership -> who a process belongs to: container id, pod UID,
 * container runtime, QoS class, systemd unit. Pure string code over
 * /proc/PID/cgroup text: no allocation, no I/O, work linear in the input,
 * results in fixed arrays. */
#ifndef KILN_METADATA_CGROUP_H
#define KILN_METADATA_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#define CGROUP_CONTAINER_ID_LEN 64      /* lowercase hex */
#define CGROUP_POD_UID_MAX 36           /* UUID; static pods: 32 hex */
#define CGROUP_UNIT_MAX 255             /* systemd's unit name limit */

/* Ordered by strength: a container beats a pod-only match beats a host
 * line beats an invalid one. */
enum cgroup_kind {
	CGROUP_INVALID = 0,     /* not a "hierarchy-id:controllers:/path" line */
	CGROUP_HOST,            /* valid, no container or pod */
	CGROUP_POD_ONLY,        /* a pod's cgroup, but no workload container
				 * (CRI-O's conmon, the pod slice itself) */
	CGROUP_CONTAINER,
};

enum cgroup_runtime {
	CGROUP_RUNTIME_NONE = 0,
	CGROUP_RUNTIME_CONTAINERD,
	CGROUP_RUNTIME_CRIO,
	CGROUP_RUNTIME_DOCKER,
	CGROUP_RUNTIME_PODMAN,
};

enum cgroup_qos {
	CGROUP_QOS_NONE = 0,
	CGROUP_QOS_GUARANTEED,
	CGROUP_QOS_BURSTABLE,
	CGROUP_QOS_BESTEFFORT,
};

struct cgroup_identity {
	enum cgroup_kind kind;
	enum cgroup_runtime runtime;    /* set for containers and pod-only matches */
	enum cgroup_qos qos;            /* set when there is a pod */
	char container_id[CGROUP_CONTAINER_ID_LEN + 1]; /* "" when none */
	char pod_uid[CGROUP_POD_UID_MAX + 1];   /* dashed form, "" when none */
	char systemd_unit[CGROUP_UNIT_MAX + 1]; /* leaf "*.service", "" when none */
	/* Whole text only: the identity equals that of the cgroup v2 line
	 * ("0::/...") alone, so the v2 cgroup id (what BPF reports) stands
	 * for it. False on hybrid hosts whose v1 lines carry the container. */
	bool from_v2;
	unsigned lines, invalid_lines;
};

/* One line (no trailing newline needed; one is ignored). Fills *out and
 * returns out->kind. */
enum cgroup_kind cgroup__identify_line(const char *line, size_t len,
				       struct cgroup_identity *out);

/* The whole /proc/PID/cgroup text (v1, v2 or hybrid). Every line is read;
 * the first line naming a container wins, else the first naming a pod.
 * Without either, systemd_unit comes from the first line that has one.
 * CGROUP_INVALID only when no line is valid (an empty text included). */
enum cgroup_kind cgroup__identify(const char *text, size_t len,
				  struct cgroup_identity *out);

/* "container", "pod-only", "host", "invalid". */
const char *cgroup_kind_name(enum cgroup_kind k);
/* "containerd", "cri-o", "docker", "podman"; NULL for none. */
const char *cgroup_runtime_name(enum cgroup_runtime r);
/* "guaranteed", "burstable", "besteffort"; NULL for none. */
const char *cgroup_qos_name(enum cgroup_qos q);

#endif
