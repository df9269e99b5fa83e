/* SPDX-License-Identifier: BSD-2-Clause */
/* The metadata stage's options, checked once at metadata__new.
 *
 * Names are unique: built-in names cannot be taken by a --tag or
 * --pod-label (metadata__new refuses), and --tag's and --pod-label's may
 * not collide with one another. Names are sanitized to Prometheus' form;
 * --tag values must be 1..VALUE_MAX_BYTES of valid UTF-8.
 *
 * The cgroup2 mount found here maps a cgroup id (what BPF reports) back to
 * a path, for samples whose process left no snapshot. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "metadata/metadata_priv.h"

static const char *const builtin_names[] = {
	"service_name", "node", "namespace", "pod", "container", "container_id",
	"pod_uid", "systemd_unit",
};

/* At most 80 input bytes, anything outside printable ASCII as \xHH, "..."
 * when cut. */
const char *md_options__loggable(const char *s, char *buf, size_t size)
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

int md_options__parse_tag(struct metadata *md, const char *spec)
{
	const char *eq = strchr(spec, '='), *why;
	struct tag *t = &md->tags[md->ntags];
	char show[LOG_STR_MAX];
	size_t vl;

	md_options__loggable(spec, show, sizeof(show));
	if (!eq || eq == spec) {
		pr_error("tag '%s': not KEY=VALUE", show);
		return -EINVAL;
	}
	vl = strlen(eq + 1);
	if (!vl || vl > VALUE_MAX_BYTES || !label_builder__utf8_valid(eq + 1, vl)) {
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

int md_options__parse_pod_label(struct metadata *md, const char *key)
{
	struct pod_label_copy *c = &md->pod_labels[md->npod_labels];
	char show[LOG_STR_MAX];
	const char *why;

	md_options__loggable(key, show, sizeof(show));
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

int md_options__copy_globs(const char *what, const char *const *in, size_t n, char ***out)
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

char *md_options__resolve_node(const char *opt)
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
void md_options__cgroup2_open(struct metadata *md)
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
int md_options__cgroup2_path(struct metadata *md, uint64_t id, char *buf, size_t size)
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
