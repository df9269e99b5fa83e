/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython processes: which interpreter a process runs, found off the
 * sampling path from the binary it maps (python3.X or libpython3.X: its
 * symbols, Py_Version, the file name) and checked against the running
 * process before the BPF walker may use it (include/kiln/python.h): the
 * per-version offsets against PyCode_Type's member table (3.11, 3.12) or
 * _Py_DebugOffsets (3.13), the thread-state key against the threads'
 * thread-specific data. A build kiln cannot check is refused, logged once
 * per binary and counted by reason; its stacks keep their native frames.
 * docs/python.md describes the whole path. */
#ifndef KILN_UNWIND_PYTHON_H
#define KILN_UNWIND_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kiln/python.h"
#include "proc/proc.h"
#include "unwind/interp_procs.h"

/* Why a Python process gets no Python frames. Label values:
 * python_refusal_names. */
enum python_refusal {
	PY_REFUSED_VERSION = 0, /* a version without an offset table (< 3.11, > 3.13) */
	PY_REFUSED_SYMBOLS, /* _PyRuntime, _PyEval_EvalFrameDefault or PyCode_Type missing */
	PY_REFUSED_OFFSETS, /* the offsets disagree with the running interpreter */
	PY_REFUSED_TSD, /* the thread-state key or the TSD layout not found
				  * (not glibc, not x86-64) */
	PY_REFUSED_UNREADABLE, /* its memory unreadable (no CAP_SYS_PTRACE, exited) */
	PY_REFUSED_NOT_READY, /* not initialized within the process's first re-reads */
	PY_REFUSED_FULL, /* the py_procs map is full (--unwind-processes) */
	PY_REFUSED_WALKER, /* the kernel did not load the Python walker */
	PY_REFUSAL_COUNT
};
extern const char *const python_refusal_names[PY_REFUSAL_COUNT];

/* Everything known of one Python process: what BPF gets, and what the
 * symbolizer needs to name its code objects. */
struct python_info {
	struct kiln_py_proc bpf;
	uint32_t version; /* PY_VERSION_HEX style: 0x030b02f0 */
	/* PyCodeObject fields and string layouts, bytes. */
	uint16_t co_filename, co_name, co_qualname, co_linetable;
	uint16_t ascii_data; /* sizeof(PyASCIIObject) */
	uint16_t compact_data; /* sizeof(PyCompactUnicodeObject) */
};

/* The Python processes (unwind/interp_procs.h; facts: struct
 * python_info). s: the sampler that loads the walker; py_procs_fd: the
 * walker's py_procs map; max: its entries. */
struct interp_procs *pythons__new(struct sampler *s, int py_procs_fd, uint32_t max);

#endif
