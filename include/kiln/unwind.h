/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The unwind table format, shared by user/unwind/ (which builds it from an
 * ELF file's CFI) and the BPF walker that will apply it: fixed-width kernel
 * types only, no libc. docs/unwinding.md describes it.
 *
 * A table is a sorted array of rows; a row applies from its pc_off up to
 * the next row's. pc_off is relative to the vaddr of the file's first
 * PT_LOAD segment, so a mapping's pc becomes pc - load bias - that vaddr.
 * A row's rule is either an index into a rule array or, with bit 15 set,
 * a command the walker carries out without a rule. */
#ifndef KILN_UNWIND_H
#define KILN_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct kiln_unwind_row {
	__u32 pc_off;
	__u16 rule;             /* rule index, or KILN_UNWIND_CMD | command */
	__u16 flags;            /* KILN_ROW_* */
};

/* Bit 15 of a row's rule: a command, not a rule index. */
#define KILN_UNWIND_CMD         0x8000u
enum kiln_unwind_cmd {
	KILN_CMD_INVALID = 0,   /* no usable CFI here: stop, mark the stack */
	KILN_CMD_STOP = 1,      /* the thread's root (RA undefined, _start, clone) */
	KILN_CMD_PLT = 2,       /* lazy .plt: CFA = rsp + 8, + 8 if (pc & 15) >= threshold */
	KILN_CMD_SIGNAL = 3,    /* rt_sigreturn trampoline: registers from the ucontext */
	KILN_CMD_FP = 4,        /* unwind by frame pointer (not emitted yet) */
};

/* Row flags. The low 4 bits of a PLT row hold its threshold (11 or 10 in
 * the two x86-64 CFA expressions binutils writes). */
#define KILN_ROW_PLT_THRESHOLD  0x000fu
#define KILN_ROW_DEBUG_FRAME    0x0010u /* from .debug_frame of the file or its debug file */
#define KILN_ROW_SYNTHETIC      0x0020u /* no CFI: .plt.sec/.plt.got stub rule, gap */

/* CFA base registers (x86-64 and arm64 names side by side). */
enum kiln_unwind_reg {
	KILN_REG_SP = 0,        /* rsp / sp */
	KILN_REG_FP = 1,        /* rbp / x29 */
};

/* How the caller's frame pointer (rbp / x29) is found. */
enum kiln_fp_rule {
	KILN_FP_UNCHANGED = 0,  /* same value (or not mentioned by the CFI) */
	KILN_FP_AT_CFA = 1,     /* saved at CFA + fp_off */
	KILN_FP_AT_FP = 2,      /* saved at fp + fp_off (stack realignment) */
};

/* How the return address is found. x86-64: always at CFA - 8. */
enum kiln_ra_rule {
	KILN_RA_AT_CFA_M8 = 0,  /* *(CFA - 8) */
	KILN_RA_IN_LR = 1,      /* arm64 leaf: still in x30 */
};

/* Rule flags. */
#define KILN_RULE_CFA_DEREF     0x01u   /* CFA = *(reg + cfa_off) (stack realignment) */

struct kiln_unwind_rule {
	__u8 cfa_reg;           /* enum kiln_unwind_reg */
	__u8 fp_rule;           /* enum kiln_fp_rule */
	__u8 ra_rule;           /* enum kiln_ra_rule */
	__u8 flags;             /* KILN_RULE_* */
	__s32 cfa_off;
	__s32 fp_off;
};

#endif
