/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* CPython frames from the interpreter's own state: what user space
 * (user/unwind/python.c) tells the BPF walker about a Python process, and
 * how the walker writes Python frames into a user stack. Fixed-width
 * kernel types only, no libc. docs/python.md describes the whole path. */
#ifndef KILN_PYTHON_H
#define KILN_PYTHON_H

#include "kiln/interp.h"

/* A Python frame's two slots (kiln/interp.h): the code object's address
 * under KILN_PY_TAG_CODE, and under KILN_PY_TAG_WHERE the check, the low 24
 * bits of co_firstlineno ^ co_argcount << 16 ^ co_flags << 8, with the
 * instruction index, in 2-byte code units from the start of the bytecode. */
#define KILN_PY_TAG_CODE 0xc1u
#define KILN_PY_TAG_WHERE 0xc2u

/* How the walker knows where one C call of the eval loop began. */
enum kiln_py_entry {
	KILN_PY_ENTRY_FLAG = 1, /* 3.11: the frame's is_entry byte is set: it is the
				  * first (outermost) frame of the call, emitted */
	KILN_PY_ENTRY_SHIM = 2, /* 3.12+: a frame whose owner byte is
				  * FRAME_OWNED_BY_CSTACK ends the call; it is a
				  * shim, not emitted */
};

/* Offsets into the interpreter's structures, bytes; 0xffff: none. */
struct kiln_py_offsets {
	__u16 tstate_cframe; /* PyThreadState.cframe (3.11, 3.12), else none */
	__u16 cframe_frame; /* _PyCFrame.current_frame, or with no cframe
				  * PyThreadState.current_frame (3.13) */
	__u16 frame_code; /* _PyInterpreterFrame.f_code / f_executable */
	__u16 frame_previous;
	__u16 frame_instr; /* prev_instr (3.11, 3.12) / instr_ptr (3.13) */
	__u16 frame_entry; /* is_entry (3.11) / owner (3.12+), one byte */
	__u16 code_argcount; /* int */
	__u16 code_flags; /* int */
	__u16 code_firstlineno; /* int */
	__u16 code_bytecode; /* co_code_adaptive (PyCode_Type.tp_basicsize) */
	__u8 entry_kind; /* enum kiln_py_entry */
	__u8 entry_value; /* FRAME_OWNED_BY_CSTACK (3) for KILN_PY_ENTRY_SHIM */
	__u16 pad;
};

/* BPF map py_procs: pid -> the Python process's facts, for one instance. */
struct kiln_py_proc {
	__u32 instance; /* the process image these are of */
	__u32 minor; /* 3.minor */
	__u64 tss_addr; /* &Py_tss_t {int initialized; int key;} of the
				  * thread-state key (_PyRuntime.autoTSSkey) */
	__u64 eval_start, eval_end; /* _PyEval_EvalFrameDefault [start, end) */
	__u64 code_type; /* &PyCode_Type: a code object's ob_type */
	__u32 tsd_off; /* glibc: the key's value is at
				  * tp + tsd_off + 16 * key (key < 32) */
	__u32 pad;
	struct kiln_py_offsets o;
};

#endif
