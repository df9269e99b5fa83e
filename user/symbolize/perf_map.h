/* SPDX-License-Identifier: BSD-2-Clause */
/* perf maps: the text file a JIT (node --perf-basic-prof, the JVM's
 * Compiler.perfmap, .NET, CPython -X perf) writes as /tmp/perf-<pid>.map,
 * one line per piece of generated code: "START SIZE NAME", START and SIZE
 * in hex (with or without 0x), NAME the rest of the line. The file is the
 * process's: every line is hostile input. */
#ifndef KILN_SYMBOLIZE_PERF_MAP_H
#define KILN_SYMBOLIZE_PERF_MAP_H

#include <stdint.h>

#include "symbolize/jit_table.h"

/* Bytes of a perf map opened; a larger one is refused unread. */
#define PERF_MAP_FILE_MAX (64ull << 20)
/* Bad lines counted in one file before the rest of it is skipped. */
#define PERF_MAP_BAD_LINES_MAX 1024

/* Reads the first size bytes of the perf map open at fd into b, a line at
 * a time: later lines win where they overlap
 * earlier ones (jit_table.h). A line that is not START SIZE NAME is counted
 * (bad_line) and skipped, blank lines silently; past
 * PERF_MAP_BAD_LINES_MAX bad lines, or once b is full, the rest is
 * skipped. A last line without its newline is being written: left for
 * the next read. A name is cut to JIT_NAME_MAX (counted), and so is a line
 * longer than the 64 KiB read buffer. 0, or -ENOMEM, or -errno of pread(2)
 * (what was read before stays in b). */
int perf_map__read(struct jit_builder *b, int fd, uint64_t size);

#endif
