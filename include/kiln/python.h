/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* CPython frames from the interpreter's own state: what user space
 * (user/unwind/python.c) tells the BPF walker about a Python process, and
 * how the walker writes Python frames into a user stack. Fixed-width
 * kernel types only, no libc. docs/python.md describes the whole path. */
#ifndef KILN_PYTHON_H
#define KILN_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* A Python frame takes two slots of a user stack, innermost first like
 * every frame: the code object's address, then where in it. User space
 * addresses stay below 2^56 on every architecture kiln builds for, so the
 * top byte tells a Python slot from a native pc.
 *   slot 0: KILN_PY_TAG_CODE  << 56 | code object address
 *   slot 1: KILN_PY_TAG_WHERE << 56 | check << 32 | instruction index
 * check is the low 24 bits of co_firstlineno ^ co_argcount << 16 ^ co_flags
 * << 8 as BPF read them: user space reads the object again to name it and
 * refuses a name whose check differs (the address was reused). The index
 * counts 2-byte code units from the start of the bytecode, 0xffffffff when
 * unknown. */
#define KILN_PY_TAG_SHIFT 56
#define KILN_PY_TAG_CODE 0xc1u
#define KILN_PY_TAG_WHERE 0xc2u
#define KILN_PY_NO_INSTR 0xffffffffu
#define KILN_PY_CHECK_MASK 0xffffffu

/* Python frames one stack keeps (each two slots of KILN_MAX_STACK_DEPTH);
 * more are cut, the stack marked truncated and counted. */
#define KILN_PY_MAX_FRAMES 48

/* Code objects the walker remembers having announced (KILN_EVENT_PY_CODE),
 * least recently used forgotten first. */
#define KILN_PY_SEEN_MAX 16384

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

/* Python walker counters (BPF map py_stats, per CPU), in samples unless
 * said. Each failure ends that sample's Python walk; its native frames stay. */
enum kiln_py_stat {
	KILN_PY_WALKS = 0, /* samples whose walk met the eval loop */
	KILN_PY_FRAMES, /* Python frames emitted */
	KILN_PY_ERR_TSS, /* the thread-state key unreadable or not set up */
	KILN_PY_ERR_TSD, /* the thread's TSD slot unreadable (no fsbase, key >= 32) */
	KILN_PY_NO_TSTATE, /* the thread has no thread state (not a Python thread) */
	KILN_PY_ERR_FRAME, /* a frame or the thread state unreadable */
	KILN_PY_ERR_CODE, /* a frame whose code object is unreadable or not one */
	KILN_PY_TRUNCATED, /* KILN_PY_MAX_FRAMES or the stack depth reached */
	KILN_PY_LOOP_CAP, /* the walk's budget of frames read ran out */
	KILN_PY_CHAIN_SHORT, /* an eval-loop native frame with no Python frame left */
	KILN_PY_LEFTOVER, /* Python frames left when the native walk ended:
				  * put at the root end of the stack */
	KILN_PY_STAT_COUNT,
};

#endif
