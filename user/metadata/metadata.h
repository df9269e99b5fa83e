/* SPDX-License-Identifier: BSD-2-Clause */
/* Metadata: who a sample belongs to. Turns a process (its snapshot, or just
 * the sampled pid/comm/cgroup id) into one canonical label set
 * (service_name, namespace, pod, container, node, systemd_unit, --pod-label
 * copies, static --tag's) and decides whether it is filtered out.
 *
 * This header is the whole boundary between the metadata stage and the
 * rest of kiln (record, agent). Internals: cgroup.[ch] (cgroup line ->
 * container id, pod UID, runtime, QoS, systemd unit), pods.[ch] (the pod
 * index), kube.[ch] (the Kubernetes list/watch thread feeding it). */
#ifndef KILN_METADATA_METADATA_H
#define KILN_METADATA_METADATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/labels.h"
#include "kiln/sample.h"
#include "proc/proc.h"

struct metadata_opts {
	const char *node_name;          /* NULL: $NODE_NAME, else the hostname */
	/* Static "KEY=VALUE" tags, added to every label set. */
	const char *const *tags;
	size_t ntags;
	/* Pod label keys copied as labels (name sanitized). */
	const char *const *pod_labels;
	size_t npod_labels;
	/* Namespace globs (fnmatch). An empty include list includes all. */
	const char *const *include_namespaces;
	size_t ninclude_namespaces;
	const char *const *exclude_namespaces;
	size_t nexclude_namespaces;
	/* Kubernetes API. kube_api NULL: in-cluster when KUBERNETES_SERVICE_HOST
	 * is set, else no pod watcher (cgroup-derived labels only). */
	const char *kube_api;
	const char *kube_token_file;
	const char *kube_ca_file;
	bool kube_disabled;             /* never watch pods, even in a cluster */
	/* Send the token over a plain http:// kube_api (else refused at
	 * start); agent.c maps --allow-insecure-credentials here. */
	bool kube_allow_insecure;
	size_t max_cgroups;             /* bound of the per-cgroup cache; 0: 4096 */
	size_t max_pods;                /* bound of the pod index; 0: 1024 */
	/* A pod index the caller owns and fills (tests, embedding): used as
	 * is, no watcher is started, not freed by metadata__free. Until it
	 * is synced (pods__list_end, pods__mark_synced), processes in pod
	 * cgroups it does not know are METADATA_PODS_NOT_SYNCED. */
	struct pods *pods;
};

enum metadata_verdict {
	METADATA_KEEP = 0,
	METADATA_EXCLUDED_NAMESPACE,    /* --include/--exclude-namespace */
	METADATA_OPTED_OUT,             /* pod annotation kiln.dev/profile: "false" */
	/* A process in a pod cgroup (pod UID or container id) while the pod
	 * index has not synced and does not know its pod: it may have opted
	 * out or be in an excluded namespace, so it is not profiled (fail
	 * closed). Never without a pod index (--no-kube, no API). */
	METADATA_PODS_NOT_SYNCED,
	METADATA_VERDICT_COUNT,
};
extern const char *const metadata_verdict_names[METADATA_VERDICT_COUNT];

struct metadata_stats {
	uint64_t cgroup_hits, cgroup_misses, cgroup_evictions;
	size_t cgroups;                 /* cached now */
	uint64_t cgroup_unparsed;       /* cgroup texts without one valid line */
	/* Samples without a cgroup text: their cgroup id mapped to a path
	 * (cgroup v2 file handle), or not. Per cache entry. */
	uint64_t cgroup_ids_resolved, cgroup_ids_unresolved;
	uint64_t pod_lookups;
	/* Pyroscope's bounds: values cut to 2048 bytes (or with invalid UTF-8
	 * replaced), labels beyond 29 per set (30 with __name__) dropped. */
	uint64_t label_values_truncated, labels_dropped;
	uint64_t filtered[METADATA_VERDICT_COUNT]; /* samples, by verdict
						    * (METADATA_KEEP: kept) */
	/* Pod watcher (all 0 without one). */
	bool kube_enabled, kube_synced;
	size_t pods;
	uint64_t kube_lists, kube_watches, kube_events, kube_errors, kube_relists;
	uint64_t kube_list_pages, kube_list_restarts;
	uint64_t kube_unknown_containers; /* container ids no pod status names */
};

struct pods;
struct metadata;

/* Starts the pod watcher thread when configured. NULL + errno (a message
 * naming the problem is logged). */
struct metadata *metadata__new(const struct metadata_opts *opts);
/* Labels of a sample. snap is the process snapshot, or NULL when unknown
 * (key alone then: pid, comm, cgroup_id). Kernel threads and the idle task
 * have pid 0 or an empty cgroup path. Fills *out (always, even when
 * filtered) and returns the verdict; count is the samples this lookup
 * stands for (added to filtered[verdict]). Never blocks on the network:
 * pods not yet known get cgroup-derived labels. Called from one thread at
 * a time; metadata__stats may run concurrently from another. */
enum metadata_verdict metadata__labels(struct metadata *md,
				       const struct kiln_sample_key *key,
				       const struct proc_snapshot *snap,
				       uint64_t count, struct labels *out);
void metadata__stats(struct metadata *md, struct metadata_stats *out);
/* Stops the watcher thread, frees everything. NULL is fine. */
void metadata__free(struct metadata *md);

#endif
