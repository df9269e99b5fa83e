// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN. A cgroup path is read component by component, never anchored at
 * its start: paths may be relative to a cgroup namespace ("/../../kubepods-
 * ..."), sit under a custom cgroupRoot ("/kubelet.slice/kubelet-kubepods
 * .slice/...") or inside another container (kind nodes, docker-in-docker).
 *
 * - A pod component is "pod<uid>" (cgroupfs driver) or "<...kubepods...>-pod
 *   <uid>.slice" (systemd driver, "_" for "-" in the UID), the latter
 *   possibly followed by ":<runtime>:<id>" (cgroup v1 containerd without
 *   systemd cgroups). The deepest pod component counts.
 * - A container component is "<prefix>-<64 hex>[.scope]" with a known
 *   runtime prefix, a bare "<64 hex>", or the v1 ":<runtime>:<64 hex>"
 *   suffix. Below a pod only components deeper than the pod count, so an
 *   outer container (a kind node) is never taken for the pod's container.
 *   The deepest one counts.
 * - Monitors are not workloads: "crio-conmon-<id>", "libpod-conmon-<id>".
 *   Neither is a 32-hex or UUID component on its own (GNOME's vte-spawn
 *   scopes, "/process_api/<32 hex>") nor anything in a "*.mount" unit.
 * - Ids are lowercase hex as runtimes write them; anything else (uppercase,
 *   63 or 65 digits) is not an id. */
#include <string.h>

#include "metadata/cgroup.h"

struct span {
	const char *s;
	size_t n;
};

static bool span_eq(struct span a, const char *lit)
{
	size_t n = strlen(lit);

	return a.n == n && memcmp(a.s, lit, n) == 0;
}

static bool span_ends(struct span a, const char *lit)
{
	size_t n = strlen(lit);

	return a.n >= n && memcmp(a.s + a.n - n, lit, n) == 0;
}

static bool span_starts(struct span a, const char *lit)
{
	size_t n = strlen(lit);

	return a.n >= n && memcmp(a.s, lit, n) == 0;
}

static bool span_has(struct span a, const char *lit)
{
	size_t n = strlen(lit);

	for (size_t i = 0; i + n <= a.n; i++)
		if (memcmp(a.s + i, lit, n) == 0)
			return true;
	return false;
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool all_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

/* A pod UID exactly filling s[0..n): a UUID with '-' or '_' separators, or
 * 32 hex (static pods). Writes the dashed form to uid. */
static bool parse_uid(const char *s, size_t n, char uid[CGROUP_POD_UID_MAX + 1])
{
	if (n == 32) {
		if (!all_lower_hex(s, n))
			return false;
		memcpy(uid, s, n);
		uid[n] = '\0';
		return true;
	}
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-' && s[i] != '_')
				return false;
			uid[i] = '-';
		} else {
			if (!is_lower_hex(s[i]))
				return false;
			uid[i] = s[i];
		}
	}
	uid[n] = '\0';
	return true;
}

/* QoS from the slice name before "-pod<uid>" (systemd driver). */
static enum cgroup_qos qos_of_prefix(struct span p)
{
	if (span_ends(p, "-burstable"))
		return CGROUP_QOS_BURSTABLE;
	if (span_ends(p, "-besteffort"))
		return CGROUP_QOS_BESTEFFORT;
	if (span_ends(p, "kubepods"))
		return CGROUP_QOS_GUARANTEED;
	return CGROUP_QOS_NONE;
}

/* QoS from the parent of "pod<uid>" (cgroupfs driver). */
static enum cgroup_qos qos_of_parent(struct span parent)
{
	if (span_eq(parent, "burstable"))
		return CGROUP_QOS_BURSTABLE;
	if (span_eq(parent, "besteffort"))
		return CGROUP_QOS_BESTEFFORT;
	if (span_eq(parent, "kubepods"))
		return CGROUP_QOS_GUARANTEED;
	return CGROUP_QOS_NONE;
}

static bool match_pod(struct span c, struct span parent, char uid[CGROUP_POD_UID_MAX + 1],
		      enum cgroup_qos *qos)
{
	static const size_t uid_lens[] = { 36, 32 };
	struct span stem = c;
	const char *colon;

	/* cgroupfs: exactly "pod<uid>". */
	if (span_starts(c, "pod") && parse_uid(c.s + 3, c.n - 3, uid)) {
		*qos = qos_of_parent(parent);
		return true;
	}
	/* systemd: "<prefix>-pod<uid>.slice", maybe + ":<runtime>:<id>" (v1). */
	colon = memchr(c.s, ':', c.n);
	if (colon)
		stem.n = (size_t)(colon - c.s);
	if (!span_ends(stem, ".slice"))
		return false;
	stem.n -= strlen(".slice");
	for (size_t i = 0; i < sizeof(uid_lens) / sizeof(uid_lens[0]); i++) {
		size_t ul = uid_lens[i];
		struct span prefix;

		if (stem.n < ul + 4)
			continue;
		prefix = (struct span){ stem.s, stem.n - ul - 4 };
		if (memcmp(stem.s + prefix.n, "-pod", 4) != 0 || !span_has(prefix, "kubepods"))
			continue;
		if (parse_uid(stem.s + stem.n - ul, ul, uid)) {
			*qos = qos_of_prefix(prefix);
			return true;
		}
	}
	return false;
}

struct runtime_prefix {
	const char *prefix;
	enum cgroup_runtime runtime;
	bool conmon;
};

/* "<prefix>-<id>[.scope]" (systemd driver; CRI-O under cgroupfs drops
 * ".scope"). Longest prefixes first: "crio-conmon" before "crio". */
static const struct runtime_prefix scope_prefixes[] = {
	{ "cri-containerd", CGROUP_RUNTIME_CONTAINERD, false },
	{ "crio-conmon", CGROUP_RUNTIME_CRIO, true },
	{ "crio", CGROUP_RUNTIME_CRIO, false },
	{ "docker", CGROUP_RUNTIME_DOCKER, false },
	{ "libpod-conmon", CGROUP_RUNTIME_PODMAN, true },
	{ "libpod", CGROUP_RUNTIME_PODMAN, false },
};

/* ":<runtime>:<id>" after a v1 slice name (kubelet's "slice:prefix:name"). */
static const struct runtime_prefix colon_prefixes[] = {
	{ "cri-containerd", CGROUP_RUNTIME_CONTAINERD, false },
	{ "crio", CGROUP_RUNTIME_CRIO, false },
	{ "docker", CGROUP_RUNTIME_DOCKER, false },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct container_match {
	const char *id;                 /* 64 hex inside the line */
	enum cgroup_runtime runtime;    /* NONE: bare id, decided by context */
	bool conmon;
	bool bare;
};

static bool match_container(struct span c, struct container_match *m)
{
	const size_t idl = CGROUP_CONTAINER_ID_LEN;
	const char *colon = memchr(c.s, ':', c.n);
	struct span stem = c;

	*m = (struct container_match){ 0 };
	if (colon) {
		struct span rest = { colon + 1, c.n - (size_t)(colon + 1 - c.s) };

		for (size_t i = 0; i < ARRAY_LEN(colon_prefixes); i++) {
			size_t pl = strlen(colon_prefixes[i].prefix);

			if (rest.n == pl + 1 + idl && span_starts(rest, colon_prefixes[i].prefix) &&
			    rest.s[pl] == ':' && all_lower_hex(rest.s + pl + 1, idl)) {
				m->id = rest.s + pl + 1;
				m->runtime = colon_prefixes[i].runtime;
				return true;
			}
		}
		return false;
	}
	if (span_ends(stem, ".scope"))
		stem.n -= strlen(".scope");
	if (stem.n == idl && all_lower_hex(stem.s, idl)) {
		m->id = stem.s;
		m->bare = true;
		return true;
	}
	for (size_t i = 0; i < ARRAY_LEN(scope_prefixes); i++) {
		size_t pl = strlen(scope_prefixes[i].prefix);

		if (stem.n == pl + 1 + idl && span_starts(stem, scope_prefixes[i].prefix) &&
		    stem.s[pl] == '-' && all_lower_hex(stem.s + pl + 1, idl)) {
			m->id = stem.s + pl + 1;
			m->runtime = scope_prefixes[i].runtime;
			m->conmon = scope_prefixes[i].conmon;
			return true;
		}
	}
	return false;
}

/* Characters systemd allows in unit names. */
static bool unit_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '-' || c == '_' || c == '.' || c == '\\' || c == '@';
}

static bool match_unit(struct span c)
{
	if (!span_ends(c, ".service") || c.n <= strlen(".service") || c.n > CGROUP_UNIT_MAX)
		return false;
	for (size_t i = 0; i < c.n; i++)
		if (!unit_char(c.s[i]))
			return false;
	return true;
}

static void identity_reset(struct cgroup_identity *out)
{
	*out = (struct cgroup_identity){ .kind = CGROUP_INVALID };
}

/* Splits "hierarchy-id:controllers:path"; false when the line is not one. */
static bool split_line(const char *line, size_t len, bool *v2, struct span *path)
{
	const char *c1, *c2, *end = line + len;

	if (len && line[len - 1] == '\n')
		end--;
	if (memchr(line, '\0', (size_t)(end - line)))
		return false;
	c1 = memchr(line, ':', (size_t)(end - line));
	if (!c1 || c1 == line)
		return false;
	for (const char *p = line; p < c1; p++)
		if (*p < '0' || *p > '9')
			return false;
	c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
	if (!c2 || c2 + 1 >= end || c2[1] != '/')
		return false;
	*v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
	*path = (struct span){ c2 + 1, (size_t)(end - c2 - 1) };
	return true;
}

static enum cgroup_kind identify_path(struct span path, struct cgroup_identity *out)
{
	struct span comp, parent = { "", 0 }, leaf = { "", 0 };
	struct container_match cm, best = { 0 };
	struct span best_parent = { "", 0 };
	char uid[CGROUP_POD_UID_MAX + 1];
	enum cgroup_qos qos;
	bool pod = false, have_container = false;
	const char *p = path.s, *end = path.s + path.n;

	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));

		comp = (struct span){ p, (size_t)((slash ? slash : end) - p) };
		p = slash ? slash + 1 : end;
		if (comp.n == 0 || span_eq(comp, ".") || span_eq(comp, ".."))
			continue;
		leaf = comp;
		if (span_ends(comp, ".mount")) {
			parent = comp;
			continue;
		}
		if (match_pod(comp, parent, uid, &qos)) {
			pod = true;
			memcpy(out->pod_uid, uid, sizeof(uid));
			out->qos = qos;
			/* Containers above the pod are not the pod's. */
			have_container = false;
		}
		if (match_container(comp, &cm)) {
			best = cm;
			best_parent = parent;
			have_container = true;
		}
		parent = comp;
	}
	if (match_unit(leaf)) {
		memcpy(out->systemd_unit, leaf.s, leaf.n);
		out->systemd_unit[leaf.n] = '\0';
	}
	if (have_container && !best.conmon) {
		memcpy(out->container_id, best.id, CGROUP_CONTAINER_ID_LEN);
		out->container_id[CGROUP_CONTAINER_ID_LEN] = '\0';
		out->runtime = best.runtime;
		/* A bare id: kubelet's cgroupfs layout (containerd since
		 * dockershim's removal), or Docker's "/docker/<id>". */
		if (best.bare)
			out->runtime = pod ? CGROUP_RUNTIME_CONTAINERD :
				       span_eq(best_parent, "docker") ? CGROUP_RUNTIME_DOCKER :
				       CGROUP_RUNTIME_NONE;
		out->kind = CGROUP_CONTAINER;
	} else if (pod) {
		/* A monitor inside the pod still tells the pod's runtime. */
		if (have_container)
			out->runtime = best.runtime;
		out->kind = CGROUP_POD_ONLY;
	} else {
		out->kind = CGROUP_HOST;
	}
	if (!pod)
		out->qos = CGROUP_QOS_NONE;
	return out->kind;
}

static enum cgroup_kind identify_line(const char *line, size_t len, bool *v2,
				      struct cgroup_identity *out)
{
	struct span path;

	identity_reset(out);
	out->lines = 1;
	if (!split_line(line, len, v2, &path)) {
		out->invalid_lines = 1;
		return CGROUP_INVALID;
	}
	return identify_path(path, out);
}

enum cgroup_kind cgroup__identify_line(const char *line, size_t len,
				       struct cgroup_identity *out)
{
	bool v2;

	return identify_line(line, len, &v2, out);
}

static bool same_identity(const struct cgroup_identity *a, const struct cgroup_identity *b)
{
	return a->kind == b->kind && a->runtime == b->runtime && a->qos == b->qos &&
	       strcmp(a->container_id, b->container_id) == 0 &&
	       strcmp(a->pod_uid, b->pod_uid) == 0 &&
	       strcmp(a->systemd_unit, b->systemd_unit) == 0;
}

enum cgroup_kind cgroup__identify(const char *text, size_t len, struct cgroup_identity *out)
{
	struct cgroup_identity line, v2_line;
	const char *p = text, *end = text + len;
	bool have_v2 = false;
	unsigned lines = 0, invalid = 0;

	identity_reset(out);
	identity_reset(&v2_line);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((eol ? eol : end) - p);
		bool v2 = false;

		identify_line(p, n, &v2, &line);
		p = eol ? eol + 1 : end;
		lines++;
		if (line.kind == CGROUP_INVALID) {
			invalid++;
			continue;
		}
		if (v2 && !have_v2) {
			v2_line = line;
			have_v2 = true;
		}
		/* Strictly better only, so the first of equals stays: a
		 * container over a pod over a host line. A container's or
		 * pod's unit is its own line's. */
		if (line.kind > out->kind)
			*out = line;
		else if (out->kind == CGROUP_HOST && !out->systemd_unit[0])
			memcpy(out->systemd_unit, line.systemd_unit, sizeof(out->systemd_unit));
	}
	out->from_v2 = have_v2 && same_identity(out, &v2_line);
	out->lines = lines;
	out->invalid_lines = invalid;
	return out->kind;
}

const char *cgroup_kind_name(enum cgroup_kind k)
{
	switch (k) {
	case CGROUP_CONTAINER:
		return "container";
	case CGROUP_POD_ONLY:
		return "pod-only";
	case CGROUP_HOST:
		return "host";
	default:
		return "invalid";
	}
}

const char *cgroup_runtime_name(enum cgroup_runtime r)
{
	switch (r) {
	case CGROUP_RUNTIME_CONTAINERD:
		return "containerd";
	case CGROUP_RUNTIME_CRIO:
		return "cri-o";
	case CGROUP_RUNTIME_DOCKER:
		return "docker";
	case CGROUP_RUNTIME_PODMAN:
		return "podman";
	default:
		return NULL;
	}
}

const char *cgroup_qos_name(enum cgroup_qos q)
{
	switch (q) {
	case CGROUP_QOS_GUARANTEED:
		return "guaranteed";
	case CGROUP_QOS_BURSTABLE:
		return "burstable";
	case CGROUP_QOS_BESTEFFORT:
		return "besteffort";
	default:
		return NULL;
	}
}
