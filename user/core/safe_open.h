/* SPDX-License-Identifier: BSD-2-Clause */
/* The one way kiln opens a file on behalf of a process: inside that
 * process's root, never through a symlink out of it, without blocking, and
 * only a regular file under a size cap, checked before a byte is read.
 *
 * Every reader of a file a process (or container) controls goes through
 * here: the mapped binaries (proc/), their debug files (symbolize/). A
 * refusal is counted by reason (safe_open__stats) and logged once per file
 * (safe_open__log_refusal), so a hostile container costs a counter, not a
 * hang, a host file or a log flood. */
#ifndef KILN_CORE_SAFE_OPEN_H
#define KILN_CORE_SAFE_OPEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* Why a file was refused. "Not there" (ENOENT, ENOTDIR, EACCES) is no
 * refusal: debug-file lookups miss all the time. */
enum safe_open_refusal {
	SAFE_OPEN_NOT_REGULAR = 0,  /* FIFO, directory, device, socket */
	SAFE_OPEN_TOO_LARGE,        /* st_size above the caller's cap */
	SAFE_OPEN_LINK,             /* magic link, symlink loop or too many hops */
	SAFE_OPEN_BAD_PATH,         /* empty, not absolute, too long or too deep */
	SAFE_OPEN_REFUSAL_COUNT
};

/* "not_regular", "too_large", "link", "bad_path": label values. */
extern const char *const safe_open_refusal_names[SAFE_OPEN_REFUSAL_COUNT];

struct safe_open_stats {
	uint64_t opened;                /* files handed to a caller */
	uint64_t walks;                 /* opens resolved by the O_NOFOLLOW walk */
	uint64_t refused[SAFE_OPEN_REFUSAL_COUNT];
};

/* Opens path (absolute, as the process sees it) inside root: "/proc/PID/
 * root" for a process, "" or "/" or NULL for the host. Symlinks, ".." and
 * absolute link targets resolve inside root, as if root were "/" (openat2
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, or the equivalent walk with
 * O_NOFOLLOW on kernels without openat2). The file is opened O_RDONLY |
 * O_NONBLOCK | O_CLOEXEC | O_NOCTTY (a FIFO cannot block the caller), then
 * must be a regular file of at most max_size bytes. Returns the fd (the
 * caller closes it) and fills *st when st is not NULL; else -errno:
 * -ENOENT & co when it is not there, -EINVAL (not a regular file), -EFBIG
 * (too large), -ELOOP (magic link, loop), -ENAMETOOLONG (bad path), each
 * refusal counted and logged. Thread-safe. */
int safe_open__in(const char *root, const char *path, uint64_t max_size, struct stat *st);
/* The same, but a symlink as the last component of path is refused
 * (-ELOOP, counted as "link") instead of followed: for a file the process
 * writes at a path kiln chooses (its perf map), where a link could only
 * point at a file the process did not write. */
int safe_open__in_nofollow(const char *root, const char *path, uint64_t max_size,
			   struct stat *st);
/* The same under a root directory already open (O_PATH is enough). */
int safe_open__at(int root_fd, const char *path, uint64_t max_size, struct stat *st);
int safe_open__at_nofollow(int root_fd, const char *path, uint64_t max_size, struct stat *st);
/* The directory path inside root (resolved as safe_open__in does), opened
 * O_PATH, to open files under later (safe_open__at): it keeps its mount,
 * so a file there can still be opened after the process that showed it
 * ended, and its mount namespace with it. The fd, or -errno (-ENOTDIR:
 * not a directory). */
int safe_open__dir_in(const char *root, const char *path);
/* Opens a link kiln trusts to name the right file although it is a magic
 * link (/proc/PID/map_files/...), with the same flags and the same checks
 * on what it opened. */
int safe_open__proc_link(const char *path, uint64_t max_size, struct stat *st);
/* The checks alone, on an fd opened elsewhere: 0, -EINVAL or -EFBIG
 * (counted and logged under name). */
int safe_open__check_fd(int fd, const char *name, uint64_t max_size, struct stat *st);

/* Counts a refusal and logs it: at warn the first time this (file,
 * reason) pair is seen, at debug after (a bounded table remembers the
 * pairs; after SAFE_OPEN_WARN_MAX warnings every further one is debug), so
 * a container refused ten thousand times costs ten thousand counts and a
 * few lines. what: the reason as text. Used by the ELF readers too. */
void safe_open__log_refusal(const char *file, const char *what, const char *detail);

void safe_open__stats(struct safe_open_stats *out);
/* Test hook: true makes every open take the O_NOFOLLOW walk, as on a
 * kernel without openat2. */
void safe_open__force_walk(bool on);

#endif
