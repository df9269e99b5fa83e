/* SPDX-License-Identifier: BSD-2-Clause */
/* The safe file opener (see safe_open.h for the contract).
 *
 * DESIGN: an open has two steps. Resolve: the path becomes an O_PATH
 * descriptor inside the root, with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS) where the kernel has it (5.6+; probed once: ENOSYS
 * switches to the walk for good), else with a walk of one component at a
 * time, each opened O_PATH | O_NOFOLLOW relative to the directory before
 * it, symlinks read with readlinkat and resolved by us: an absolute target
 * restarts at the root, ".." never climbs above it, WALK_MAX_LINKS hops at
 * most. Check and open: an O_PATH descriptor never runs the file's open
 * routine, so a FIFO cannot block and a device is never opened; fstat on it
 * decides (regular, size <= cap), and only then is the same inode opened
 * for reading through /proc/self/fd/N (and checked again, as the file may
 * have grown since). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/safe_open.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define OPEN_FLAGS       (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
#define WALK_MAX_LINKS   40     /* the kernel's MAXSYMLINKS */
#define WALK_MAX_DEPTH   128    /* directories deep below the root */
#define SAFE_OPEN_WARN_MAX 1000 /* warnings before refusals go to debug only */
#define SEEN_SLOTS       4096   /* (file, reason) pairs remembered for logging */

const char *const safe_open_refusal_names[SAFE_OPEN_REFUSAL_COUNT] = {
	[SAFE_OPEN_NOT_REGULAR] = "not_regular",
	[SAFE_OPEN_TOO_LARGE] = "too_large",
	[SAFE_OPEN_LINK] = "link",
	[SAFE_OPEN_BAD_PATH] = "bad_path",
};

static _Atomic uint64_t n_opened, n_walks, n_refused[SAFE_OPEN_REFUSAL_COUNT];
static atomic_int have_openat2 = -1;    /* -1 unknown, 0 no, 1 yes */
static atomic_bool force_walk;

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen[SEEN_SLOTS];
static unsigned warnings;

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

void safe_open__log_refusal(const char *file, const char *what, const char *detail)
{
	uint64_t h = fnv1a(fnv1a(1469598103934665603ull, file), what) | 1;
	bool first;

	pthread_mutex_lock(&seen_lock);
	first = seen[h % SEEN_SLOTS] != h && warnings < SAFE_OPEN_WARN_MAX;
	if (first) {
		seen[h % SEEN_SLOTS] = h;
		warnings++;
	}
	pthread_mutex_unlock(&seen_lock);
	if (first)
		pr_warn("file '%s': refused (%s): %s%s", file, what, detail,
			warnings == SAFE_OPEN_WARN_MAX ? " (further refusals logged at debug level)" : "");
	else
		pr_debug("file '%s': refused (%s): %s", file, what, detail);
}

static int refuse(enum safe_open_refusal r, const char *file, int err, const char *detail)
{
	atomic_fetch_add_explicit(&n_refused[r], 1, memory_order_relaxed);
	safe_open__log_refusal(file, safe_open_refusal_names[r], detail);
	return err;
}

/* Counts the errors that are refusals; "not there" passes through. */
static int resolve_error(const char *file, int err)
{
	if (err == -ELOOP)
		return refuse(SAFE_OPEN_LINK, file, err, "symlink loop, magic link or too many links");
	if (err == -ENAMETOOLONG)
		return refuse(SAFE_OPEN_BAD_PATH, file, err, "path too long or too deep");
	if (err == -ENXIO)
		return refuse(SAFE_OPEN_NOT_REGULAR, file, -EINVAL, "not a regular file");
	return err;
}

static int check_stat(const struct stat *sb, const char *name, uint64_t max_size)
{
	char detail[96];

	/* Only an open that does not follow the last link gets one. */
	if (S_ISLNK(sb->st_mode))
		return refuse(SAFE_OPEN_LINK, name, -ELOOP, "a symlink");
	if (!S_ISREG(sb->st_mode))
		return refuse(SAFE_OPEN_NOT_REGULAR, name, -EINVAL,
			      S_ISFIFO(sb->st_mode) ? "a FIFO" : S_ISDIR(sb->st_mode) ?
			      "a directory" : "not a regular file");
	if (sb->st_size < 0 || (uint64_t)sb->st_size > max_size) {
		snprintf(detail, sizeof(detail), "%lld bytes, more than the %llu allowed",
			 (long long)sb->st_size, (unsigned long long)max_size);
		return refuse(SAFE_OPEN_TOO_LARGE, name, -EFBIG, detail);
	}
	return 0;
}

int safe_open__check_fd(int fd, const char *name, uint64_t max_size, struct stat *st)
{
	struct stat sb;

	if (fstat(fd, &sb) != 0)
		return -errno;
	if (st)
		*st = sb;
	return check_stat(&sb, name, max_size);
}

/* Takes an O_PATH descriptor (closed here): checks it, then opens the same
 * inode for reading. The fd, or -errno. */
static int finish(int pfd, const char *name, uint64_t max_size, struct stat *st)
{
	char proc[64];
	struct stat a, b;
	int fd, err;

	if (fstat(pfd, &a) != 0) {
		err = -errno;
		close(pfd);
		return err;
	}
	err = check_stat(&a, name, max_size);
	if (err) {
		close(pfd);
		return err;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, OPEN_FLAGS);
	err = fd < 0 ? -errno : 0;
	close(pfd);
	if (err)
		return err;
	/* Same inode, and it may have grown since the first look. */
	if (fstat(fd, &b) != 0 || b.st_dev != a.st_dev || b.st_ino != a.st_ino) {
		close(fd);
		return -ESTALE;
	}
	err = check_stat(&b, name, max_size);
	if (err) {
		close(fd);
		return err;
	}
	if (st)
		*st = b;
	atomic_fetch_add_explicit(&n_opened, 1, memory_order_relaxed);
	return fd;
}

/* openat2 resolution to an O_PATH fd, or -errno (-ENOSYS: no openat2).
 * nofollow: a symlink as the last component is the result, not followed. */
static int resolve_openat2(int root_fd, const char *path, bool nofollow)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	/* EAGAIN: a rename raced with ".." resolution; the kernel asks to retry. */
	for (int i = 0; i < 4; i++) {
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd >= 0 ? (int)fd : -errno;
}

static void close_dirs(int *dirs, size_t *depth)
{
	while (*depth)
		close(dirs[--*depth]);
}

/* The walk: path resolved one component at a time below root_fd, every
 * component opened O_PATH | O_NOFOLLOW, symlinks resolved by hand inside
 * the root (but for the last one with nofollow). Returns an O_PATH fd of
 * the last component, or -errno. */
static int resolve_walk(int root_fd, const char *path, bool nofollow)
{
	char pend[PATH_MAX], target[PATH_MAX], name[NAME_MAX + 1];
	int dirs[WALK_MAX_DEPTH];   /* dirs[i]: O_PATH fd, depth i + 1 */
	size_t depth = 0, pos = 0, len;
	unsigned links = 0;
	int err = 0;

	len = strlen(path);
	if (len >= sizeof(pend))
		return -ENAMETOOLONG;
	memcpy(pend, path, len + 1);
	for (;;) {
		int cur = depth ? dirs[depth - 1] : root_fd, fd;
		size_t start, n;
		struct stat sb;
		bool last;

		while (pend[pos] == '/')
			pos++;
		if (!pend[pos]) {
			/* The path names a directory (or the root). */
			fd = openat(cur, ".", O_PATH | O_CLOEXEC);
			err = fd < 0 ? -errno : 0;
			close_dirs(dirs, &depth);
			return err ? err : fd;
		}
		start = pos;
		while (pend[pos] && pend[pos] != '/')
			pos++;
		n = pos - start;
		if (n > NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(name, pend + start, n);
		name[n] = '\0';
		last = !pend[pos + strspn(pend + pos, "/")];
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			if (depth)
				close(dirs[--depth]);   /* never above the root */
			continue;
		}
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			break;
		}
		if (fstat(fd, &sb) != 0) {
			err = -errno;
			close(fd);
			break;
		}
		if (S_ISLNK(sb.st_mode) && !(last && nofollow)) {
			ssize_t tl = readlinkat(fd, "", target, sizeof(target) - 1);
			size_t rest;

			close(fd);
			if (tl < 0) {
				err = -errno;
				break;
			}
			if (++links > WALK_MAX_LINKS || tl == 0) {
				err = tl == 0 ? -ENOENT : -ELOOP;
				break;
			}
			target[tl] = '\0';
			/* New pending path: the target, then what was left. */
			rest = strlen(pend + pos);
			if ((size_t)tl + 1 + rest >= sizeof(pend)) {
				err = -ENAMETOOLONG;
				break;
			}
			memmove(pend + tl + 1, pend + pos, rest + 1);
			memcpy(pend, target, (size_t)tl);
			pend[tl] = '/';
			pos = 0;
			if (target[0] == '/')
				close_dirs(dirs, &depth);   /* absolute: from the root */
			continue;
		}
		if (last) {
			close_dirs(dirs, &depth);
			return fd;
		}
		if (!S_ISDIR(sb.st_mode)) {
			close(fd);
			err = -ENOTDIR;
			break;
		}
		if (depth == WALK_MAX_DEPTH) {
			close(fd);
			err = -ENAMETOOLONG;
			break;
		}
		dirs[depth++] = fd;
	}
	close_dirs(dirs, &depth);
	return err;
}

/* path resolved inside root_fd to an O_PATH fd, or -errno (a refusal
 * counted and logged). name: the file as logs show it (root and path). */
static int resolve_in(int root_fd, const char *path, const char *name, bool nofollow)
{
	int pfd = -ENOSYS;

	if (!path || path[0] != '/' || strlen(path) >= PATH_MAX)
		return refuse(SAFE_OPEN_BAD_PATH, name, -ENAMETOOLONG,
			      "not an absolute path of at most PATH_MAX bytes");
	if (!atomic_load(&force_walk) && atomic_load(&have_openat2) != 0) {
		pfd = resolve_openat2(root_fd, path, nofollow);
		if (pfd == -ENOSYS)
			atomic_store(&have_openat2, 0);
		else
			atomic_store(&have_openat2, 1);
	}
	if (pfd == -ENOSYS) {
		atomic_fetch_add_explicit(&n_walks, 1, memory_order_relaxed);
		pfd = resolve_walk(root_fd, path, nofollow);
	}
	return pfd < 0 ? resolve_error(name, pfd) : pfd;
}

static int open_at(int root_fd, const char *path, const char *name, uint64_t max_size,
		   bool nofollow, struct stat *st)
{
	int pfd = resolve_in(root_fd, path, name, nofollow);

	return pfd < 0 ? pfd : finish(pfd, name, max_size, st);
}

int safe_open__at(int root_fd, const char *path, uint64_t max_size, struct stat *st)
{
	return open_at(root_fd, path, path ? path : "(null)", max_size, false, st);
}

int safe_open__at_nofollow(int root_fd, const char *path, uint64_t max_size, struct stat *st)
{
	return open_at(root_fd, path, path ? path : "(null)", max_size, true, st);
}

/* root opened O_PATH (the host's for "", "/" or NULL), and in *name the
 * file as logs show it. */
static int open_root(const char *root, const char *path, char *name, size_t name_len)
{
	int root_fd;

	if (!root || !root[0])
		root = "/";
	snprintf(name, name_len, "%s%s", strcmp(root, "/") ? root : "", path ? path : "(null)");
	/* The root is kiln's own choice: opening "/proc/PID/root" follows that
	 * magic link to the process's root on purpose. */
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return root_fd < 0 ? -errno : root_fd;
}

static int open_in(const char *root, const char *path, uint64_t max_size, bool nofollow,
		   struct stat *st)
{
	char name[PATH_MAX + 64];
	int root_fd = open_root(root, path, name, sizeof(name)), fd;

	if (root_fd < 0)
		return root_fd;
	fd = open_at(root_fd, path, name, max_size, nofollow, st);
	close(root_fd);
	return fd;
}

int safe_open__dir_in(const char *root, const char *path)
{
	char name[PATH_MAX + 64];
	int root_fd = open_root(root, path, name, sizeof(name)), fd;
	struct stat sb;

	if (root_fd < 0)
		return root_fd;
	fd = resolve_in(root_fd, path, name, false);
	close(root_fd);
	if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
		close(fd);
		fd = -ENOTDIR;
	}
	return fd;
}

int safe_open__in(const char *root, const char *path, uint64_t max_size, struct stat *st)
{
	return open_in(root, path, max_size, false, st);
}

int safe_open__in_nofollow(const char *root, const char *path, uint64_t max_size,
			   struct stat *st)
{
	return open_in(root, path, max_size, true, st);
}

int safe_open__proc_link(const char *path, uint64_t max_size, struct stat *st)
{
	int pfd = open(path, O_PATH | O_CLOEXEC);

	if (pfd < 0)
		return -errno;
	return finish(pfd, path, max_size, st);
}

void safe_open__stats(struct safe_open_stats *out)
{
	out->opened = atomic_load_explicit(&n_opened, memory_order_relaxed);
	out->walks = atomic_load_explicit(&n_walks, memory_order_relaxed);
	for (int i = 0; i < SAFE_OPEN_REFUSAL_COUNT; i++)
		out->refused[i] = atomic_load_explicit(&n_refused[i], memory_order_relaxed);
}

void safe_open__force_walk(bool on)
{
	atomic_store(&force_walk, on);
}
