// SPDX-License-Identifier: BSD-2-Clause
/* Metadata: a sample's process -> one canonical label set and a verdict.
 *
 * DESIGN. The cgroup of a sample's process is looked up in a cache
 * (cgroup_cache.c), whose entries know their pod (pod_lookup.c); the
 * entry, the snapshot and the options (options.c) make the label set
 * (label_builder.c). metadata_priv.h lists the files.
 *
 * Labels (Pyroscope's conventions, Grafana groups by service_name):
 *   node          every set: opts->node_name, $NODE_NAME, the hostname
 *   service_name  pod annotation pyroscope.io/service_name, else pod label
 *                 app.kubernetes.io/name, else <namespace>/<container>, for
 *                 a pod-level process (sandbox/pause, CRI-O's conmon) else
 *                 <namespace>/<pod>; outside pods the systemd unit without
 *                 ".service", else the executable's file name, else the
 *                 process name; "kernel" for kernel threads and pid 0
 *   namespace, pod, container   from the pod index (container absent for
 *                 pod-level processes)
 *   container_id, pod_uid       only while the index does not know the
 *                 container or pod (no watcher, plain Docker/Podman, the
 *                 watcher lagging): the 12-hex short id and the cgroup's UID
 *   systemd_unit  the leaf *.service of the cgroup, where there is one
 *   --pod-label copies, then --tag's
 * Names are unique (options.c). Values are valid UTF-8 of at most 2048
 * bytes (label_builder.c). Verdicts: pod_lookup.c.
 *
 * Locking: md->lock covers the cache and counters; metadata__labels holds
 * it for a whole lookup, metadata__stats to copy the counters. The pod
 * index has its own lock, taken inside. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "metadata/kube.h"
#include "metadata/metadata.h"
#include "metadata/metadata_priv.h"
#include "metadata/pods.h"

const char *const metadata_verdict_names[METADATA_VERDICT_COUNT] = {
	[METADATA_KEEP] = "keep",
	[METADATA_EXCLUDED_NAMESPACE] = "excluded_namespace",
	[METADATA_OPTED_OUT] = "opted_out",
	[METADATA_PODS_NOT_SYNCED] = "pods_not_synced",
};

/* ---- labels of one sample ---- */

/* Kernel work: the idle task (pid 0) and kernel threads, which have a
 * snapshot (a stat file) but no executable, no mappings and no user
 * stack. A process that vanished before its snapshot has no cgroup text,
 * so it is not taken for one. */
static bool is_kernel(const struct kiln_sample_key *key, const struct proc_snapshot *snap)
{
	if (key->pid == 0)
		return true;
	return snap && snap->cgroup && snap->nmaps == 0 && !snap->exe_ino && !snap->exe_dev &&
	       key->ustack == 0;
}

/* The executable's file name when the snapshot maps it, else the process
 * name (main thread's comm), else the sampled thread's comm. */
static const char *exe_name(const struct kiln_sample_key *key, const struct proc_snapshot *snap,
			    char *buf, size_t size)
{
	if (snap && snap->exe_ino) {
		for (size_t i = 0; i < snap->nmaps; i++) {
			const struct binary *b = snap->maps[i].bin;
			const char *slash;

			if (!b || b->ino != snap->exe_ino || b->dev != snap->exe_dev || !b->path)
				continue;
			slash = strrchr(b->path, '/');
			if (slash && slash[1])
				return slash + 1;
			if (!slash && b->path[0])
				return b->path;
		}
	}
	if (snap && snap->comm[0]) {
		snprintf(buf, size, "%.*s", KILN_COMM_LEN, snap->comm);
		return buf;
	}
	snprintf(buf, size, "%.*s", KILN_COMM_LEN, key->comm);
	return buf[0] ? buf : "unknown";
}

static void build(struct metadata *md, struct label_builder *b, const struct cg_entry *e,
		  const struct kiln_sample_key *key, const struct proc_snapshot *snap,
		  char *unit_buf, char *id_buf, char *comm_buf, size_t comm_size)
{
	const struct cgroup_identity *id = e ? &e->id : NULL;

	if (e && e->pod_found) {
		label_builder__add(b, "service_name", e->service_name);
		label_builder__add(b, "node", md->node);
		label_builder__add(b, "namespace", e->namespace_);
		label_builder__add(b, "pod", e->pod);
		label_builder__add(b, "container", e->container);
	} else {
		const char *svc;

		if (id && id->systemd_unit[0]) {
			size_t ul = strlen(id->systemd_unit) - strlen(".service");

			memcpy(unit_buf, id->systemd_unit, ul);
			unit_buf[ul] = '\0';
			svc = unit_buf;
		} else {
			svc = exe_name(key, snap, comm_buf, comm_size);
		}
		label_builder__add(b, "service_name", svc);
		label_builder__add(b, "node", md->node);
		if (id && id->container_id[0]) {
			memcpy(id_buf, id->container_id, SHORT_ID_LEN);
			id_buf[SHORT_ID_LEN] = '\0';
			label_builder__add(b, "container_id", id_buf);
		}
		if (id)
			label_builder__add(b, "pod_uid", id->pod_uid);
	}
	if (id)
		label_builder__add(b, "systemd_unit", id->systemd_unit);
	for (size_t i = 0; e && e->pod_found && i < md->npod_labels; i++)
		label_builder__add(b, md->pod_labels[i].name, e->pod_label_values[i]);
	for (size_t i = 0; i < md->ntags; i++)
		label_builder__add(b, md->tags[i].name, md->tags[i].value);
}

enum metadata_verdict metadata__labels(struct metadata *md,
				       const struct kiln_sample_key *key,
				       const struct proc_snapshot *snap,
				       uint64_t count, struct labels *out)
{
	char unit[CGROUP_UNIT_MAX + 1], short_id[SHORT_ID_LEN + 1], comm[KILN_COMM_LEN + 1];
	enum metadata_verdict verdict = md->podless_verdict;
	struct label_builder b = { .n = 0 };
	struct cg_entry *e = NULL;

	pthread_mutex_lock(&md->lock);
	if (is_kernel(key, snap)) {
		label_builder__add(&b, "service_name", "kernel");
		label_builder__add(&b, "node", md->node);
		for (size_t i = 0; i < md->ntags; i++)
			label_builder__add(&b, md->tags[i].name, md->tags[i].value);
	} else {
		e = cgroup_cache__entry_for(md, key, snap);
		if (e) {
			pod_lookup__resolve(md, e);
			verdict = e->verdict;
		}
		build(md, &b, e, key, snap, unit, short_id, comm, sizeof(comm));
	}
	if (label_builder__emit(&b, out, &md->stats) && !md->warned_nomem) {
		md->warned_nomem = true;
		pr_warn("metadata: out of memory; a label set is left empty");
	}
	md->stats.filtered[verdict] += count;
	pthread_mutex_unlock(&md->lock);
	return verdict;
}

void metadata__stats(struct metadata *md, struct metadata_stats *out)
{
	struct kube_stats ks;

	pthread_mutex_lock(&md->lock);
	*out = md->stats;
	out->cgroups = md->nentries;
	pthread_mutex_unlock(&md->lock);
	out->pods = md->pods ? pods__count(md->pods) : 0;
	out->kube_enabled = md->kube != NULL;
	if (md->kube) {
		kube__stats(md->kube, &ks);
		out->kube_synced = ks.synced;
		out->kube_lists = ks.lists;
		out->kube_watches = ks.watches;
		out->kube_events = ks.events;
		out->kube_errors = ks.errors;
		out->kube_relists = ks.relists;
		out->kube_list_pages = ks.list_pages;
		out->kube_list_restarts = ks.list_restarts;
	}
}

/* ---- lifecycle ---- */

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void metadata__free(struct metadata *md)
{
	if (!md)
		return;
	/* The watcher writes into the index: stop it first. */
	kube__stop(md->kube);
	while (md->lru.head)
		cgroup_cache__remove(md, LRU_ENTRY(md->lru.head, struct cg_entry, lru));
	hashmap__clear(&md->by_text);
	hashmap__clear(&md->by_id);
	if (md->own_pods)
		pods__free(md->pods);
	for (size_t i = 0; md->tags && i < md->ntags; i++) {
		free(md->tags[i].name);
		free(md->tags[i].value);
	}
	free(md->tags);
	for (size_t i = 0; md->pod_labels && i < md->npod_labels; i++) {
		free(md->pod_labels[i].key);
		free(md->pod_labels[i].name);
	}
	free(md->pod_labels);
	free_strings(md->include, md->ninclude);
	free_strings(md->exclude, md->nexclude);
	if (md->cgroup2_fd >= 0)
		close(md->cgroup2_fd);
	free(md->cgroup2_mnt);
	free(md->node);
	pthread_mutex_destroy(&md->lock);
	free(md);
}

static int start_pods(struct metadata *md, const struct metadata_opts *opts)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	struct kube_opts ko = {
		.api_url = opts->kube_api,
		.token_file = opts->kube_token_file,
		.ca_file = opts->kube_ca_file,
		.node_name = md->node,
		.allow_insecure = opts->kube_allow_insecure,
	};

	if (opts->pods) {
		md->pods = opts->pods;
		return 0;
	}
	if (opts->kube_disabled || (!opts->kube_api && !(host && *host)))
		return 0;
	md->pods = pods__new(opts->max_pods ? opts->max_pods : DEFAULT_MAX_PODS);
	if (!md->pods)
		return -ENOMEM;
	md->own_pods = true;
	md->kube = kube__start(&ko, md->pods);
	if (!md->kube) {
		int err = errno ? -errno : -EINVAL;

		if (err == -EPERM)      /* refused, in one line: an option error */
			return -EINVAL;
		pr_error("metadata: cannot watch pods%s%s: %s (--no-kube runs without pod names)",
			 opts->kube_api ? " at " : " in-cluster",
			 opts->kube_api ? opts->kube_api : "", strerror(-err));
		return err;
	}
	return 0;
}

struct metadata *metadata__new(const struct metadata_opts *opts)
{
	size_t nlabels = MAX_BUILTIN_LABELS + opts->ntags + opts->npod_labels;
	struct metadata *md = calloc(1, sizeof(*md));
	int err = -ENOMEM;

	if (!md)
		return NULL;
	md->cgroup2_fd = -1;
	if (pthread_mutex_init(&md->lock, NULL)) {
		free(md);
		errno = ENOMEM;
		return NULL;
	}
	md->max_cgroups = opts->max_cgroups ? opts->max_cgroups : DEFAULT_MAX_CGROUPS;
	md->node = md_options__resolve_node(opts->node_name);
	if (!md->node)
		goto fail;
	if (nlabels > MAX_LABELS) {
		pr_error("metadata: %zu --tag's + %zu --pod-label's + %d built-in labels exceed %d labels a profile (Pyroscope allows 30 a series, __name__ included)",
			 opts->ntags, opts->npod_labels, MAX_BUILTIN_LABELS, MAX_LABELS);
		err = -EINVAL;
		goto fail;
	}
	if ((opts->ntags && !(md->tags = calloc(opts->ntags, sizeof(*md->tags)))) ||
	    (opts->npod_labels &&
	     !(md->pod_labels = calloc(opts->npod_labels, sizeof(*md->pod_labels)))))
		goto fail;
	for (size_t i = 0; i < opts->ntags; i++)
		if ((err = md_options__parse_tag(md, opts->tags[i] ? opts->tags[i] : "")))
			goto fail;
	for (size_t i = 0; i < opts->npod_labels; i++)
		if ((err = md_options__parse_pod_label(md, opts->pod_labels[i] ? opts->pod_labels[i] : "")))
			goto fail;
	/* Counted as they are copied, so a failure frees what was made. */
	md->ninclude = opts->ninclude_namespaces;
	md->nexclude = opts->nexclude_namespaces;
	if ((err = md_options__copy_globs("include", opts->include_namespaces, md->ninclude, &md->include)) ||
	    (err = md_options__copy_globs("exclude", opts->exclude_namespaces, md->nexclude, &md->exclude)))
		goto fail;
	md->podless_verdict = md->ninclude ? METADATA_EXCLUDED_NAMESPACE : METADATA_KEEP;
	if ((err = start_pods(md, opts)))
		goto fail;
	if (!md->pods && (md->ninclude || md->nexclude))
		pr_warn("metadata: namespace filters without a pod watcher: %s",
			md->ninclude ? "every process is excluded" : "they never match");
	md_options__cgroup2_open(md);
	return md;
fail:
	metadata__free(md);
	errno = -err;
	return NULL;
}
