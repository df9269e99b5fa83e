/* The file exporter: profiles written into one directory, each file written
 * to a temporary name and renamed, so readers never see half a file. The
 * directory is bounded: after every write the oldest interval files
 * (`<unix-start>-*` names, including those of earlier runs) are removed
 * until the total is at most max_bytes. */
#ifndef KILN_EXPORT_FILES_H
#define KILN_EXPORT_FILES_H

#include <stdint.h>
#include <stdio.h>

struct files_stats {
	uint64_t written, bytes_written, removed, errors;
	uint64_t bytes_held, files_held;
};

struct files;

/* Creates dir if needed and accounts for the interval files already in
 * it. NULL + errno (logged). */
struct files *files__new(const char *dir, uint64_t max_bytes);
/* Writes dir/name with fill(f, ctx); rotated unless name starts with a
 * non-digit (e.g. "latest.html", rewritten in place). 0 or -errno (logged,
 * counted). */
int files__write(struct files *fs, const char *name, int (*fill)(FILE *f, void *ctx),
		 void *ctx);
void files__stats(const struct files *fs, struct files_stats *out);
void files__free(struct files *fs);

#endif
