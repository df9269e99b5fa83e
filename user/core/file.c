// SPDX-License-Identifier: BSD-2-Clause
/* The output writer: see file.h for the contract. DESIGN: the directory
 * is resolved by hand, one O_NOFOLLOW openat a component, because every
 * directory on the way matters: a user owning /home/eve can point
 * /home/eve/out at /etc, and a check of the final directory alone would
 * pass (/etc is root's). Once open, the directory fd is what every later
 * step uses, so renaming or replacing a path component after the checks
 * changes nothing. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/safe_open.h"

/* Symlinks followed while resolving one directory, as the kernel's own
 * limit (MAXSYMLINKS). */
#define FILE_MAX_LINKS 40
/* Tries at a fresh random temporary name when one exists already. */
#define FILE_TMP_TRIES 8

const char *const file_refusal_names[FILE_REFUSAL_COUNT] = {
	[FILE_REFUSED_DIR_OWNER] = "dir_owner",
	[FILE_REFUSED_DIR_MODE] = "dir_mode",
	[FILE_REFUSED_LINK] = "link",
	[FILE_REFUSED_NOT_REGULAR] = "not_regular",
};

static _Atomic uint64_t n_refused[FILE_REFUSAL_COUNT];

void file__refusal_stats(uint64_t out[FILE_REFUSAL_COUNT])
{
	for (int i = 0; i < FILE_REFUSAL_COUNT; i++)
		out[i] = atomic_load_explicit(&n_refused[i], memory_order_relaxed);
}

/* Root, kiln's effective uid, and under sudo the uid of the user who ran
 * it: `sudo kiln record -o cpu.html` in one's own home is the common case,
 * and that user could write there anyway. SUDO_UID is trusted only when
 * the real uid is root, as only root can set a root process's
 * environment. */
static bool trusted_uid(uid_t uid)
{
	const char *s = getenv("SUDO_UID");
	uint64_t v;

	if (uid == 0 || uid == geteuid())
		return true;
	return getuid() == 0 && s && parse_u64(s, 1, UINT32_MAX - 1, &v) == 0 && (uid_t)v == uid;
}

static int refuse(enum file_refusal r, int err)
{
	atomic_fetch_add_explicit(&n_refused[r], 1, memory_order_relaxed);
	return err;
}

/* A directory on the way to the output: owned by a trusted uid, and not
 * writable by users outside it unless sticky (then others cannot rename or
 * remove what kiln wrote). */
static int check_dir(int fd, const char *shown)
{
	struct stat st;
	bool shared;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (!trusted_uid(st.st_uid)) {
		pr_error("output directory '%s': refused: owned by uid %u, not root or uid %u; chown it or choose another directory",
			 shown, (unsigned)st.st_uid, (unsigned)geteuid());
		return refuse(FILE_REFUSED_DIR_OWNER, -EPERM);
	}
	shared = (st.st_mode & S_IWOTH) ||
		 ((st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != getegid());
	if (shared && !(st.st_mode & S_ISVTX)) {
		pr_error("output directory '%s': refused: writable by other users (mode %04o) and not sticky; chmod go-w it or choose another directory",
			 shown, (unsigned)(st.st_mode & 07777));
		return refuse(FILE_REFUSED_DIR_MODE, -EPERM);
	}
	return 0;
}

static int open_root(void)
{
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return fd;
}

/* todo = target + "/" + rest (rest may point into todo). */
static int splice_link(char *todo, size_t n, const char *target, const char *rest)
{
	char buf[PATH_MAX * 2];

	if ((size_t)snprintf(buf, sizeof(buf), "%s/%s", target, rest) >= sizeof(buf) ||
	    strlen(buf) >= n)
		return -ENAMETOOLONG;
	memcpy(todo, buf, strlen(buf) + 1);
	return 0;
}

int file__open_dir(const char *dir)
{
	char todo[PATH_MAX * 2], shown[PATH_MAX * 2], name[NAME_MAX + 1], target[PATH_MAX];
	unsigned links = 0;
	const char *p;
	size_t slen;
	int fd, nfd, err;

	if (!dir || !*dir)
		return -EINVAL;
	if (dir[0] == '/') {
		if (strlen(dir) >= sizeof(todo))
			return -ENAMETOOLONG;
		memcpy(todo, dir, strlen(dir) + 1);
	} else {
		if (!getcwd(target, sizeof(target)))
			return -errno;
		if ((size_t)snprintf(todo, sizeof(todo), "%s/%s", target, dir) >= sizeof(todo))
			return -ENAMETOOLONG;
	}
	fd = open_root();
	if (fd < 0)
		return fd;
	snprintf(shown, sizeof(shown), "/");
	err = check_dir(fd, shown);
	p = todo;
	while (!err) {
		struct stat st;
		size_t len;
		ssize_t tl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (len > NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		p += len;
		if (strcmp(name, ".") == 0)
			continue;
		nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			err = -errno;
			if ((err != -ELOOP && err != -ENOTDIR) ||
			    fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISLNK(st.st_mode))
				break;
			/* A symlink: followed only when a trusted uid made it,
			 * and its target walked with the same checks. */
			if (!trusted_uid(st.st_uid) || ++links > FILE_MAX_LINKS) {
				pr_error("output directory '%s/%s': refused: %s; give the real path or choose another directory",
					 strcmp(shown, "/") ? shown : "", name,
					 links > FILE_MAX_LINKS ? "too many symlinks" :
					 "a symlink owned by another user");
				err = refuse(FILE_REFUSED_LINK, -EPERM);
				break;
			}
			tl = readlinkat(fd, name, target, sizeof(target) - 1);
			if (tl < 0) {
				err = -errno;
				break;
			}
			target[tl] = '\0';
			err = splice_link(todo, sizeof(todo), target, p);
			if (err)
				break;
			p = todo;
			if (target[0] == '/') {
				close(fd);
				fd = open_root();
				if (fd < 0)
					return fd;
				snprintf(shown, sizeof(shown), "/");
			}
			continue;
		}
		slen = strlen(shown);
		snprintf(shown + slen, sizeof(shown) - slen, "%s%s", slen > 1 ? "/" : "", name);
		close(fd);
		fd = nfd;
		err = check_dir(fd, shown);
	}
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* ".kiln-<16 hex digits>.tmp": random, so another user cannot plant a link
 * at it beforehand (O_EXCL would refuse it anyway), and hidden and not
 * starting with a digit, so the file exporter's rotation never counts it. */
static void tmp_name(char *buf, size_t n)
{
	static _Atomic uint64_t seq;
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;

		/* No entropy yet (early boot): unique enough, and O_EXCL
		 * keeps it safe. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = ((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)getpid() << 32) ^
		    atomic_fetch_add(&seq, 1);
	}
	snprintf(buf, n, ".kiln-%016llx.tmp", (unsigned long long)r);
}

/* What sits at the final name may be replaced only when it is a regular
 * file (renameat replaces the entry, never what a link points at; a link
 * there is still someone's attempt, so it is refused rather than hidden). */
static int check_final(int dirfd, const char *name, const char *shown)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	if (S_ISLNK(st.st_mode)) {
		safe_open__log_refusal(shown, file_refusal_names[FILE_REFUSED_LINK],
				       "the output name is a symlink; not written through it");
		return refuse(FILE_REFUSED_LINK, -EPERM);
	}
	safe_open__log_refusal(shown, file_refusal_names[FILE_REFUSED_NOT_REGULAR],
			       "the output name is not a regular file");
	return refuse(FILE_REFUSED_NOT_REGULAR, -EPERM);
}

int file__write_at(int dirfd, const char *name, const char *shown, unsigned mode,
		   int (*fill)(FILE *f, void *ctx), void *ctx, uint64_t *bytes)
{
	char tmp[64];
	FILE *f;
	long pos;
	int fd = -1, err;

	*bytes = 0;
	for (int i = 0; fd < 0 && i < FILE_TMP_TRIES; i++) {
		tmp_name(tmp, sizeof(tmp));
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    (mode_t)(mode & 0666));
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto out;
	}
	err = fill(f, ctx);
	if (!err && fflush(f))
		err = -errno;
	pos = ftell(f);
	*bytes = pos > 0 ? (uint64_t)pos : 0;
	if (fclose(f) && !err)
		err = -errno;
	if (!err)
		err = check_final(dirfd, name, shown);
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
out:
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

/* path's directory into dir ("." or "/" when it has none) and its last
 * component into *name. 0 or -EISDIR / -ENAMETOOLONG. */
static int split_path(const char *path, char *dir, size_t n, const char **name)
{
	const char *slash = strrchr(path, '/');

	*name = slash ? slash + 1 : path;
	if (!**name || strcmp(*name, ".") == 0 || strcmp(*name, "..") == 0)
		return -EISDIR;
	if (!slash)
		snprintf(dir, n, ".");
	else if (slash == path)
		snprintf(dir, n, "/");
	else if ((size_t)(slash - path) >= n)
		return -ENAMETOOLONG;
	else
		snprintf(dir, n, "%.*s", (int)(slash - path), path);
	return 0;
}

int file__check_dir_of(const char *path)
{
	char dir[PATH_MAX];
	const char *name;
	int fd = split_path(path, dir, sizeof(dir), &name);

	if (!fd)
		fd = file__open_dir(dir);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int file__write_atomic(const char *path, unsigned mode, int (*fill)(FILE *f, void *ctx),
		       void *ctx, uint64_t *bytes)
{
	char dir[PATH_MAX];
	const char *name;
	int dirfd, err;

	*bytes = 0;
	err = split_path(path, dir, sizeof(dir), &name);
	if (err)
		return err;
	dirfd = file__open_dir(dir);
	if (dirfd < 0)
		return dirfd;
	err = file__write_at(dirfd, name, path, mode, fill, ctx, bytes);
	close(dirfd);
	return err;
}

void file__append_safe_name(char *buf, size_t n, size_t *pos, const char *s, size_t reserve)
{
	for (; *s && *pos + reserve + 1 < n; s++)
		buf[(*pos)++] = isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.' ?
				*s : '_';
	buf[*pos] = '\0';
}
