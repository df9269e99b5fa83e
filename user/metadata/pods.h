/* SPDX-License-Identifier: BSD-2-Clause */
/* The pod index: this node's pods as the Kubernetes API reports them,
 * indexed by container id (regular, init and ephemeral container statuses)
 * and by pod UID (the API's metadata.uid, and for static pods the UID in
 * the kubernetes.io/config.mirror annotation, which is what the cgroup path
 * carries). Fed by the watcher thread (kube.c) with decoded pod objects;
 * read by the metadata stage. Thread-safe: one lock, held only for an
 * index update or one lookup. */
#ifndef KILN_METADATA_PODS_H
#define KILN_METADATA_PODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* What a lookup copies out: strings are malloc'd, free with pod_info__release. */
struct pod_kv {
	char *key, *value;
};

struct pod_info {
	char *uid;                  /* cgroup-side UID (mirror UID for static pods) */
	char *namespace_;
	char *name;
	char *container;            /* container name; NULL when matched by pod UID only
				     * or when the container id is not one of its statuses
				     * (e.g. the sandbox) */
	char *service_name;         /* annotation pyroscope.io/service_name, or NULL */
	bool opted_out;             /* annotation kiln.dev/profile: "false" */
	struct pod_kv *labels;      /* metadata.labels */
	size_t nlabels;
};

void pod_info__release(struct pod_info *p);
/* The value of pod label key, or NULL. */
const char *pod_info__label(const struct pod_info *p, const char *key);

struct pods;

/* max_pods bounds the index (beyond it, new pods are counted and skipped). */
struct pods *pods__new(size_t max_pods);
void pods__free(struct pods *p);

/* Index updates from decoded API objects (a Pod object). 0, -EINVAL
 * for an object that is not a usable Pod (counted), -ENOSPC for a new pod
 * beyond max_pods (counted, skipped), or -ENOMEM. */
int pods__upsert(struct pods *p, const json_t *pod);
int pods__remove(struct pods *p, const json_t *pod);
/* Replaces the whole index with the items of a PodList (a list in one
 * page: begin, page, end). */
int pods__replace(struct pods *p, const json_t *pod_list);

/* A list read in pages (limit/continue). begin starts it; each page's
 * items are decoded and indexed one pod at a time, as they come, so the
 * pods of earlier pages are found while later ones are read; end drops
 * the pods the list did not name and marks the index synced. Until end,
 * the pods of the previous list stay (a relist does not empty the index).
 * abort leaves the index as it is (a later list reconciles it). A page is
 * a PodList object; its items beyond max_pods (counted over the whole
 * list) are counted and skipped. list_page: 0, -EINVAL (not a PodList, or
 * no list begun), -ENOMEM. */
void pods__list_begin(struct pods *p);
int pods__list_page(struct pods *p, const json_t *page);
void pods__list_end(struct pods *p);
void pods__list_abort(struct pods *p);
/* Whether a list has completed since pods__new (pods__list_end,
 * pods__replace) or mark_synced said so (an index filled by other
 * means). Until then a pod the index does not know may yet be listed. */
bool pods__synced(struct pods *p);
void pods__mark_synced(struct pods *p);

/* Looks up by container id (64 hex, no runtime prefix) first, then by pod
 * UID (either form: dashes or underscores, 32-hex static UIDs); either may
 * be NULL. true and *out filled when found. */
bool pods__lookup(struct pods *p, const char *container_id, const char *pod_uid,
		  struct pod_info *out);
/* Bumped on every index change: a caller caching lookups re-resolves
 * entries older than this. */
uint64_t pods__generation(struct pods *p);
size_t pods__count(struct pods *p);

/* Bounds hit and bad input, counted since pods__new. */
struct pods_stats {
	uint64_t bad_objects;           /* not a usable Pod (list items included) */
	uint64_t skipped_max_pods;      /* new pods beyond max_pods */
	uint64_t labels_dropped;        /* beyond the label count/size bounds */
	uint64_t containers_dropped;    /* beyond the container statuses bound */
	uint64_t bad_mirror_uids;       /* unusable config.mirror annotations */
};
void pods__stats(struct pods *p, struct pods_stats *out);

#endif
