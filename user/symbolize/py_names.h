/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of Python frames: a code object's qualified name, file and line
 * table, read from its process (process_vm_readv) and cached per process
 * instance and code object address within a byte bound. An entry is used
 * only while the object still matches what BPF saw at the sample (its
 * check: co_firstlineno, co_argcount, co_flags) and is a code object, so a
 * freed and reused address never names a frame wrongly: it is read again,
 * or the frame stays unnamed, counted. */
#ifndef KILN_SYMBOLIZE_PY_NAMES_H
#define KILN_SYMBOLIZE_PY_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/python.h"

/* Bytes of names and line tables cached, all processes; when full the
 * cache starts over (counted). */
#define PY_NAMES_BYTES (32u << 20)
#define PY_NAME_MAX 1024 /* characters of a name or file kept */
#define PY_LINETABLE_MAX (64u << 10) /* a bigger line table is not read: line 0 */

/* Why a Python frame got no name. Label values: py_names_failure_names. */
enum py_names_failure {
	PY_NAMES_GONE = 0, /* no facts for the process (it ended, or never had any) */
	PY_NAMES_UNREADABLE, /* its memory could not be read (it exited) */
	PY_NAMES_NOT_CODE, /* the address holds no code object now */
	PY_NAMES_REUSED, /* the code object there is not the one sampled */
	PY_NAMES_BAD_STRING, /* a name that is no readable string */
	PY_NAMES_FAILURE_COUNT
};
extern const char *const py_names_failure_names[PY_NAMES_FAILURE_COUNT];

struct py_names_stats {
	uint64_t frames, named; /* Python frames symbolized, and named */
	uint64_t reads; /* code objects read */
	uint64_t failures[PY_NAMES_FAILURE_COUNT];
	uint64_t bytes, entries; /* cached now */
	uint64_t flushes; /* times the cache was full and started over */
	uint64_t no_lines; /* code objects whose line table was over PY_LINETABLE_MAX */
};

struct py_frame_name {
	const char *name, *file; /* valid until the cache changes */
	uint32_t line;
};

struct py_names;

struct py_names *py_names__new(size_t max_bytes);
/* Names the frame (code object code, BPF's check, instruction index) of
 * the process instance (pid) described by info. 0, or -1 with the reason
 * counted. */
int py_names__frame(struct py_names *n, const struct python_info *info, pid_t pid,
		    uint32_t instance, uint64_t code, uint32_t check, uint32_t index,
		    struct py_frame_name *out);
/* Reads and caches code object code of a live process now (BPF saw it for
 * the first time): its name survives the process's exit. */
void py_names__prefetch(struct py_names *n, const struct python_info *info, pid_t pid,
			uint32_t instance, uint64_t code);
void py_names__stats(const struct py_names *n, struct py_names_stats *out);
void py_names__free(struct py_names *n);

/* Decodes a str object's contents at data (kind: 1, 2 or 4 bytes a
 * character; len characters) into UTF-8 in out (NUL terminated, cut at
 * out_len). Exposed for tests. */
size_t py_names__utf8(const uint8_t *data, size_t len, unsigned kind, char *out, size_t out_len);

#endif
