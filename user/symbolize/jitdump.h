/* SPDX-License-Identifier: BSD-2-Clause */
/* jitdump files: the binary log a JIT (node --perf-prof, .NET with
 * DOTNET_PerfMapEnabled, the JVM with an agent) appends to as
 * jit-<pid>.dump and maps executable, which is how it is found in the
 * process's mappings. A 40-byte header (magic "JiTD", version 1), then
 * records of {id, total_size, timestamp} and a body: kiln reads the names
 * and code addresses of JIT_CODE_LOAD records and skips every other kind
 * (code moves, debug and unwinding info, close). The file is the
 * process's: every field is hostile input. */
#ifndef KILN_SYMBOLIZE_JITDUMP_H
#define KILN_SYMBOLIZE_JITDUMP_H

#include <stdint.h>

#include "symbolize/jit_table.h"

/* Bytes of a jitdump opened (it holds the code too); a larger one is
 * refused unread. Only record headers and names are read from it. */
#define JITDUMP_FILE_MAX (1ull << 30)

/* Reads the first size bytes of the jitdump open at fd into b. A header
 * that is not a version 1 jitdump of this byte order is refused
 * (bad_header); a record shorter than its own fields, or a code load whose
 * code or name does not fit it, stops the read (bad_record: nothing after
 * it can be trusted to start a record); a last record that goes past size
 * is being written: left for the next read. Stops once b is full. 0, or
 * -ENOMEM, or -errno of pread(2) (what was read before stays in b). */
int jitdump__read(struct jit_builder *b, int fd, uint64_t size);

#endif
