// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/log.h"
#include "export/files.h"
#include "core/array.h"

struct held {
	char *name;
	uint64_t bytes;
};

struct files {
	char *dir;
	int dirfd;                      /* dir, checked once by file__open_dir */
	unsigned mode;
	uint64_t max_bytes;
	struct held *held;              /* oldest first */
	size_t n, cap, first;           /* held[first..n) are live */
	struct files_stats st;
};

static bool rotated(const char *name)
{
	return isdigit((unsigned char)name[0]) && strchr(name, '-') &&
	       !strstr(name, ".tmp.");
}

static int cmp_held(const void *a, const void *b)
{
	return strcmp(((const struct held *)a)->name, ((const struct held *)b)->name);
}

static int hold(struct files *fs, const char *name, uint64_t bytes)
{
	/* Compact the consumed prefix before growing. */
	if (fs->first && fs->n == fs->cap) {
		memmove(fs->held, fs->held + fs->first, (fs->n - fs->first) * sizeof(*fs->held));
		fs->n -= fs->first;
		fs->first = 0;
	}
	if (array_reserve(fs->held, fs->cap, fs->n + 1))
		return -ENOMEM;
	fs->held[fs->n].name = strdup(name);
	if (!fs->held[fs->n].name)
		return -ENOMEM;
	fs->held[fs->n++].bytes = bytes;
	fs->st.bytes_held += bytes;
	fs->st.files_held++;
	return 0;
}

static void rotate(struct files *fs)
{
	/* Keep at least the newest file, whatever its size. */
	while (fs->st.bytes_held > fs->max_bytes && fs->n - fs->first > 1) {
		struct held *h = &fs->held[fs->first++];

		/* unlinkat removes the entry, never what a link names. */
		if (unlinkat(fs->dirfd, h->name, 0) && errno != ENOENT) {
			pr_warn("%s/%s: cannot remove: %s", fs->dir, h->name, strerror(errno));
			fs->st.errors++;
		} else {
			fs->st.removed++;
		}
		fs->st.bytes_held -= h->bytes;
		fs->st.files_held--;
		free(h->name);
	}
}

struct files *files__new(const char *dir, uint64_t max_bytes, unsigned mode)
{
	struct files *fs = calloc(1, sizeof(*fs));
	struct dirent *de;
	DIR *d;
	int fd;

	if (!fs || !(fs->dir = strdup(dir)))
		goto nomem;
	fs->dirfd = -1;
	fs->max_bytes = max_bytes;
	fs->mode = mode;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		pr_error("--output-dir %s: cannot create: %s", dir, strerror(errno));
		goto fail;
	}
	fs->dirfd = file__open_dir(dir);
	if (fs->dirfd < 0) {
		errno = -fs->dirfd;
		if (fs->dirfd != -EPERM)        /* a refusal is logged already */
			pr_error("--output-dir %s: cannot open: %s", dir, strerror(errno));
		goto fail;
	}
	fd = dup(fs->dirfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		pr_error("--output-dir %s: cannot open: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	while ((de = readdir(d))) {
		struct stat st;

		/* A link planted there is neither counted nor removed later. */
		if (!rotated(de->d_name) ||
		    fstatat(fs->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (hold(fs, de->d_name, (uint64_t)st.st_size)) {
			closedir(d);
			goto nomem;
		}
	}
	closedir(d);
	if (fs->n)              /* held is NULL for an empty directory */
		qsort(fs->held, fs->n, sizeof(*fs->held), cmp_held);
	rotate(fs);
	return fs;
nomem:
	pr_error("out of memory");
	errno = ENOMEM;
fail:
	fd = errno;             /* files__free may change it */
	files__free(fs);
	errno = fd;
	return NULL;
}

int files__write(struct files *fs, const char *name, int (*fill)(FILE *f, void *ctx),
		 void *ctx)
{
	char path[4096];
	uint64_t bytes;
	int err;

	snprintf(path, sizeof(path), "%s/%s", fs->dir, name);
	err = file__write_at(fs->dirfd, name, path, fs->mode, fill, ctx, &bytes);
	if (!err) {
		fs->st.written++;
		fs->st.bytes_written += bytes;
		if (rotated(name)) {
			err = hold(fs, name, bytes);
			rotate(fs);
		}
	}
	if (err) {
		fs->st.errors++;
		if (err != -EPERM)      /* a refusal is counted and logged once */
			pr_warn("%s: cannot write: %s", path, strerror(-err));
	}
	return err;
}

static void profile_name(char *buf, size_t n, uint64_t start_s, const struct labels *l,
			 unsigned dup)
{
	const char *svc = labels__get(l, "service_name");
	size_t pos = (size_t)snprintf(buf, n, "%" PRIu64 "-", start_s);

	file__append_safe_name(buf, n, &pos, svc && *svc ? svc : "unknown", 16);
	if (dup)
		pos += (size_t)snprintf(buf + pos, n - pos, "-%u", dup + 1);
	snprintf(buf + pos, n - pos, ".pb.gz");
}

struct blob {
	const uint8_t *data;
	size_t len;
};

static int fill_blob(FILE *f, void *ctx)
{
	const struct blob *b = ctx;

	return fwrite(b->data, 1, b->len, f) == b->len ? 0 : -EIO;
}

static int fill_folded(FILE *f, void *ctx)
{
	struct profile_set *set = ctx;
	int err = 0;

	for (size_t i = 0; i < profile_set__count(set) && !err; i++)
		err = folded__write(profile_set__entry(set, i)->profile, false, f);
	return err;
}

void files__write_interval(struct files *fs, uint64_t start_s, const struct files_profile *p,
			   size_t n, struct profile_set *set)
{
	char name[512], prev[512] = "";
	unsigned dup = 0;

	for (size_t i = 0; i < n; i++) {
		struct blob b = { p[i].pprof, p[i].len };

		/* Label sets sharing a service_name get -2, -3, ... */
		profile_name(name, sizeof(name), start_s, p[i].labels, 0);
		dup = strcmp(name, prev) == 0 ? dup + 1 : 0;
		snprintf(prev, sizeof(prev), "%s", name);
		if (dup)
			profile_name(name, sizeof(name), start_s, p[i].labels, dup);
		files__write(fs, name, fill_blob, &b);
	}
	snprintf(name, sizeof(name), "%" PRIu64 "-all.folded", start_s);
	files__write(fs, name, fill_folded, set);
}

void files__stats(const struct files *fs, struct files_stats *out)
{
	*out = fs->st;
}

void files__free(struct files *fs)
{
	if (!fs)
		return;
	for (size_t i = fs->first; i < fs->n; i++)
		free(fs->held[i].name);
	free(fs->held);
	if (fs->dirfd >= 0)
		close(fs->dirfd);
	free(fs->dir);
	free(fs);
}
