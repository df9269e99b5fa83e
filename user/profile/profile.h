/* A CPU profile: samples aggregated by call stack into a stack tree, with
 * the locations and mappings pprof needs. One profile per label set. */
#ifndef KILN_PROFILE_PROFILE_H
#define KILN_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum frame_kind {
	FRAME_ROOT = 0,         /* process name, the root of every stack */
	FRAME_KERNEL,
	FRAME_USER,
};

struct frame {
	enum frame_kind kind;
	const char *name;       /* function, "libfoo.so+0x1a2b", "[unknown]" or comm */
	uint64_t addr;          /* runtime address; 0 for FRAME_ROOT */
	/* Mapping (NULL file for none): kernel frames use "[kernel.kallsyms]"
	 * or "[module]"; user frames the file's path, "[vdso]", ... */
	const char *map_file;
	const char *map_build_id; /* hex or NULL */
	uint64_t map_start, map_limit, map_offset;
};

struct profile;

struct profile *profile__new(void);
/* Adds count samples of one stack; frames[0] is the root (process name),
 * frames[n-1] the leaf. Strings are copied (interned). Frames with the same
 * kind, mapping, address and name share one location; FRAME_ROOT frames
 * are told apart by name only. 0, -EINVAL (n == 0 or a NULL name) or
 * -ENOMEM; on failure the profile stays usable and the stack uncounted. */
int profile__add(struct profile *p, const struct frame *frames, size_t n,
		 uint64_t count);
uint64_t profile__total(const struct profile *p);
size_t profile__bytes(const struct profile *p);
void profile__free(struct profile *p);

struct pprof_meta {
	uint64_t period_ns;     /* 1e9 / frequency */
	int64_t time_nanos;     /* start of the profiled span, unix ns */
	int64_t duration_nanos;
};

/* Encodes p as a pprof Profile with sample types [samples/count,
 * cpu/nanoseconds], values [count, count x period], one sample per distinct
 * stack, gzip-compressed when gzip is true. *out is malloc'd. 0 or -errno. */
int pprof__encode(const struct profile *p, const struct pprof_meta *meta,
		  bool gzip, uint8_t **out, size_t *out_len);
/* Writes folded stacks, one line per distinct stack of names:
 * "comm;outer;...;leaf count", kernel frames suffixed "_[k]", ';' in a name
 * written as ':' and control characters as spaces; lines sorted bytewise.
 * 0 or -errno. */
int folded__write(const struct profile *p, FILE *f);

#endif
