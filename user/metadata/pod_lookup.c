/* SPDX-License-Identifier: BSD-2-Clause */
/* An entry's pod, from the pod index, and its verdict.
 *
 * An entry keeps what the index said: pod fields, service name,
 * --pod-label values, verdict, and the index generation then. It looks the
 * pod up again when the generation has moved and at least RECHECK_NS have
 * passed since its last lookup, so a container the watcher has not
 * reported yet gets its names within a drain or two of the pod's arrival,
 * and a busy node's stream of pod updates costs each entry at most one
 * locked lookup per RECHECK_NS.
 *
 * Verdicts: a process in a pod is matched by its namespace against the
 * include globs (when any) and the exclude globs, then by the pod's
 * kiln.dev/profile: "false" annotation. A process with no known pod
 * (host, kernel, a container the index does not know) has no namespace:
 * an include list excludes it, an exclude list never does.
 *
 * Fail closed: while the index has not synced (its first list not read
 * yet, or never read), a process whose cgroup names a pod UID or a
 * container id that the index does not know yet may belong to a pod that
 * opted out or to an excluded namespace: METADATA_PODS_NOT_SYNCED, not
 * profiled. Such an entry looks its pod up again as soon as the index
 * changes (the sync bumps the generation), without waiting RECHECK_NS.
 * A pod the index already knows (an earlier page of the list) gets its
 * own verdict. Host processes are not affected. */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "metadata/metadata_priv.h"
#include "metadata/pods.h"

static bool glob_any(char *const *globs, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return true;
	return false;
}

static enum metadata_verdict pod_verdict(const struct metadata *md, const char *ns,
					 bool opted_out)
{
	if ((md->ninclude && !glob_any(md->include, md->ninclude, ns)) ||
	    glob_any(md->exclude, md->nexclude, ns))
		return METADATA_EXCLUDED_NAMESPACE;
	return opted_out ? METADATA_OPTED_OUT : METADATA_KEEP;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);

	if (!s)
		return NULL;
	memcpy(s, a, la);
	s[la] = '/';
	memcpy(s + la + 1, b, lb + 1);
	return s;
}

/* Takes the pod's fields into e. -ENOMEM leaves e without a pod. */
static int entry_take_pod(struct metadata *md, struct cg_entry *e, struct pod_info *p)
{
	const char *app = pod_info__label(p, "app.kubernetes.io/name");

	e->namespace_ = p->namespace_;
	e->pod = p->name;
	e->container = p->container;
	p->namespace_ = p->name = p->container = NULL;
	if (p->service_name) {
		e->service_name = p->service_name;
		p->service_name = NULL;
	} else if (app && *app) {
		e->service_name = strdup(app);
	} else {
		e->service_name = join(e->namespace_, e->container ? e->container : e->pod);
	}
	if (!e->service_name)
		goto nomem;
	for (size_t i = 0; i < md->npod_labels; i++) {
		const char *v = pod_info__label(p, md->pod_labels[i].key);

		if (v && !(e->pod_label_values[i] = strdup(v)))
			goto nomem;
	}
	e->pod_found = true;
	return 0;
nomem:
	cgroup_cache__clear_pod(md, e);
	return -ENOMEM;
}

void pod_lookup__resolve(struct metadata *md, struct cg_entry *e)
{
	const char *cid = e->id.container_id[0] ? e->id.container_id : NULL;
	const char *uid = e->id.pod_uid[0] ? e->id.pod_uid : NULL;
	struct pod_info info = { 0 };
	bool opted_out = false, synced;
	uint64_t gen, now;

	if (!md->pods || (!cid && !uid)) {
		if (!e->looked_up) {
			e->looked_up = true;
			e->verdict = md->podless_verdict;
		}
		return;
	}
	gen = pods__generation(md->pods);
	if (e->looked_up && gen == e->generation)
		return;
	now = monotonic_ns();
	if (e->looked_up && now - e->checked_ns < RECHECK_NS &&
	    e->verdict != METADATA_PODS_NOT_SYNCED)
		return;
	cgroup_cache__clear_pod(md, e);
	md->stats.pod_lookups++;
	/* Before the lookup: a list ending in between is not taken for a
	 * synced index that lacks the pod. */
	synced = pods__synced(md->pods);
	if (pods__lookup(md->pods, cid, uid, &info)) {
		opted_out = info.opted_out;
		if (entry_take_pod(md, e, &info) && !md->warned_nomem) {
			md->warned_nomem = true;
			pr_warn("metadata: out of memory; pod labels missing");
		}
		pod_info__release(&info);
	}
	if (synced && cid && !e->container && !e->counted_unknown) {
		/* Includes sandboxes, whose ids no status names. */
		e->counted_unknown = true;
		md->stats.kube_unknown_containers++;
	}
	e->looked_up = true;
	e->generation = gen;
	e->checked_ns = now;
	if (e->pod_found)
		e->verdict = pod_verdict(md, e->namespace_, opted_out);
	else if (!synced)
		e->verdict = METADATA_PODS_NOT_SYNCED;
	else
		e->verdict = md->podless_verdict;
}
