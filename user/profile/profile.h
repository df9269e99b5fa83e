/* SPDX-License-Identifier: BSD-2-Clause */
/* A CPU profile: samples aggregated by call stack into a stack tree, with
 * the locations and mappings pprof needs. One profile per label set. */
#ifndef KILN_PROFILE_PROFILE_H
#define KILN_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/frame.h"
#include "core/labels.h"

struct profile;
struct label_match;

struct profile *profile__new(void);
/* Adds count samples of one stack; frames[0] is the root (process name),
 * frames[n-1] the leaf. Strings are copied (interned). Frames alike in
 * every field share one location; FRAME_ROOT frames are told apart by
 * name only. 0, -EINVAL (n == 0 or a NULL name) or
 * -ENOMEM; on failure the profile stays usable and the stack uncounted. */
int profile__add(struct profile *p, const struct frame *frames, size_t n,
		 uint64_t count);
/* Adds every stack of src to dst (which may not be src). 0 or -ENOMEM;
 * on failure dst holds part of src. */
int profile__merge(struct profile *dst, const struct profile *src);
/* profile__merge with every stack of src under the frame top (a
 * FRAME_LABELS frame, say; NULL: none). */
int profile__merge_under(struct profile *dst, const struct profile *src, const struct frame *top);
/* Calls fn for every stack of p with samples of its own: its frames (root
 * first, valid during the call) and count; stops at fn's first non-zero
 * return, which it returns. 0, fn's error or -ENOMEM. */
int profile__each_stack(const struct profile *p,
			int (*fn)(void *ctx, const struct frame *frames, size_t n, uint64_t count),
			void *ctx);
/* Distinct stacks: what a pprof's sample count is. */
size_t profile__stacks(const struct profile *p);
/* A copy of p with at most keep stacks: the heaviest keep - 1, and the
 * samples of the others in one "[other]" stack (a root frame of its own);
 * *folded gets those samples. NULL + errno. */
struct profile *profile__top(const struct profile *p, size_t keep, uint64_t *folded);
uint64_t profile__total(const struct profile *p);
/* Nodes of the stack tree, the empty root included: what the size of
 * every encoding grows with. */
size_t profile__nodes(const struct profile *p);
size_t profile__bytes(const struct profile *p);
void profile__free(struct profile *p);

struct pprof_meta {
	uint64_t period_ns;     /* 1e9 / frequency; 0: unknown (no cpu values) */
	int64_t time_nanos;     /* start of the profiled span, unix ns */
	int64_t duration_nanos;
	/* String labels of every sample (a file of one label set's profile);
	 * NULL: none. Stacks under a FRAME_LABELS frame carry its labels. */
	const struct labels *labels;
};

/* Encodes p as a pprof Profile with sample types [samples/count,
 * cpu/nanoseconds], values [count, count x period], one sample per distinct
 * stack, gzip-compressed when gzip is true. Functions carry their source
 * file, lines their line; frames inlined into their caller become lines
 * of the caller's location (innermost first); a mapping with a frame no
 * symbol named has has_functions false. With period_ns 0 there is only
 * samples/count. *out is malloc'd. 0 or -errno. */
int pprof__encode(const struct profile *p, const struct pprof_meta *meta,
		  bool gzip, uint8_t **out, size_t *out_len);
/* gzip (RFC 1952) of in[0..len), at the speed the encoder uses. *out is
 * malloc'd. 0 or -errno. */
int pprof__gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);
/* Writes folded stacks, one line per distinct stack of names:
 * "comm;outer;...;leaf count", kernel frames suffixed "_[k]", ';' in a name
 * written as ':' and control characters as spaces; lines sorted bytewise.
 * With labels, a stack with labels starts with them as one more frame,
 * "{name=value,...};comm;...", where '\' ',' '=' '{' '}' ';' and control
 * characters of a name or value are written "\xHH" (FlameGraph would
 * draw it as a frame: off by default). 0 or -errno. */
int folded__write(const struct profile *p, bool labels, FILE *f);

struct html_meta {
	const char *title;      /* NULL: "kiln" */
	const char *unit;       /* what the counts are; NULL: "samples" */
	int64_t time_nanos;     /* start, unix ns; 0: unknown */
	int64_t duration_nanos; /* 0: unknown */
};

/* Writes one self-contained HTML page (data, script and style inline, no
 * network): a flame graph of p, a table of functions and a sandwich view.
 * Size grows linearly with the stack tree. 0 or -errno. */
int html__write(const struct profile *p, const struct html_meta *meta,
		FILE *f);
/* The same page comparing two profiles: the flame graph has the shape of
 * cur, each frame coloured by how its share of the total changed against
 * base (red grew, blue shrank); the table has delta columns. */
int html__write_diff(const struct profile *base, const struct profile *cur,
		     const struct html_meta *meta, FILE *f);

/* How one function's share changed between two profiles. Shares are in
 * percent of each profile's own total, so profiles of different lengths
 * compare; changes are in percentage points. */
struct func_change {
	const char *name;
	const char *module;     /* file base name; "" when unknown */
	double self_base, self_new;     /* samples ending in the function */
	double total_base, total_new;   /* samples with it on the stack, once */
};

struct profile_diff;

/* Compares cur against base: one change per function found in either,
 * largest absolute change of total share first (then of self share, then
 * by name). NULL + errno. */
struct profile_diff *profile_diff__new(const struct profile *base,
				       const struct profile *cur);
const struct func_change *profile_diff__changes(const struct profile_diff *d,
						size_t *n);
/* Writes the top changes (at most top rows) as a text table. 0 or -EIO. */
int profile_diff__write_text(const struct profile_diff *d, size_t top, FILE *f);
/* Whether c's total share grew by more than points, for a function whose
 * name matches glob (fnmatch; NULL matches all). */
bool func_change__regressed(const struct func_change *c, double points,
			    const char *glob);
void profile_diff__free(struct profile_diff *d);

enum profile_format {
	PROFILE_FORMAT_NONE = 0,
	PROFILE_FORMAT_PPROF,   /* gzipped */
	PROFILE_FORMAT_FOLDED,
	PROFILE_FORMAT_HTML,
};

/* The format a file name's extension asks for (.pb.gz .pprof, .folded
 * .txt, .html .htm), or PROFILE_FORMAT_NONE. */
enum profile_format profile_format__from_path(const char *path);
/* "pprof", "folded" or "html"; PROFILE_FORMAT_NONE for anything else. */
enum profile_format profile_format__parse(const char *name);
const char *profile_format__name(enum profile_format fmt);
/* Writes p to f in fmt; pprof uses pmeta, HTML hmeta, folded stacks
 * folded_labels (folded__write's labels). 0 or -errno. */
int profile__write(const struct profile *p, enum profile_format fmt,
		   const struct pprof_meta *pmeta,
		   const struct html_meta *hmeta, bool folded_labels, FILE *f);

/* Bounds on what reading may cost. */
struct read_limits {
	size_t max_bytes;       /* the input, and a pprof after gunzip */
	size_t max_nodes;       /* stack tree nodes of the profile read into */
	/* Only samples whose labels these select (profile/label_match.h;
	 * NULL: all); a stack without labels has none. */
	const struct label_match *match;
};

/* What an input said about itself, and why it was refused. */
struct read_info {
	char type[32], unit[32];        /* the values read: "samples", "count" */
	uint64_t period_ns;     /* nanoseconds a sample stands for; 0: unknown */
	int64_t time_nanos, duration_nanos;     /* 0: unknown */
	uint64_t skipped;       /* samples dropped: value zero or negative */
	uint64_t unmatched;     /* samples the labels of which lim->match refused */
	char why[160];          /* on failure: one phrase, no file name */
};

/* Adds the profile in buf to p: pprof (gzipped or not: any producer's,
 * the sample type "samples" preferred, else the default one) or folded
 * stacks (FlameGraph's "a;b;c 12" lines, "_[k]" marking kernel frames).
 * 0; -EINVAL when buf is neither (info->why says what is wrong); -EFBIG
 * or -E2BIG past a limit; -ENOMEM. After a failure p holds part of buf. */
int profile__read(struct profile *p, const uint8_t *buf, size_t len,
		  const struct read_limits *lim, struct read_info *info);
/* profile__read of a file; -errno when it cannot be read (info->why set). */
int profile__read_file(struct profile *p, const char *path,
		       const struct read_limits *lim, struct read_info *info);

#endif
