/* SPDX-License-Identifier: BSD-2-Clause */
/* The one writer of output files (record's -o, the file exporter, the
 * agent's latest.html). kiln writes as root into directories other users
 * may share, so a write must never follow a link another user planted:
 *
 * - the directory is opened by walking its path one component at a time
 *   from "/" (O_NOFOLLOW), and every directory on the way must be owned
 *   by a trusted uid (root, kiln's effective uid, or the SUDO_UID of the
 *   user who ran sudo) and not writable by group or others unless sticky
 *   (/tmp); a symlink on the way is followed only when a trusted uid owns
 *   it, and its target is walked with the same checks;
 * - the data goes to a temporary file with a random name created with
 *   O_CREAT | O_EXCL | O_NOFOLLOW inside that directory fd, then renamed
 *   over the final name with renameat, which replaces a directory entry and
 *   never follows one; a final name that is a symlink or not a regular file
 *   is refused instead of replaced;
 * - files are created with the caller's mode (FILE_MODE_DEFAULT 0640),
 *   narrowed by the umask.
 *
 * Every refusal is counted by reason (file__refusal_stats) and logged once
 * per (file, reason), and returned as -EPERM, which callers do not log
 * again. */
#ifndef KILN_CORE_FILE_H
#define KILN_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FILE_MODE_DEFAULT 0640u
/* The bounds of --output-mode: owner read-write at least, nothing beyond
 * read-write for all (execute bits are masked off by the writer). */
#define FILE_MODE_MIN 0600u
#define FILE_MODE_MAX 0666u

/* Why an output write was refused. */
enum file_refusal {
	FILE_REFUSED_DIR_OWNER = 0,     /* a directory on the path owned by another user */
	FILE_REFUSED_DIR_MODE,          /* group/world-writable and not sticky */
	FILE_REFUSED_LINK,              /* an untrusted symlink on the path, a symlink
					 * at the final name, or too many links */
	FILE_REFUSED_NOT_REGULAR,       /* a directory, FIFO, ... at the final name */
	FILE_REFUSAL_COUNT
};

/* "dir_owner", "dir_mode", "link", "not_regular": label values. */
extern const char *const file_refusal_names[FILE_REFUSAL_COUNT];

/* Opens dir (absolute or relative to the working directory) as a directory
 * fd after the checks above. Returns the fd (O_CLOEXEC; the caller closes
 * it) or -errno: -EPERM when refused (counted, logged once as one line
 * naming the directory at fault and what to do), -ENOENT & co otherwise
 * (not logged). */
int file__open_dir(const char *dir);
/* Writes dirfd/name with fill(f, ctx) through a temporary file and a
 * rename, so a reader never sees half a file; shown names the file in
 * messages. mode: permission bits (masked with 0666, narrowed by the
 * umask). *bytes: what fill wrote. 0 or -errno (the temporary file
 * removed); -EPERM when the final name is refused. */
int file__write_at(int dirfd, const char *name, const char *shown, unsigned mode,
		   int (*fill)(FILE *f, void *ctx), void *ctx, uint64_t *bytes);
/* file__open_dir of path's directory, then file__write_at of its last
 * component. */
int file__write_atomic(const char *path, unsigned mode, int (*fill)(FILE *f, void *ctx),
		       void *ctx, uint64_t *bytes);
/* The checks of file__open_dir on path's directory alone, so a command
 * can refuse before it works rather than after: 0 or its -errno. */
int file__check_dir_of(const char *path);
/* The refusals so far, process-wide, by reason. Thread-safe. */
void file__refusal_stats(uint64_t out[FILE_REFUSAL_COUNT]);

/* Appends s to buf[*pos..n) made file-name safe: characters outside
 * [A-Za-z0-9._-] become '_' ("ns/app" -> "ns_app"). Stops short of
 * reserve bytes before the end; buf stays NUL-terminated. */
void file__append_safe_name(char *buf, size_t n, size_t *pos, const char *s, size_t reserve);

#endif
