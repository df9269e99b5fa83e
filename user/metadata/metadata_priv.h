/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of the metadata stage share: struct metadata, the cgroup
 * cache entry, the label builder, and each file's entry points. Private to
 * user/metadata/metadata*.c and its section files; the rest of kiln sees
 * only metadata.h.
 *
 *   label_builder.c  the label pairs of one set -> canonical struct labels
 *   options.c        --tag, --pod-label, namespace globs, node name, the
 *                    cgroup2 mount that maps cgroup ids to paths
 *   cgroup_cache.c   cgroup text / id -> cached entry, LRU-bounded
 *   pod_lookup.c     an entry's pod from the index, and its verdict
 *   metadata.c       the labels of one sample, stats, lifecycle
 *
 * Every function taking a struct metadata expects md->lock held by the
 * caller (metadata__labels), or the object not yet shared (metadata__new,
 * metadata__free). */
#ifndef KILN_METADATA_METADATA_PRIV_H
#define KILN_METADATA_METADATA_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hashmap.h"
#include "core/lru.h"
#include "metadata/cgroup.h"
#include "metadata/metadata.h"

#define DEFAULT_MAX_CGROUPS 4096
#define DEFAULT_MAX_PODS 1024
#define RECHECK_NS (500ull * 1000000ull)
/* Pyroscope: at most 30 labels a series, __name__ (added on push)
 * included; names up to 1024 bytes, values up to 2048. */
#define MAX_LABELS 29
#define NAME_MAX_BYTES 1024
#define VALUE_MAX_BYTES 2048
#define SHORT_ID_LEN 12
/* service_name, node, namespace, pod, container, systemd_unit: the most
 * built-in labels one set carries. */
#define MAX_BUILTIN_LABELS 6
/* A user string in a log line, escaped: 80 bytes at 4 each, "...". */
#define LOG_STR_MAX (80 * 4 + 4)
/* A cgroup path mapped from an id, "0::" included. */
#define CGROUP_PATH_MAX 4200

struct pod_label_copy {
	char *key;                      /* pod label key */
	char *name;                     /* sanitized label name */
};

struct tag {
	char *name, *value;
};

struct cg_entry {
	struct lru_node lru;            /* in md->lru, most recent first */
	uint64_t text_key, id_key;      /* keys in by_text / by_id, 0: none */
	struct cgroup_identity id;      /* kind CGROUP_INVALID: nothing known */
	/* Pod index answer at `generation`, looked up at `checked_ns`. */
	bool looked_up, pod_found, counted_unknown;
	uint64_t generation, checked_ns;
	char *namespace_, *pod, *container, *service_name;
	char **pod_label_values;        /* [md->npod_labels], entries may be NULL */
	enum metadata_verdict verdict;
};

struct metadata {
	pthread_mutex_t lock;
	char *node;
	struct tag *tags;
	size_t ntags;
	struct pod_label_copy *pod_labels;
	size_t npod_labels;
	char **include, **exclude;
	size_t ninclude, nexclude;
	enum metadata_verdict podless_verdict;  /* processes with no known pod */
	size_t max_cgroups;
	struct hashmap by_text, by_id;  /* u64 keys -> struct cg_entry */
	struct lru lru;                 /* of struct cg_entry */
	size_t nentries;
	struct pods *pods;
	bool own_pods;
	struct kube *kube;
	int cgroup2_fd;                 /* -1: ids are not mapped to paths */
	char *cgroup2_mnt;
	struct metadata_stats stats;    /* cache and label counters */
	bool warned_unparsed, warned_nomem, warned_evict;
};

/* ---- label_builder.c ---- */

struct label_pair {
	const char *name, *value;       /* borrowed until emit */
};

/* Zero-initialized is empty. */
struct label_builder {
	struct label_pair pairs[MAX_LABELS + 16];
	size_t n;
	uint64_t dropped;               /* adds beyond MAX_LABELS */
};

bool label_builder__utf8_valid(const char *s, size_t n);
/* Adds name=value unless the value is empty (Prometheus semantics: an
 * empty value is no label) or name is already there (earlier adds win). */
void label_builder__add(struct label_builder *b, const char *name, const char *value);
/* Serializes the pairs sorted by name into out, counting truncated values
 * and dropped labels in st. 0 or -ENOMEM (out left empty). */
int label_builder__emit(struct label_builder *b, struct labels *out, struct metadata_stats *st);

/* ---- options.c ---- */

/* s for a log line, escaped and cut, in buf (LOG_STR_MAX fits any s). */
const char *md_options__loggable(const char *s, char *buf, size_t size);
/* One --tag KEY=VALUE / --pod-label KEY into md (arrays sized by the
 * caller). 0 or -errno, logged; nothing is added on failure. */
int md_options__parse_tag(struct metadata *md, const char *spec);
int md_options__parse_pod_label(struct metadata *md, const char *key);
/* Copies n namespace globs into *out (calloc'd, the caller frees n). */
int md_options__copy_globs(const char *what, const char *const *in, size_t n, char ***out);
/* opt, else $NODE_NAME, else the hostname, else "unknown"; malloc'd. */
char *md_options__resolve_node(const char *opt);
/* Opens the cgroup2 mount for id -> path; md->cgroup2_fd stays -1 without. */
void md_options__cgroup2_open(struct metadata *md);
/* The cgroup v2 path of id into buf. 0, or -errno (-ENOENT: the cgroup is
 * gone; -EPERM: no CAP_DAC_READ_SEARCH). */
int md_options__cgroup2_path(struct metadata *md, uint64_t id, char *buf, size_t size);

/* ---- cgroup_cache.c ---- */

/* The entry of a sample's cgroup, made on a miss; NULL when neither a
 * cgroup text nor an id is known, or on ENOMEM. */
struct cg_entry *cgroup_cache__entry_for(struct metadata *md, const struct kiln_sample_key *key,
					 const struct proc_snapshot *snap);
/* Drops e from both indexes and the LRU list and frees it. */
void cgroup_cache__remove(struct metadata *md, struct cg_entry *e);
/* Forgets what the pod index said about e. */
void cgroup_cache__clear_pod(struct metadata *md, struct cg_entry *e);

/* ---- pod_lookup.c ---- */

/* Looks e's pod up when it never was, or when the index has changed and
 * RECHECK_NS have passed; sets e->verdict. */
void pod_lookup__resolve(struct metadata *md, struct cg_entry *e);

#endif
