/* SPDX-License-Identifier: BSD-2-Clause */
/* The cgroup cache. Work is cached per cgroup, because every process of
 * a cgroup gets the same container, pod and unit:
 *
 *   by_text  hash of the /proc/PID/cgroup text -> entry. Used whenever the
 *            snapshot has a text: on hybrid hosts the v1 lines may carry
 *            the container while the v2 cgroup (whose id BPF reports) is
 *            "/" for every process, so the id alone would merge them.
 *   by_id    cgroup v2 id -> entry. An alias of a text entry when the text's
 *            identity is its v2 line's (cgroup_identity.from_v2) and the
 *            snapshot was taken in that same cgroup; otherwise an entry of
 *            its own whose path comes from the id itself (open_by_handle_at
 *            on the cgroup2 mount), for samples without a snapshot.
 *
 * Entries (at most max_cgroups, least recently used evicted, counted) keep
 * the parsed identity and what the pod index said (pod_lookup.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"
#include "metadata/metadata_priv.h"

/* The text's key in by_text. The texts are not kept: two texts whose
 * 64-bit hashes collide share an entry. Never 0, which means "no key". */
static uint64_t text_key(const char *text, size_t n)
{
	uint64_t h = hash__bytes(text, n);

	return h ? h : 1;
}

void cgroup_cache__clear_pod(struct metadata *md, struct cg_entry *e)
{
	free(e->namespace_);
	free(e->pod);
	free(e->container);
	free(e->service_name);
	e->namespace_ = e->pod = e->container = e->service_name = NULL;
	for (size_t i = 0; e->pod_label_values && i < md->npod_labels; i++) {
		free(e->pod_label_values[i]);
		e->pod_label_values[i] = NULL;
	}
	e->pod_found = false;
}

static void entry_free(struct metadata *md, struct cg_entry *e)
{
	if (!e)
		return;
	cgroup_cache__clear_pod(md, e);
	free(e->pod_label_values);
	free(e);
}

static void entry_touch(struct metadata *md, struct cg_entry *e)
{
	md->stats.cgroup_hits++;
	lru__touch(&md->lru, &e->lru);
}

void cgroup_cache__remove(struct metadata *md, struct cg_entry *e)
{
	if (e->text_key && hashmap__get_u64(&md->by_text, e->text_key) == e)
		hashmap__del_u64(&md->by_text, e->text_key);
	if (e->id_key && hashmap__get_u64(&md->by_id, e->id_key) == e)
		hashmap__del_u64(&md->by_id, e->id_key);
	lru__unlink(&md->lru, &e->lru);
	md->nentries--;
	entry_free(md, e);
}

/* A new entry at the LRU head, evicting the least recently used one when
 * the cache is full. NULL on ENOMEM. */
static struct cg_entry *entry_new(struct metadata *md)
{
	struct cg_entry *e;

	if (md->nentries >= md->max_cgroups && md->lru.tail) {
		if (!md->warned_evict) {
			md->warned_evict = true;
			pr_info("metadata: cgroup cache full (%zu cgroups); evicting the least recently used (raise --max-cgroups if this repeats)",
				md->max_cgroups);
		}
		cgroup_cache__remove(md, LRU_ENTRY(md->lru.tail, struct cg_entry, lru));
		md->stats.cgroup_evictions++;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	if (md->npod_labels) {
		e->pod_label_values = calloc(md->npod_labels, sizeof(*e->pod_label_values));
		if (!e->pod_label_values) {
			free(e);
			return NULL;
		}
	}
	md->stats.cgroup_misses++;
	md->nentries++;
	lru__push(&md->lru, &e->lru);
	return e;
}

static int entry_index(struct metadata *md, struct hashmap *map, uint64_t key,
		       struct cg_entry *e, uint64_t *slot)
{
	int err = hashmap__put_u64(map, key, e);

	if (err)
		return err;
	*slot = key;
	return 0;
}

static struct cg_entry *entry_for_text(struct metadata *md, const char *text, uint64_t cgid,
				       bool same_cgroup, pid_t pid)
{
	size_t n = strlen(text);
	uint64_t tk = text_key(text, n);
	struct cg_entry *e = hashmap__get_u64(&md->by_text, tk);

	if (e) {
		entry_touch(md, e);
	} else {
		e = entry_new(md);
		if (!e)
			return NULL;
		if (cgroup__identify(text, n, &e->id) == CGROUP_INVALID) {
			md->stats.cgroup_unparsed++;
			if (!md->warned_unparsed) {
				char show[LOG_STR_MAX];

				md->warned_unparsed = true;
				pr_warn("pid %d: cgroup text '%s' has no valid line; labelled as a host process, later ones counted",
					pid, md_options__loggable(text, show, sizeof(show)));
			}
		}
		if (entry_index(md, &md->by_text, tk, e, &e->text_key)) {
			cgroup_cache__remove(md, e);
			return NULL;
		}
	}
	/* The text speaks for its v2 cgroup: samples of that cgroup without
	 * a snapshot get the same answer. */
	if (cgid && same_cgroup && e->id.from_v2 && !e->id_key &&
	    !hashmap__get_u64(&md->by_id, cgid))
		entry_index(md, &md->by_id, cgid, e, &e->id_key);
	return e;
}

static struct cg_entry *entry_for_id(struct metadata *md, uint64_t cgid)
{
	struct cg_entry *e = hashmap__get_u64(&md->by_id, cgid);
	char line[CGROUP_PATH_MAX + 3];
	int err;

	if (e) {
		entry_touch(md, e);
		return e;
	}
	e = entry_new(md);
	if (!e)
		return NULL;
	memcpy(line, "0::", 3);
	err = md_options__cgroup2_path(md, cgid, line + 3, sizeof(line) - 3);
	if (err == 0) {
		cgroup__identify_line(line, strlen(line), &e->id);
		md->stats.cgroup_ids_resolved++;
	} else {
		md->stats.cgroup_ids_unresolved++;
		pr_debug("cgroup id %" PRIu64 ": no path (%s)", cgid, strerror(-err));
		/* Without the capability no id will map: stop trying. */
		if (err == -EPERM && md->cgroup2_fd >= 0) {
			pr_info("metadata: cannot map cgroup ids to paths (open_by_handle_at needs CAP_DAC_READ_SEARCH); processes gone before their snapshot get no container labels");
			close(md->cgroup2_fd);
			md->cgroup2_fd = -1;
		}
	}
	if (entry_index(md, &md->by_id, cgid, e, &e->id_key)) {
		cgroup_cache__remove(md, e);
		return NULL;
	}
	return e;
}

/* The entry for a sample: its snapshot's cgroup text, unless the process
 * has moved since the snapshot and its sampled cgroup is known by id; else
 * its cgroup id. NULL when neither is known. */
struct cg_entry *cgroup_cache__entry_for(struct metadata *md, const struct kiln_sample_key *key,
				  const struct proc_snapshot *snap)
{
	const char *text = snap && snap->cgroup && snap->cgroup[0] ? snap->cgroup : NULL;
	uint64_t cgid = key->cgroup_id;
	bool same = snap && snap->cgroup_id == cgid;

	if (text && (!cgid || same || !hashmap__get_u64(&md->by_id, cgid)))
		return entry_for_text(md, text, cgid, same, (pid_t)key->pid);
	if (cgid)
		return entry_for_id(md, cgid);
	return NULL;
}
