/* SPDX-License-Identifier: BSD-2-Clause */
/* The separate debug file of an ELF file: by build id, then by
 * .gnu_debuglink, every candidate opened through the safe opener inside
 * the owning process's root. Shared by the stages that read more than the
 * main file: symbolize/ (its .symtab) and unwind/ (its .debug_frame). */
#ifndef KILN_CORE_DEBUG_FILE_H
#define KILN_CORE_DEBUG_FILE_H

#include <gelf.h>
#include <stdbool.h>

#define DEBUGLINK_NAME_MAX	255
#define DEBUGLINK_SECTION_MAX	4096		/* name, padding, CRC */

/* Offered each candidate that matched (same build id, or the debuglink's
 * CRC32) and is not the main file itself. It owns elf and fd whatever it
 * returns (elf_end and close them, now or later). true: the search ends;
 * false: the next candidate is tried. file: the candidate's path inside
 * root, valid during the call only. */
typedef bool (*debug_file_accept_fn)(Elf *elf, int fd, const char *file, void *ctx);

/* Tries, in order: /usr/lib/debug/.build-id/xx/rest.debug inside root,
 * then the same on the host (when root is not the host's: host binaries
 * seen through a container's mount); then, when the file has a
 * .gnu_debuglink section (debuglink, may be NULL), the named file next to
 * path, in its .debug/ folder and under /usr/lib/debug + its folder,
 * inside root. elf: the main file (for its byte order); fd: the main file,
 * so it is never taken for its own debug file; build_id: lower-case hex,
 * "" or NULL when none; root: "/proc/PID/root", or "" for the host; path:
 * the main file as the process sees it, may be NULL. Every open is the
 * safe opener's, capped at ELF_FILE_MAX (refusals counted there). true
 * when accept kept a candidate. */
bool debug_file__find(Elf *elf, Elf_Scn *debuglink, int fd, const char *build_id,
		      const char *root, const char *path, debug_file_accept_fn accept,
		      void *ctx);

/* One candidate found elsewhere (a file a debuginfod client fetched): the
 * file at path on the host, offered to accept when it is ELF, has
 * build_id and is not the main file (fd); opened by the safe opener under
 * ELF_FILE_MAX as the others. true when accept kept it. */
bool debug_file__try(int fd, const char *build_id, const char *path,
		     debug_file_accept_fn accept, void *ctx);

#endif
