/* SPDX-License-Identifier: BSD-2-Clause */
/* What every reader (pprof_read.c, folded_read.c) shares: the one-line
 * error and the bounded add. Kept apart from read.c, which calls the
 * readers, so the calls go one way. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/label_match.h"
#include "profile/reader.h"

int read_fail(struct read_info *info, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(info->why, sizeof(info->why), fmt, ap);
	va_end(ap);
	return err;
}

int read_labels_frame(struct labels *set, char **text, const char *const *names,
		      const char *const *values, size_t n, struct frame *f)
{
	int err;

	if (!*text && !(*text = malloc(LABELS_TEXT_MAX)))
		return -ENOMEM;
	err = labels__set_pairs(set, names, values, n);
	if (err)
		return err;
	if (labels__to_text(set, *text, LABELS_TEXT_MAX) < 0)
		return -ENOSPC;
	*f = (struct frame){ .kind = FRAME_LABELS, .name = *text };
	return 0;
}

int read_add(struct profile *p, const struct frame *frames, size_t n,
	     uint64_t count, const struct read_limits *lim,
	     struct read_info *info)
{
	int err;

	if (lim->match) {
		struct labels set = { 0 };
		bool hit;

		err = n && frames[0].kind == FRAME_LABELS ? labels__from_text(&set, frames[0].name) : 0;
		hit = !err && label_match__test(lim->match, &set);
		labels__release(&set);
		if (err == -ENOMEM)
			return err;
		if (!hit) {
			info->unmatched += count;
			return 0;
		}
	}
	err = profile__add(p, frames, n, count);

	if (err)
		return read_fail(info, err, "cannot add a stack: %s", strerror(-err));
	if (profile__nodes(p) > lim->max_nodes)
		return read_fail(info, -E2BIG,
				 "more than %zu distinct stack nodes (--max-nodes)",
				 lim->max_nodes);
	return 0;
}
