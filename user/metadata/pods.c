// SPDX-License-Identifier: BSD-2-Clause
/* The pod index.
 *
 * DESIGN. A pod object from the API is decoded into a struct pod outside
 * the lock (decoding is the expensive part and touches no shared state);
 * the lock is then held only to swap the decoded pod into three string
 * maps:
 *   by_api_uid   metadata.uid -> pod          (the identity of a pod object:
 *                                             upsert replaces, remove deletes)
 *   by_uid       cgroup-side UID -> pod       (metadata.uid and, for static
 *                                             pods, the config.mirror UID)
 *   by_cid       container id -> pod          (every status with an id)
 * by_uid and by_cid entries are removed only while they still point to the
 * pod being removed: a static pod's mirror object can be recreated under a
 * new metadata.uid but the same mirror UID, and a container id can move
 * between pod objects in the same way; the newest object wins.
 *
 * UIDs are stored normalized (lowercase, '_' -> '-'), so the systemd
 * driver's pod<uid_with_underscores> finds the API's dashed UID.
 *
 * The maps are core/hashmap tables keyed by the string's hash; the key
 * strings are the pod's own (a map's equality asks the pod whether the key
 * is one of its uids / container ids), so the maps copy nothing.
 *
 * Everything a hostile API object can grow is bounded: labels per pod,
 * label key/value sizes, label bytes per pod, containers per pod, string
 * lengths, and pods (max_pods). Hitting a bound is counted (pods__stats). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "core/log.h"
#include "metadata/pods.h"

#define POD_MAX_LABELS 64
#define POD_LABEL_KEY_MAX 256
#define POD_LABEL_VALUE_MAX 1024
#define POD_LABEL_BYTES_MAX (16u << 10)
#define POD_MAX_CONTAINERS 128
/* Names, namespaces, UIDs and container ids are far shorter in practice
 * (names are at most 253 bytes); anything longer is not a usable pod. */
#define POD_STRING_MAX 1024

#define ANN_MIRROR "kubernetes.io/config.mirror"
#define ANN_SERVICE "pyroscope.io/service_name"
#define ANN_PROFILE "kiln.dev/profile"

struct pod_container {
	char *id;               /* no runtime prefix */
	char *name;
};

struct pod {
	char *api_uid;          /* normalized metadata.uid */
	char *uid;              /* normalized cgroup-side UID (mirror or api) */
	char *namespace_, *name, *service_name;
	bool opted_out;
	struct pod_kv *labels;
	size_t nlabels;
	struct pod_container *containers;
	size_t ncontainers;
	uint64_t list_epoch;    /* the last list that named this pod */
};

struct pods {
	pthread_mutex_t lock;
	size_t max_pods;
	struct hashmap by_api_uid, by_uid, by_cid;     /* -> struct pod */
	uint64_t generation;
	struct pods_stats stats;
	/* A list in pages: pods named by the list in progress carry its epoch;
	 * list_end drops the others. */
	bool listing, synced;
	uint64_t epoch;
	size_t list_seen;       /* distinct pods this list named and kept */
};

/* ---- the maps' keys ---- */

static bool api_uid_is(const void *ctx, const void *val, const void *key)
{
	const struct pod *d = val;

	(void)ctx;
	return !strcmp(d->api_uid, key);
}

static bool uid_is(const void *ctx, const void *val, const void *key)
{
	const struct pod *d = val;

	(void)ctx;
	return !strcmp(d->uid, key) || !strcmp(d->api_uid, key);
}

static bool cid_is(const void *ctx, const void *val, const void *key)
{
	const struct pod *d = val;

	(void)ctx;
	for (size_t i = 0; i < d->ncontainers; i++)
		if (!strcmp(d->containers[i].id, key))
			return true;
	return false;
}

static struct pod *map_get(const struct hashmap *m, hashmap_eq_fn is, const char *key)
{
	return hashmap__get(m, hash__str(key), is, NULL, key);
}

/* key -> d, replacing what key mapped to. 0 or -ENOMEM. */
static int map_put(struct hashmap *m, hashmap_eq_fn is, const char *key, struct pod *d)
{
	return hashmap__put(m, hash__str(key), is, NULL, key, d);
}

/* Deletes key only while it maps to d. */
static void map_del_if(struct hashmap *m, hashmap_eq_fn is, const char *key,
		       const struct pod *d)
{
	if (key && map_get(m, is, key) == d)
		hashmap__del(m, hash__str(key), is, NULL, key);
}

/* ---- decoded pods ---- */

static void pod_free(struct pod *d)
{
	if (!d)
		return;
	free(d->api_uid);
	free(d->uid);
	free(d->namespace_);
	free(d->name);
	free(d->service_name);
	for (size_t i = 0; i < d->nlabels; i++) {
		free(d->labels[i].key);
		free(d->labels[i].value);
	}
	free(d->labels);
	for (size_t i = 0; i < d->ncontainers; i++) {
		free(d->containers[i].id);
		free(d->containers[i].name);
	}
	free(d->containers);
	free(d);
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Same indexed content: an upsert of an equal pod (most MODIFIED events
 * only change status fields kiln ignores) does not bump the generation. */
static bool pod_equal(const struct pod *a, const struct pod *b)
{
	if (!str_eq(a->api_uid, b->api_uid) || !str_eq(a->uid, b->uid) ||
	    !str_eq(a->namespace_, b->namespace_) || !str_eq(a->name, b->name) ||
	    !str_eq(a->service_name, b->service_name) || a->opted_out != b->opted_out ||
	    a->nlabels != b->nlabels || a->ncontainers != b->ncontainers)
		return false;
	for (size_t i = 0; i < a->nlabels; i++)
		if (!str_eq(a->labels[i].key, b->labels[i].key) ||
		    !str_eq(a->labels[i].value, b->labels[i].value))
			return false;
	for (size_t i = 0; i < a->ncontainers; i++)
		if (!str_eq(a->containers[i].id, b->containers[i].id) ||
		    !str_eq(a->containers[i].name, b->containers[i].name))
			return false;
	return true;
}

/* A normalized copy of a UID: lowercase, '_' -> '-'. NULL for an empty,
 * over-long or non-[0-9a-zA-Z_-] string. */
static char *uid_normalize(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	char *u;

	if (!n || n > POD_STRING_MAX)
		return NULL;
	u = malloc(n + 1);
	if (!u)
		return NULL;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		else if (c == '_')
			c = '-';
		else if (c && !(c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) {
			free(u);
			return NULL;
		}
		u[i] = c;
	}
	return u;
}

/* A string member of obj, or NULL when absent, not a string, empty or
 * longer than POD_STRING_MAX. */
static const char *json_str(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	if (!json_is_string(v))
		return NULL;
	s = json_string_value(v);
	if (!*s || json_string_length(v) > POD_STRING_MAX ||
	    strlen(s) != json_string_length(v))      /* embedded NUL */
		return NULL;
	return s;
}

static int dup_to(char **dst, const char *s)
{
	if (!s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

static int decode_labels(struct pod *d, const json_t *labels, struct pods_stats *st)
{
	size_t bytes = 0, n = json_object_size(labels);
	const char *key;
	json_t *val;

	if (!n)
		return 0;
	d->labels = calloc(n < POD_MAX_LABELS ? n : POD_MAX_LABELS, sizeof(*d->labels));
	if (!d->labels)
		return -ENOMEM;
	json_object_foreach((json_t *)labels, key, val) {
		size_t kl = strlen(key), vl;

		if (!json_is_string(val)) {
			st->labels_dropped++;
			continue;
		}
		vl = json_string_length(val);
		if (d->nlabels == POD_MAX_LABELS || !kl || kl > POD_LABEL_KEY_MAX ||
		    vl > POD_LABEL_VALUE_MAX || strlen(json_string_value(val)) != vl ||
		    bytes + kl + vl > POD_LABEL_BYTES_MAX) {
			st->labels_dropped++;
			continue;
		}
		d->labels[d->nlabels].key = strdup(key);
		d->labels[d->nlabels].value = strdup(json_string_value(val));
		if (!d->labels[d->nlabels].key || !d->labels[d->nlabels].value) {
			d->nlabels++;   /* so pod_free releases the half-made pair */
			return -ENOMEM;
		}
		d->nlabels++;
		bytes += kl + vl;
	}
	return 0;
}

/* Container ids come as "<runtime>://<id>"; the cgroup side has bare ids. */
static const char *strip_runtime(const char *id)
{
	const char *sep = strstr(id, "://");

	return sep ? sep + 3 : id;
}

static int decode_statuses(struct pod *d, const json_t *statuses, struct pods_stats *st)
{
	size_t i;
	json_t *cs;

	if (!json_is_array(statuses))
		return 0;
	json_array_foreach(statuses, i, cs) {
		const char *cid = json_str(cs, "containerID"), *name = json_str(cs, "name");
		struct pod_container *c;

		if (!cid || !*(cid = strip_runtime(cid)))
			continue;       /* not started yet */
		if (d->ncontainers == POD_MAX_CONTAINERS) {
			st->containers_dropped++;
			continue;
		}
		c = &d->containers[d->ncontainers];
		c->id = strdup(cid);
		if (!c->id || dup_to(&c->name, name)) {
			d->ncontainers++;
			return -ENOMEM;
		}
		d->ncontainers++;
	}
	return 0;
}

/* Decodes a Pod object. *out = NULL and 0 is never returned: 0 and a pod,
 * -EINVAL for an object without usable metadata, or -ENOMEM. Bound hits
 * are counted into st (caller's copy, merged under the lock). */
static int pod_decode(const json_t *obj, struct pod **out, struct pods_stats *st)
{
	static const char *const status_keys[] = {
		"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses",
	};
	const json_t *meta = json_object_get(obj, "metadata"), *status, *ann, *labels;
	const char *uid, *ns, *name, *mirror, *profile;
	struct pod *d;
	size_t nstat = 0;
	int err = -ENOMEM;

	*out = NULL;
	if (!json_is_object(obj) || !json_is_object(meta))
		return -EINVAL;
	uid = json_str(meta, "uid");
	ns = json_str(meta, "namespace");
	name = json_str(meta, "name");
	if (!uid || !ns || !name)
		return -EINVAL;
	ann = json_object_get(meta, "annotations");
	labels = json_object_get(meta, "labels");
	if ((ann && !json_is_object(ann) && !json_is_null(ann)) ||
	    (labels && !json_is_object(labels) && !json_is_null(labels)))
		return -EINVAL;
	status = json_object_get(obj, "status");

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->api_uid = uid_normalize(uid);
	if (!d->api_uid) {
		err = -EINVAL;  /* or ENOMEM; a bad UID is far likelier */
		goto fail;
	}
	mirror = json_str(ann, ANN_MIRROR);
	d->uid = mirror ? uid_normalize(mirror) : strdup(d->api_uid);
	if (!d->uid && !mirror)
		goto fail;
	if (!d->uid) {
		st->bad_mirror_uids++;  /* index by the API UID alone */
		d->uid = strdup(d->api_uid);
		if (!d->uid)
			goto fail;
	}
	if (dup_to(&d->namespace_, ns) || dup_to(&d->name, name) ||
	    dup_to(&d->service_name, json_str(ann, ANN_SERVICE)))
		goto fail;
	profile = json_str(ann, ANN_PROFILE);
	d->opted_out = profile && !strcmp(profile, "false");
	if (json_is_object(labels) && (err = decode_labels(d, labels, st)))
		goto fail;
	err = -ENOMEM;
	for (size_t k = 0; k < 3; k++)
		nstat += json_array_size(json_object_get(status, status_keys[k]));
	if (nstat) {
		d->containers = calloc(nstat < POD_MAX_CONTAINERS ? nstat : POD_MAX_CONTAINERS,
				       sizeof(*d->containers));
		if (!d->containers)
			goto fail;
	}
	for (size_t k = 0; k < 3; k++)
		if ((err = decode_statuses(d, json_object_get(status, status_keys[k]), st)))
			goto fail;
	*out = d;
	return 0;
fail:
	pod_free(d);
	return err;
}

/* ---- the index (callers hold p->lock) ---- */

static void unindex(struct pods *p, struct pod *d)
{
	map_del_if(&p->by_api_uid, api_uid_is, d->api_uid, d);
	map_del_if(&p->by_uid, uid_is, d->api_uid, d);
	map_del_if(&p->by_uid, uid_is, d->uid, d);
	for (size_t i = 0; i < d->ncontainers; i++)
		map_del_if(&p->by_cid, cid_is, d->containers[i].id, d);
}

/* Adds d; on failure nothing of d stays indexed. */
static int index_pod(struct pods *p, struct pod *d)
{
	int err;

	if ((err = map_put(&p->by_api_uid, api_uid_is, d->api_uid, d)) ||
	    (err = map_put(&p->by_uid, uid_is, d->api_uid, d)) ||
	    (err = map_put(&p->by_uid, uid_is, d->uid, d)))
		goto fail;
	for (size_t i = 0; i < d->ncontainers; i++)
		if ((err = map_put(&p->by_cid, cid_is, d->containers[i].id, d)))
			goto fail;
	return 0;
fail:
	unindex(p, d);
	return err;
}

static void pod_free_cb(uint64_t hash, void *val, void *ctx)
{
	(void)hash;
	(void)ctx;
	pod_free(val);
}

/* Removes and frees every pod. by_api_uid owns the pods. */
static void index_clear(struct pods *p)
{
	hashmap__each(&p->by_api_uid, pod_free_cb, NULL);
	hashmap__clear(&p->by_api_uid);
	hashmap__clear(&p->by_uid);
	hashmap__clear(&p->by_cid);
}

static void stats_merge(struct pods_stats *dst, const struct pods_stats *src)
{
	dst->bad_objects += src->bad_objects;
	dst->skipped_max_pods += src->skipped_max_pods;
	dst->labels_dropped += src->labels_dropped;
	dst->containers_dropped += src->containers_dropped;
	dst->bad_mirror_uids += src->bad_mirror_uids;
}

/* Takes d (indexes it or frees it). While a list is in progress, the
 * bound counts the pods this list has named (the older ones it does not
 * name go at its end), so the index holds at most twice max_pods for the
 * length of a list. */
static int upsert_locked(struct pods *p, struct pod *d)
{
	struct pod *old = map_get(&p->by_api_uid, api_uid_is, d->api_uid);
	bool named = p->listing && old && old->list_epoch == p->epoch;
	bool full = p->listing ? !named && p->list_seen >= p->max_pods :
				 !old && p->by_api_uid.len >= p->max_pods;
	int err;

	if (full) {
		if (!p->stats.skipped_max_pods++)
			pr_warn("pods: index full (%zu pods); pod '%s/%s' and later ones skipped",
				p->max_pods, d->namespace_, d->name);
		pod_free(d);
		return -ENOSPC;
	}
	if (old && pod_equal(old, d)) {
		pod_free(d);
		d = old;
	} else {
		if (old) {
			unindex(p, old);
			pod_free(old);
		}
		err = index_pod(p, d);
		p->generation++;
		if (err) {
			pod_free(d);
			return err;
		}
	}
	if (p->listing) {
		if (!named)
			p->list_seen++;
		d->list_epoch = p->epoch;
	}
	return 0;
}

/* ---- API ---- */

struct pods *pods__new(size_t max_pods)
{
	struct pods *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (pthread_mutex_init(&p->lock, NULL)) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->max_pods = max_pods;
	return p;
}

void pods__free(struct pods *p)
{
	if (!p)
		return;
	index_clear(p);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void count_bad(struct pods *p, const json_t *obj, int err)
{
	if (err != -EINVAL)
		return;
	pthread_mutex_lock(&p->lock);
	if (!p->stats.bad_objects++)
		pr_warn("pods: %s is not a usable Pod (no metadata.uid/namespace/name "
			"strings?); skipped, later ones counted",
			json_is_object(obj) ? "object" : "non-object");
	pthread_mutex_unlock(&p->lock);
}

int pods__upsert(struct pods *p, const json_t *pod)
{
	struct pods_stats st = { 0 };
	struct pod *d;
	int err = pod_decode(pod, &d, &st);

	if (err) {
		count_bad(p, pod, err);
		pthread_mutex_lock(&p->lock);
		stats_merge(&p->stats, &st);
		pthread_mutex_unlock(&p->lock);
		return err;
	}
	pthread_mutex_lock(&p->lock);
	stats_merge(&p->stats, &st);
	err = upsert_locked(p, d);
	pthread_mutex_unlock(&p->lock);
	return err;
}

int pods__remove(struct pods *p, const json_t *pod)
{
	const json_t *meta = json_object_get(pod, "metadata");
	char *uid = uid_normalize(json_str(meta, "uid"));
	struct pod *old;

	if (!uid) {
		count_bad(p, pod, -EINVAL);
		return -EINVAL;
	}
	pthread_mutex_lock(&p->lock);
	old = map_get(&p->by_api_uid, api_uid_is, uid);
	if (old) {
		unindex(p, old);
		pod_free(old);
		p->generation++;
	}
	pthread_mutex_unlock(&p->lock);
	free(uid);
	return 0;
}

void pods__list_begin(struct pods *p)
{
	pthread_mutex_lock(&p->lock);
	p->epoch++;
	p->listing = true;
	p->list_seen = 0;
	pthread_mutex_unlock(&p->lock);
}

int pods__list_page(struct pods *p, const json_t *page)
{
	const json_t *items = json_object_get(page, "items");
	struct pods_stats st = { 0 };
	size_t i, bad = 0;
	json_t *item;
	int err = 0;

	/* "items": null is how an empty list may be encoded. */
	if (!json_is_object(page) || (items && !json_is_array(items) && !json_is_null(items))) {
		count_bad(p, page, -EINVAL);
		return -EINVAL;
	}
	/* One pod at a time: decoded outside the lock, then swapped in, so
	 * lookups go on between the pods of a page. */
	json_array_foreach(items, i, item) {
		struct pod *d;
		int e = pod_decode(item, &d, &st);

		if (e == -EINVAL) {
			st.bad_objects++;
			bad++;
			continue;
		}
		pthread_mutex_lock(&p->lock);
		stats_merge(&p->stats, &st);
		st = (struct pods_stats){ 0 };
		if (!e) {
			if (!p->listing)
				e = -EINVAL;    /* no list in progress */
			else
				e = upsert_locked(p, d);
			if (e == -EINVAL)
				pod_free(d);
		}
		pthread_mutex_unlock(&p->lock);
		if (e && e != -ENOSPC) {
			err = e;
			break;
		}
	}
	pthread_mutex_lock(&p->lock);
	stats_merge(&p->stats, &st);
	pthread_mutex_unlock(&p->lock);
	if (bad)
		pr_warn("pods: %zu of %zu list items are not usable Pods; skipped", bad,
			json_array_size(items));
	return err;
}

struct stale {
	uint64_t epoch;
	struct pod **v;         /* NULL: find one pod only, into one */
	struct pod *one;
	size_t n;
};

static void find_stale(uint64_t hash, void *val, void *ctx)
{
	struct pod *d = val;
	struct stale *s = ctx;

	(void)hash;
	if (d->list_epoch == s->epoch)
		return;
	if (s->v)
		s->v[s->n++] = d;
	else if (!s->one)
		s->one = d;
}

/* Drops the pods the list did not name. */
static void drop_stale(struct pods *p)
{
	struct stale s = { .epoch = p->epoch };

	s.v = p->by_api_uid.len ? calloc(p->by_api_uid.len, sizeof(*s.v)) : NULL;
	if (s.v) {
		hashmap__each(&p->by_api_uid, find_stale, &s);
		for (size_t i = 0; i < s.n; i++) {
			unindex(p, s.v[i]);
			pod_free(s.v[i]);
		}
		free(s.v);
		return;
	}
	/* Empty, or out of memory for the array: one at a time. */
	for (;;) {
		s = (struct stale){ .epoch = p->epoch };
		hashmap__each(&p->by_api_uid, find_stale, &s);
		if (!s.one)
			return;
		unindex(p, s.one);
		pod_free(s.one);
	}
}

void pods__list_end(struct pods *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->listing) {
		drop_stale(p);
		p->listing = false;
		p->synced = true;
		p->generation++;
	}
	pthread_mutex_unlock(&p->lock);
}

void pods__list_abort(struct pods *p)
{
	pthread_mutex_lock(&p->lock);
	p->listing = false;
	pthread_mutex_unlock(&p->lock);
}

int pods__replace(struct pods *p, const json_t *pod_list)
{
	int err;

	pods__list_begin(p);
	err = pods__list_page(p, pod_list);
	if (err) {
		pods__list_abort(p);
		return err;
	}
	pods__list_end(p);
	return 0;
}

bool pods__synced(struct pods *p)
{
	bool s;

	pthread_mutex_lock(&p->lock);
	s = p->synced;
	pthread_mutex_unlock(&p->lock);
	return s;
}

void pods__mark_synced(struct pods *p)
{
	pthread_mutex_lock(&p->lock);
	if (!p->synced) {
		p->synced = true;
		p->generation++;
	}
	pthread_mutex_unlock(&p->lock);
}

static int info_fill(struct pod_info *out, const struct pod *d, const char *container)
{
	*out = (struct pod_info){ .opted_out = d->opted_out };
	if (dup_to(&out->uid, d->uid) || dup_to(&out->namespace_, d->namespace_) ||
	    dup_to(&out->name, d->name) || dup_to(&out->container, container) ||
	    dup_to(&out->service_name, d->service_name))
		goto nomem;
	if (d->nlabels) {
		out->labels = calloc(d->nlabels, sizeof(*out->labels));
		if (!out->labels)
			goto nomem;
	}
	for (size_t i = 0; i < d->nlabels; i++) {
		out->nlabels++;
		if (dup_to(&out->labels[i].key, d->labels[i].key) ||
		    dup_to(&out->labels[i].value, d->labels[i].value))
			goto nomem;
	}
	return 0;
nomem:
	pod_info__release(out);
	return -ENOMEM;
}

bool pods__lookup(struct pods *p, const char *container_id, const char *pod_uid,
		  struct pod_info *out)
{
	struct pod *d = NULL;
	const char *container = NULL;
	char *uid = NULL;
	bool found = false;

	if (pod_uid)
		uid = uid_normalize(pod_uid);
	pthread_mutex_lock(&p->lock);
	if (container_id && *container_id) {
		d = map_get(&p->by_cid, cid_is, container_id);
		for (size_t i = 0; d && i < d->ncontainers; i++)
			if (!strcmp(d->containers[i].id, container_id))
				container = d->containers[i].name;
	}
	if (!d && uid)
		d = map_get(&p->by_uid, uid_is, uid);
	if (d)
		found = !info_fill(out, d, container);
	pthread_mutex_unlock(&p->lock);
	free(uid);
	return found;
}

uint64_t pods__generation(struct pods *p)
{
	uint64_t g;

	pthread_mutex_lock(&p->lock);
	g = p->generation;
	pthread_mutex_unlock(&p->lock);
	return g;
}

size_t pods__count(struct pods *p)
{
	size_t n;

	pthread_mutex_lock(&p->lock);
	n = p->by_api_uid.len;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void pods__stats(struct pods *p, struct pods_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->stats;
	pthread_mutex_unlock(&p->lock);
}

void pod_info__release(struct pod_info *p)
{
	if (!p)
		return;
	free(p->uid);
	free(p->namespace_);
	free(p->name);
	free(p->container);
	free(p->service_name);
	for (size_t i = 0; i < p->nlabels; i++) {
		free(p->labels[i].key);
		free(p->labels[i].value);
	}
	free(p->labels);
	*p = (struct pod_info){ 0 };
}

const char *pod_info__label(const struct pod_info *p, const char *key)
{
	for (size_t i = 0; i < p->nlabels; i++)
		if (!strcmp(p->labels[i].key, key))
			return p->labels[i].value;
	return NULL;
}
