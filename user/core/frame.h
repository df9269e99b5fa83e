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
};

#endif
