/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Interpreter frames (Python, Ruby) in a user stack, shared by the BPF
 * walker and user space: how an interpreter frame is written into the
 * stack's slots, the limits of one stack's interpreter frames and the
 * walker's counters. Each language's header (python.h, ruby.h) says what
 * its two slots hold. Fixed-width kernel types only, no libc. */
#ifndef KILN_INTERP_H
#define KILN_INTERP_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* An interpreter frame takes two slots of a user stack, innermost first
 * like every frame: the code object's address, then where in it. User
 * space addresses stay below 2^56 on every architecture kiln builds for,
 * so the top byte (a language's tag) tells an interpreter slot from a
 * native pc.
 *   slot 0: TAG_CODE  << 56 | code object address
 *   slot 1: TAG_WHERE << 56 | check << 32 | instruction index
 * check is 24 bits of fields of the code object that BPF read with it:
 * user space reads the object again to name it and refuses a name whose
 * check differs (the address was reused). The index is 0xffffffff when
 * unknown. */
#define KILN_INTERP_TAG_SHIFT 56
/* A language may give its frames a third slot, after the two (towards the
 * root): AUX << 56 | a value of its own (Ruby: the method entry). */
#define KILN_INTERP_TAG_AUX 0xcfu
#define KILN_INTERP_NO_INSTR 0xffffffffu
#define KILN_INTERP_CHECK_MASK 0xffffffu

/* Interpreter frames one stack keeps (each two slots of
 * KILN_MAX_STACK_DEPTH); more are cut, the stack marked truncated and
 * counted. */
#define KILN_INTERP_MAX_FRAMES 48

enum kiln_interp_lang {
	KILN_LANG_PY = 0,
	KILN_LANG_RB = 1,
	KILN_LANG_COUNT,
};

/* Interpreter walker counters (BPF map interp_stats, per CPU, at
 * lang * KILN_INTERP_STAT_COUNT + stat), in samples unless said. Each
 * failure ends that sample's interpreter walk; its native frames stay. */
enum kiln_interp_stat {
	KILN_INTERP_WALKS = 0, /* samples whose walk met the eval loop */
	KILN_INTERP_FRAMES, /* interpreter frames emitted */
	KILN_INTERP_ERR_KEY, /* Python: the thread-state key unreadable or not set
			      * up; Ruby: the thread's TLS block unreadable */
	KILN_INTERP_ERR_TSD, /* the thread's slot unreadable (no fsbase, key >= 32) */
	KILN_INTERP_NO_STATE, /* the thread has no thread state / execution context */
	KILN_INTERP_ERR_FRAME, /* a frame or the thread's state unreadable */
	KILN_INTERP_ERR_CODE, /* a frame whose code object is unreadable or not one */
	KILN_INTERP_TRUNCATED, /* KILN_INTERP_MAX_FRAMES or the stack depth reached */
	KILN_INTERP_LOOP_CAP, /* the walk's budget of frames read ran out */
	KILN_INTERP_CHAIN_SHORT, /* an eval-loop native frame with no frame left */
	KILN_INTERP_LEFTOVER, /* frames left when the native walk ended: put
			       * at the root end of the stack */
	KILN_INTERP_NOT_HOLDER, /* Ruby without its TLS slot: the sampled
				 * thread does not hold the GVL */
	KILN_INTERP_STAT_COUNT,
};

#endif
