/* SPDX-License-Identifier: BSD-2-Clause */
/* Small file helpers shared by the writers of profiles. */
#ifndef KILN_CORE_FILE_H
#define KILN_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes path with fill(f, ctx) through "<path>.tmp.<pid>" and a rename,
 * so a reader never sees half a file. *bytes: what fill wrote. 0 or
 * -errno (the temporary file removed). */
int file__write_atomic(const char *path, int (*fill)(FILE *f, void *ctx), void *ctx,
		       uint64_t *bytes);
/* Appends s to buf[*pos..n) made file-name safe: characters outside
 * [A-Za-z0-9._-] become '_' ("ns/app" -> "ns_app"). Stops short of
 * reserve bytes before the end; buf stays NUL-terminated. */
void file__append_safe_name(char *buf, size_t n, size_t *pos, const char *s, size_t reserve);

#endif
