/* SPDX-License-Identifier: BSD-2-Clause */
/* The input side of the profile module: profile__read (read.c) sniffs the
 * format and hands the bytes to one of these readers, which share the
 * helpers of reader.c. Nothing outside user/profile includes this header. */
#ifndef KILN_PROFILE_READER_H
#define KILN_PROFILE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* The mapping of kernel frames, as the symbolizer names it. */
#define KERNEL_MAP "[kernel.kallsyms]"

/* Frames per stack a reader accepts; deeper stacks are refused. */
#define READ_MAX_FRAMES 4096
/* Labels of one stack (a pprof sample's, a folded prefix's). */
#define READ_MAX_LABELS 64

/* Uncompressed pprof in buf; see profile__read. */
int pprof__read(struct profile *p, const uint8_t *buf, size_t len,
		const struct read_limits *lim, struct read_info *info);
/* Folded stacks in buf (need not be NUL-terminated); see profile__read. */
int folded__read(struct profile *p, const char *buf, size_t len,
		 const struct read_limits *lim, struct read_info *info);

/* Sets info->why from fmt and returns err, for one-line error returns. */
int read_fail(struct read_info *info, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The labels names[i]=values[i] (i < n) as the FRAME_LABELS frame *f:
 * set is scratch, *text receives the text form (LABELS_TEXT_MAX bytes,
 * allocated on first use; the caller frees it). 0, -ENOMEM, or -ENOSPC
 * when the text would be longer. */
int read_labels_frame(struct labels *set, char **text, const char *const *names,
		      const char *const *values, size_t n, struct frame *f);
/* profile__add, then the node bound: -E2BIG (why set) once p holds more
 * than lim->max_nodes nodes. */
int read_add(struct profile *p, const struct frame *frames, size_t n,
	     uint64_t count, const struct read_limits *lim,
	     struct read_info *info);

#endif
