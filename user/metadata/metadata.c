// SPDX-License-Identifier: BSD-2-Clause
/* Metadata: a sample's process -> one canonical label set and a verdict.
 *
 * DESIGN. Work is cached per cgroup, because every process of a cgroup
 * gets the same container, pod and unit:
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
 * the parsed identity and what the pod index said: pod fields, service
 * name, --pod-label values, verdict, and the index generation then. An
 * entry looks the pod up again when the generation has moved and at least
 * RECHECK_NS have passed since its last lookup, so a container the watcher
 * has not reported yet gets its names within a drain or two of the pod's
 * arrival, and a busy node's stream of pod updates costs each entry at
 * most one locked lookup per RECHECK_NS.
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
 * Names are unique: built-in names cannot be taken by a --tag or
 * --pod-label (metadata__new refuses), and --tag's and --pod-label's may
 * not collide with one another. Values are valid UTF-8 (invalid bytes
 * become '?') of at most 2048 bytes, cut at a character boundary.
 *
 * Verdicts: a process in a pod is matched by its namespace against the
 * include globs (when any) and the exclude globs, then by the pod's
 * kiln.dev/profile: "false" annotation. A process with no known pod
 * (host, kernel, a container the index does not know) has no namespace:
 * an include list excludes it, an exclude list never does.
 *
 * Locking: md->lock covers the cache and counters; metadata__labels holds
 * it for a whole lookup, metadata__stats to copy the counters. The pod
 * index has its own lock, taken inside. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/u64map.h"
#include "metadata/cgroup.h"
#include "metadata/kube.h"
#include "metadata/metadata.h"
#include "metadata/pods.h"

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

const char *const metadata_verdict_names[METADATA_VERDICT_COUNT] = {
	[METADATA_KEEP] = "keep",
	[METADATA_EXCLUDED_NAMESPACE] = "excluded_namespace",
	[METADATA_OPTED_OUT] = "opted_out",
};

static const char *const builtin_names[] = {
	"service_name", "node", "namespace", "pod", "container", "container_id",
	"pod_uid", "systemd_unit",
};

/* Length of the valid UTF-8 sequence at s[0..n), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, beyond U+10FFFF. */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static bool utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0, l; i < n; i += l)
		if (!(l = utf8_len((const unsigned char *)s + i, n - i)))
			return false;
	return true;
}

struct pair {
	const char *name, *value;
};

struct builder {
	struct pair pairs[MAX_LABELS + 16];
	size_t n;
	uint64_t dropped;
};

/* Adds name=value unless the value is empty (Prometheus semantics: an
 * empty value is no label) or name is already there (earlier adds win). */
static void add(struct builder *b, const char *name, const char *value)
{
	if (!value || !*value)
		return;
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->pairs[i].name, name) == 0)
			return;
	if (b->n == MAX_LABELS) {
		b->dropped++;
		return;
	}
	b->pairs[b->n++] = (struct pair){ name, value };
}

/* Appends value as valid UTF-8 of at most VALUE_MAX_BYTES. true when it
 * had to be changed. */
static bool append_value(struct labels *l, const char *v)
{
	size_t n = strlen(v), out = 0;
	bool changed = false;

	for (size_t i = 0; i < n;) {
		size_t cl = utf8_len((const unsigned char *)v + i, n - i);

		if (out + (cl ? cl : 1) > VALUE_MAX_BYTES) {
			changed = true;
			break;
		}
		if (cl) {
			memcpy(l->buf + l->len + out, v + i, cl);
			i += cl;
			out += cl;
		} else {
			l->buf[l->len + out++] = '?';
			i++;
			changed = true;
		}
	}
	l->buf[l->len + out] = '\0';
	l->len += out + 1;
	return changed;
}

/* Serializes the pairs sorted by name into out. */
static int builder_emit(struct builder *b, struct labels *out, struct metadata_stats *st)
{
	size_t need = 0;

	/* Insertion sort: a handful of pairs. */
	for (size_t i = 1; i < b->n; i++) {
		struct pair p = b->pairs[i];
		size_t j = i;

		for (; j > 0 && strcmp(b->pairs[j - 1].name, p.name) > 0; j--)
			b->pairs[j] = b->pairs[j - 1];
		b->pairs[j] = p;
	}
	for (size_t i = 0; i < b->n; i++) {
		size_t vl = strlen(b->pairs[i].value);

		need += strlen(b->pairs[i].name) + 2 + (vl < VALUE_MAX_BYTES ? vl : VALUE_MAX_BYTES);
	}
	out->len = 0;
	out->n = 0;
	if (labels__reserve(out, need))
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		size_t nl = strlen(b->pairs[i].name) + 1;

		memcpy(out->buf + out->len, b->pairs[i].name, nl);
		out->len += nl;
		if (append_value(out, b->pairs[i].value))
			st->label_values_truncated++;
		out->n++;
	}
	st->labels_dropped += b->dropped;
	return 0;
}

/* ---- configuration ---- */

struct pod_label_copy {
	char *key;                      /* pod label key */
	char *name;                     /* sanitized label name */
};

struct tag {
	char *name, *value;
};

struct cg_entry {
	struct cg_entry *prev, *next;   /* LRU list, most recent first */
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
	struct u64map by_text, by_id;
	struct cg_entry *head, *tail;
	size_t nentries;
	struct pods *pods;
	bool own_pods;
	struct kube *kube;
	int cgroup2_fd;                 /* -1: ids are not mapped to paths */
	char *cgroup2_mnt;
	struct metadata_stats stats;    /* cache and label counters */
	bool warned_unparsed, warned_nomem, warned_evict;
};

/* s for a log line: at most 80 input bytes, anything outside printable
 * ASCII as \xHH, "..." when cut. */
static const char *loggable(const char *s, char *buf, size_t size)
{
	size_t o = 0, i = 0;

	for (; s[i] && i < 80 && o + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
	}
	if (s[i] && o + 4 <= size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static bool is_builtin(const char *name)
{
	for (size_t i = 0; i < sizeof(builtin_names) / sizeof(builtin_names[0]); i++)
		if (strcmp(builtin_names[i], name) == 0)
			return true;
	return false;
}

/* A label name from s[0..n): [a-zA-Z_][a-zA-Z0-9_]*, every other byte '_',
 * '_' before a leading digit. malloc'd, or NULL (errno ENOMEM, or EINVAL
 * for an empty or over-long result). */
static char *sanitize_name(const char *s, size_t n)
{
	bool digit = n && s[0] >= '0' && s[0] <= '9';
	size_t len = n + (digit ? 1 : 0), o = 0;
	char *name;

	if (!n || len > NAME_MAX_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	name = malloc(len + 1);
	if (!name)
		return NULL;
	if (digit)
		name[o++] = '_';
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		name[o++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' ? c : '_';
	}
	name[o] = '\0';
	return name;
}

/* A name taken by a built-in label, reserved ("__" prefix) or already
 * used by an earlier --tag / --pod-label. */
static const char *name_conflict(const struct metadata *md, const char *name)
{
	if (is_builtin(name))
		return "is a built-in label";
	if (strncmp(name, "__", 2) == 0)
		return "starts with '__' (reserved)";
	for (size_t i = 0; i < md->ntags; i++)
		if (strcmp(md->tags[i].name, name) == 0)
			return "is already a --tag";
	for (size_t i = 0; i < md->npod_labels; i++)
		if (strcmp(md->pod_labels[i].name, name) == 0)
			return "is already a --pod-label";
	return NULL;
}

static int parse_tag(struct metadata *md, const char *spec)
{
	const char *eq = strchr(spec, '='), *why;
	struct tag *t = &md->tags[md->ntags];
	char show[LOG_STR_MAX];
	size_t vl;

	loggable(spec, show, sizeof(show));
	if (!eq || eq == spec) {
		pr_error("tag '%s': not KEY=VALUE", show);
		return -EINVAL;
	}
	vl = strlen(eq + 1);
	if (!vl || vl > VALUE_MAX_BYTES || !utf8_valid(eq + 1, vl)) {
		pr_error("tag '%s': the value must be 1..%d bytes of UTF-8", show,
			 VALUE_MAX_BYTES);
		return -EINVAL;
	}
	t->name = sanitize_name(spec, (size_t)(eq - spec));
	if (!t->name) {
		if (errno == EINVAL)
			pr_error("tag '%s': the name is longer than %d bytes", show,
				 NAME_MAX_BYTES);
		return -errno;
	}
	why = name_conflict(md, t->name);
	if (why) {
		pr_error("tag '%s': label name '%s' %s", show, t->name, why);
		free(t->name);
		t->name = NULL;
		return -EINVAL;
	}
	t->value = strdup(eq + 1);
	if (!t->value) {
		free(t->name);
		t->name = NULL;
		return -ENOMEM;
	}
	md->ntags++;
	return 0;
}

static int parse_pod_label(struct metadata *md, const char *key)
{
	struct pod_label_copy *c = &md->pod_labels[md->npod_labels];
	char show[LOG_STR_MAX];
	const char *why;

	loggable(key, show, sizeof(show));
	c->name = sanitize_name(key, strlen(key));
	if (!c->name) {
		if (errno == EINVAL)
			pr_error("pod label '%s': empty or longer than %d bytes", show,
				 NAME_MAX_BYTES);
		return -errno;
	}
	why = name_conflict(md, c->name);
	if (why) {
		pr_error("pod label '%s': label name '%s' %s", show, c->name, why);
		free(c->name);
		c->name = NULL;
		return -EINVAL;
	}
	c->key = strdup(key);
	if (!c->key) {
		free(c->name);
		c->name = NULL;
		return -ENOMEM;
	}
	md->npod_labels++;
	return 0;
}

static int copy_globs(const char *what, const char *const *in, size_t n, char ***out)
{
	if (!n)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!in[i] || !*in[i]) {
			pr_error("%s namespace pattern %zu: empty", what, i + 1);
			return -EINVAL;
		}
		(*out)[i] = strdup(in[i]);
		if (!(*out)[i])
			return -ENOMEM;
	}
	return 0;
}

static char *resolve_node(const char *opt)
{
	const char *env = getenv("NODE_NAME");
	char host[256];

	if (opt && *opt)
		return strdup(opt);
	if (env && *env)
		return strdup(env);
	if (gethostname(host, sizeof(host)) == 0 && host[0]) {
		host[sizeof(host) - 1] = '\0';
		return strdup(host);
	}
	return strdup("unknown");
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Opens the first cgroup2 mount whose root is the hierarchy's root, for
 * cgroup id -> path. Leaves cgroup2_fd -1 when there is none. */
static void cgroup2_open(struct metadata *md)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	md->cgroup2_fd = -1;
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		char root[4096], mnt[4096];
		const char *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0 ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    strcmp(root, "/") != 0)
			continue;
		unescape_mountinfo(mnt);
		md->cgroup2_fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (md->cgroup2_fd >= 0) {
			md->cgroup2_mnt = strdup(mnt);
			if (!md->cgroup2_mnt) {
				close(md->cgroup2_fd);
				md->cgroup2_fd = -1;
			}
		}
		break;
	}
	free(line);
	fclose(f);
}

/* The cgroup v2 path of id ("/system.slice/x.service") into buf. 0, or
 * -errno (-ENOENT: the cgroup is gone; -EPERM: no CAP_DAC_READ_SEARCH). */
static int cgroup2_path(struct metadata *md, uint64_t id, char *buf, size_t size)
{
	/* FILEID_KERNFS: a kernfs node's 64-bit id, which is the cgroup id
	 * bpf_get_current_cgroup_id() returns (kernel 5.5+). */
	const int fileid_kernfs = 0xfe;
	union {
		struct file_handle fh;
		char bytes[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	char link[64], path[CGROUP_PATH_MAX];
	size_t ml = strlen(md->cgroup2_mnt);
	ssize_t n;
	int fd, err = 0;

	if (md->cgroup2_fd < 0)
		return -ENOTSUP;
	h.fh.handle_bytes = sizeof(uint64_t);
	h.fh.handle_type = fileid_kernfs;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(md->cgroup2_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESTALE ? -ENOENT : -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	path[n] = '\0';
	/* The mount point itself is the root cgroup. */
	if (strncmp(path, md->cgroup2_mnt, ml) != 0 || (path[ml] != '/' && path[ml] != '\0'))
		return -EXDEV;
	if ((size_t)snprintf(buf, size, "%s", path[ml] ? path + ml : "/") >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- the cgroup cache ---- */

static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;    /* FNV-1a, then a 64-bit finalizer */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h ? h : 1;
}

static void entry_clear_pod(struct metadata *md, struct cg_entry *e)
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
	entry_clear_pod(md, e);
	free(e->pod_label_values);
	free(e);
}

static void lru_unlink(struct metadata *md, struct cg_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		md->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		md->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct metadata *md, struct cg_entry *e)
{
	e->next = md->head;
	e->prev = NULL;
	if (md->head)
		md->head->prev = e;
	md->head = e;
	if (!md->tail)
		md->tail = e;
}

static void entry_touch(struct metadata *md, struct cg_entry *e)
{
	md->stats.cgroup_hits++;
	if (md->head != e) {
		lru_unlink(md, e);
		lru_push(md, e);
	}
}

static void entry_remove(struct metadata *md, struct cg_entry *e)
{
	if (e->text_key && u64map__get(&md->by_text, e->text_key) == e)
		u64map__del(&md->by_text, e->text_key);
	if (e->id_key && u64map__get(&md->by_id, e->id_key) == e)
		u64map__del(&md->by_id, e->id_key);
	lru_unlink(md, e);
	md->nentries--;
	entry_free(md, e);
}

/* A new entry at the LRU head, evicting the least recently used one when
 * the cache is full. NULL on ENOMEM. */
static struct cg_entry *entry_new(struct metadata *md)
{
	struct cg_entry *e;

	if (md->nentries >= md->max_cgroups && md->tail) {
		if (!md->warned_evict) {
			md->warned_evict = true;
			pr_info("metadata: cgroup cache full (%zu cgroups); evicting the least recently used (raise --max-cgroups if this repeats)",
				md->max_cgroups);
		}
		entry_remove(md, md->tail);
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
	lru_push(md, e);
	return e;
}

static int entry_index(struct metadata *md, struct u64map *map, uint64_t key,
		       struct cg_entry *e, uint64_t *slot)
{
	int err = u64map__put(map, key, e);

	if (err)
		return err;
	*slot = key;
	return 0;
}

static struct cg_entry *entry_for_text(struct metadata *md, const char *text, uint64_t cgid,
				       bool same_cgroup, pid_t pid)
{
	size_t n = strlen(text);
	uint64_t tk = text_hash(text, n);
	struct cg_entry *e = u64map__get(&md->by_text, tk);

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
					pid, loggable(text, show, sizeof(show)));
			}
		}
		if (entry_index(md, &md->by_text, tk, e, &e->text_key)) {
			entry_remove(md, e);
			return NULL;
		}
	}
	/* The text speaks for its v2 cgroup: samples of that cgroup without
	 * a snapshot get the same answer. */
	if (cgid && same_cgroup && e->id.from_v2 && !e->id_key &&
	    !u64map__get(&md->by_id, cgid))
		entry_index(md, &md->by_id, cgid, e, &e->id_key);
	return e;
}

static struct cg_entry *entry_for_id(struct metadata *md, uint64_t cgid)
{
	struct cg_entry *e = u64map__get(&md->by_id, cgid);
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
	err = cgroup2_path(md, cgid, line + 3, sizeof(line) - 3);
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
		entry_remove(md, e);
		return NULL;
	}
	return e;
}

/* The entry for a sample: its snapshot's cgroup text, unless the process
 * has moved since the snapshot and its sampled cgroup is known by id; else
 * its cgroup id. NULL when neither is known. */
static struct cg_entry *entry_for(struct metadata *md, const struct kiln_sample_key *key,
				  const struct proc_snapshot *snap)
{
	const char *text = snap && snap->cgroup && snap->cgroup[0] ? snap->cgroup : NULL;
	uint64_t cgid = key->cgroup_id;
	bool same = snap && snap->cgroup_id == cgid;

	if (text && (!cgid || same || !u64map__get(&md->by_id, cgid)))
		return entry_for_text(md, text, cgid, same, (pid_t)key->pid);
	if (cgid)
		return entry_for_id(md, cgid);
	return NULL;
}

/* ---- pods ---- */

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
	entry_clear_pod(md, e);
	return -ENOMEM;
}

/* Looks the entry's pod up when it has never been, or when the index has
 * changed and RECHECK_NS have passed; sets its verdict. */
static void entry_resolve(struct metadata *md, struct cg_entry *e)
{
	const char *cid = e->id.container_id[0] ? e->id.container_id : NULL;
	const char *uid = e->id.pod_uid[0] ? e->id.pod_uid : NULL;
	struct pod_info info = { 0 };
	bool opted_out = false;
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
	if (e->looked_up && now - e->checked_ns < RECHECK_NS)
		return;
	entry_clear_pod(md, e);
	md->stats.pod_lookups++;
	if (pods__lookup(md->pods, cid, uid, &info)) {
		opted_out = info.opted_out;
		if (entry_take_pod(md, e, &info) && !md->warned_nomem) {
			md->warned_nomem = true;
			pr_warn("metadata: out of memory; pod labels missing");
		}
		pod_info__release(&info);
	}
	if (cid && !e->container && !e->counted_unknown) {
		/* Includes sandboxes, whose ids no status names. */
		e->counted_unknown = true;
		md->stats.kube_unknown_containers++;
	}
	e->looked_up = true;
	e->generation = gen;
	e->checked_ns = now;
	e->verdict = e->pod_found ? pod_verdict(md, e->namespace_, opted_out) :
		     md->podless_verdict;
}

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
	       key->ustack < 0;
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

static void build(struct metadata *md, struct builder *b, const struct cg_entry *e,
		  const struct kiln_sample_key *key, const struct proc_snapshot *snap,
		  char *unit_buf, char *id_buf, char *comm_buf, size_t comm_size)
{
	const struct cgroup_identity *id = e ? &e->id : NULL;

	if (e && e->pod_found) {
		add(b, "service_name", e->service_name);
		add(b, "node", md->node);
		add(b, "namespace", e->namespace_);
		add(b, "pod", e->pod);
		add(b, "container", e->container);
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
		add(b, "service_name", svc);
		add(b, "node", md->node);
		if (id && id->container_id[0]) {
			memcpy(id_buf, id->container_id, SHORT_ID_LEN);
			id_buf[SHORT_ID_LEN] = '\0';
			add(b, "container_id", id_buf);
		}
		if (id)
			add(b, "pod_uid", id->pod_uid);
	}
	if (id)
		add(b, "systemd_unit", id->systemd_unit);
	for (size_t i = 0; e && e->pod_found && i < md->npod_labels; i++)
		add(b, md->pod_labels[i].name, e->pod_label_values[i]);
	for (size_t i = 0; i < md->ntags; i++)
		add(b, md->tags[i].name, md->tags[i].value);
}

enum metadata_verdict metadata__labels(struct metadata *md,
				       const struct kiln_sample_key *key,
				       const struct proc_snapshot *snap,
				       uint64_t count, struct labels *out)
{
	char unit[CGROUP_UNIT_MAX + 1], short_id[SHORT_ID_LEN + 1], comm[KILN_COMM_LEN + 1];
	enum metadata_verdict verdict = md->podless_verdict;
	struct builder b = { .n = 0 };
	struct cg_entry *e = NULL;

	pthread_mutex_lock(&md->lock);
	if (is_kernel(key, snap)) {
		add(&b, "service_name", "kernel");
		add(&b, "node", md->node);
		for (size_t i = 0; i < md->ntags; i++)
			add(&b, md->tags[i].name, md->tags[i].value);
	} else {
		e = entry_for(md, key, snap);
		if (e) {
			entry_resolve(md, e);
			verdict = e->verdict;
		}
		build(md, &b, e, key, snap, unit, short_id, comm, sizeof(comm));
	}
	if (builder_emit(&b, out, &md->stats) && !md->warned_nomem) {
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
	while (md->head)
		entry_remove(md, md->head);
	u64map__clear(&md->by_text);
	u64map__clear(&md->by_id);
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
	md->node = resolve_node(opts->node_name);
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
		if ((err = parse_tag(md, opts->tags[i] ? opts->tags[i] : "")))
			goto fail;
	for (size_t i = 0; i < opts->npod_labels; i++)
		if ((err = parse_pod_label(md, opts->pod_labels[i] ? opts->pod_labels[i] : "")))
			goto fail;
	/* Counted as they are copied, so a failure frees what was made. */
	md->ninclude = opts->ninclude_namespaces;
	md->nexclude = opts->nexclude_namespaces;
	if ((err = copy_globs("include", opts->include_namespaces, md->ninclude, &md->include)) ||
	    (err = copy_globs("exclude", opts->exclude_namespaces, md->nexclude, &md->exclude)))
		goto fail;
	md->podless_verdict = md->ninclude ? METADATA_EXCLUDED_NAMESPACE : METADATA_KEEP;
	if ((err = start_pods(md, opts)))
		goto fail;
	if (!md->pods && (md->ninclude || md->nexclude))
		pr_warn("metadata: namespace filters without a pod watcher: %s",
			md->ninclude ? "every process is excluded" : "they never match");
	cgroup2_open(md);
	return md;
fail:
	metadata__free(md);
	errno = -err;
	return NULL;
}
