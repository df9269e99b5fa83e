/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* CRuby frames from the interpreter's own state: what user space
 * (user/unwind/ruby.c) tells the BPF walker about a Ruby process, and how
 * the walker writes Ruby frames into a user stack. Fixed-width kernel
 * types only, no libc. docs/ruby.md describes the whole path. */
#ifndef KILN_RUBY_H
#define KILN_RUBY_H

#include "kiln/interp.h"

/* A Ruby frame's three slots (kiln/interp.h): the instruction sequence's
 * address (rb_iseq_t) under KILN_RB_TAG_ISEQ; under KILN_RB_TAG_WHERE the
 * check, the low 24 bits of first_lineno ^ iseq_size << 8 ^ type << 20 of
 * its body, with the instruction position (in VALUE words from
 * iseq_encoded, the one Ruby itself looks its line up at); under
 * KILN_INTERP_TAG_AUX what the method's environment holds at ep[-2] (a
 * method entry, whose class qualifies the name, or not: 0 when none was
 * reached). */
#define KILN_RB_TAG_ISEQ 0xc3u
#define KILN_RB_TAG_WHERE 0xc4u

/* How the walker finds the sampled thread's execution context. */
enum kiln_rb_ec {
	KILN_RB_EC_TLS = 1, /* ruby_current_ec, the thread's own TLS variable:
			     * *(*(*(tp + 8) + 16 * modid) + tls_off) */
	KILN_RB_EC_RUNNING = 2, /* fallback: the main ractor's running_ec (the
				 * GVL holder's), used only when its thread's
				 * pthread_self() is the sampled thread's tp */
};

/* Offsets into the interpreter's structures, bytes. */
struct kiln_rb_offsets {
	__u16 ec_vm_stack, ec_vm_stack_size, ec_cfp, ec_thread;
	__u16 cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	__u16 iseq_body, body_type, body_size, body_encoded, body_first_lineno;
	__u16 ractor_running_ec, thread_id;
	__u16 pad;
};

/* Flags of a control frame (its ep[0]). */
#define KILN_RB_FRAME_FINISH 0x20 /* the first frame of one rb_vm_exec call */
#define KILN_RB_FRAME_CFRAME 0x80 /* a C frame (cfunc, ifunc, dummy): not Ruby */
#define KILN_RB_ENV_LOCAL 0x02 /* a method's own environment (not a block's) */

/* BPF map rb_procs: pid -> the Ruby process's facts, for one instance. */
struct kiln_rb_proc {
	__u32 instance;
	__u32 ec_kind; /* enum kiln_rb_ec */
	__u64 eval_start, eval_end; /* rb_vm_exec [start, end) */
	__u64 tls_modid; /* KILN_RB_EC_TLS: the TLS module id of the file
			  * defining ruby_current_ec */
	__u64 tls_off; /* and the variable's offset in its TLS block */
	__u64 main_ractor; /* KILN_RB_EC_RUNNING: &ruby_single_main_ractor */
	struct kiln_rb_offsets o;
};

#endif
