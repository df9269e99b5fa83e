/* SPDX-License-Identifier: BSD-2-Clause */
/* The file exporter: profiles written into one directory through the safe
 * writer (core/file.h), each file written to a random temporary name and
 * renamed, so readers never see half a file and no planted link is
 * followed. The
 * directory is bounded: after every write the oldest interval files
 * (`<unix-start>-*` names, including those of earlier runs) are removed
 * until the total is at most max_bytes. */
#ifndef KILN_EXPORT_FILES_H
#define KILN_EXPORT_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/labels.h"
#include "profile/profile_set.h"

struct files_stats {
	uint64_t written, bytes_written, removed, errors;
	uint64_t bytes_held, files_held;
};

struct files;

/* Creates dir if needed (0755), opens it through file__open_dir (owner
 * and mode checked, kept open: later writes and removals go through that
 * fd) and accounts for the interval files already in it. Files are
 * written with mode (core/file.h). NULL + errno (logged; EPERM: the
 * directory was refused). */
struct files *files__new(const char *dir, uint64_t max_bytes, unsigned mode);
/* Writes dir/name with fill(f, ctx); rotated unless name starts with a
 * non-digit (e.g. "latest.html", rewritten in place). 0 or -errno (logged,
 * counted). */
int files__write(struct files *fs, const char *name, int (*fill)(FILE *f, void *ctx),
		 void *ctx);
/* One label set's encoded profile of an interval. */
struct files_profile {
	const struct labels *labels;
	const uint8_t *pprof;           /* gzipped */
	size_t len;
};

/* Writes one interval: each profile as `<start_s>-<service_name>.pb.gz`
 * (the name file-name safe, at most 16 bytes short of the buffer,
 * "unknown" without one), profiles in a row with the same file name
 * numbered -2, -3, ... (give them sorted by service_name); then
 * `<start_s>-all.folded`, the folded stacks of every profile of set.
 * Failures are logged and counted per file. */
void files__write_interval(struct files *fs, uint64_t start_s, const struct files_profile *p,
			   size_t n, struct profile_set *set);
void files__stats(const struct files *fs, struct files_stats *out);
void files__free(struct files *fs);

#endif
