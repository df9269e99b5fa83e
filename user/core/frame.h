/* SPDX-License-Identifier: BSD-2-Clause */
/* One frame of a symbolized stack: what the symbolizer makes and the
 * profile (and its readers) keep. */
#ifndef KILN_CORE_FRAME_H
#define KILN_CORE_FRAME_H

#include <stdbool.h>
#include <stdint.h>

enum frame_kind {
	FRAME_ROOT = 0,         /* process name, the root of every stack */
	FRAME_KERNEL,
	FRAME_USER,
	/* A label set (core/labels.h's text form as the name), before the
	 * root: the labels of the stack's samples, not a frame to show. */
	FRAME_LABELS,
};

struct frame {
	enum frame_kind kind;
	const char *name;       /* function, "libfoo.so+0x1a2b", "[unknown]" or comm */
	const char *file;       /* source file of the function; NULL unknown */
	uint32_t line;          /* source line at addr; 0 unknown */
	/* Inlined into the next frame out, its caller, which has the same
	 * address: one machine frame shown as several source frames. */
	bool inlined;
	/* No symbol named it: the name is made up ("libfoo.so+0x1a2b"), so a
	 * consumer with the file may symbolize the address itself. */
	bool unnamed;
	uint64_t addr;          /* runtime address; 0 for FRAME_ROOT */
	/* Mapping (NULL file for none): kernel frames use "[kernel.kallsyms]"
	 * or "[module]"; user frames the file's path, "[vdso]", ... */
	const char *map_file;
	const char *map_build_id; /* hex or NULL */
	uint64_t map_start, map_limit, map_offset;
	/* Nonzero: two frames with the same id are the same frame, equal in
	 * every field (ids are unique in the process: the symbolizer's memo
	 * of a drain's frames sets them), so a profile interns it once; 0:
	 * compare the fields. */
	uint64_t id;
};

#endif
