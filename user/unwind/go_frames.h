/* SPDX-License-Identifier: BSD-2-Clause */
/* How each Go function is unwound, from the binary's function table
 * (core/gopclntab.h), for Go code that no CFI covers (a stripped Go
 * binary has none; an unstripped one only .debug_frame, which this
 * replaces). Go keeps frame pointers on x86-64, so most functions get one
 * frame-pointer step (neighbours merge into one row). The exceptions come
 * from the table itself:
 *  - the bottoms of goroutine and thread stacks (TOPFRAME: goexit, mstart,
 *    rt0_go; and mcall) end the walk at the root;
 *  - systemstack runs a function on the thread's g0 stack with rbp still
 *    the goroutine's: its frame-pointer step crosses to the goroutine's
 *    stack (its caller, which called it without a frame, is not seen);
 *  - the signal return trampoline reads the interrupted registers, and
 *    the signal handler (sigtramp, TOPFRAME for Go's own traceback) is
 *    unwound into it, so a sample in a handler keeps the interrupted stack;
 *  - assembly (the ASM flag, or a .s file before Go 1.19) may use rbp as a
 *    scratch register: its stack-pointer deltas (pcsp) give the CFA;
 *  - the Go callers of assembly that clobbers rbp without saving it
 *    (crypto/sha1, sha256, sha512, elliptic, internal/cpu, chacha8rand,
 *    x/crypto's curve25519 and chacha20poly1305) likewise.
 * Where such a function's prologue saved rbp (the code says so: push rbp
 * where pcsp first becomes 8, or mov rbp, N-8(rsp) right after pcsp
 * becomes N, the two prologues Go's assembler writes), rbp is restored
 * from CFA - 16 from there on, so that frame-pointer steps resume in its
 * caller; elsewhere it is unchanged. */
#ifndef KILN_UNWIND_GO_FRAMES_H
#define KILN_UNWIND_GO_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/gopclntab.h"

enum go_span_kind {
	GO_SPAN_FP = 0,         /* one frame-pointer step */
	GO_SPAN_STOP,           /* the thread's root */
	GO_SPAN_SIGNAL,         /* rt_sigreturn trampoline */
	GO_SPAN_SP,             /* CFA = rsp + cfa_off */
	GO_SPAN_FP_SWITCH,      /* a frame-pointer step onto another stack */
};

struct go_span {
	uint64_t start, end;
	enum go_span_kind kind;
	int32_t cfa_off;        /* GO_SPAN_SP */
	bool fp_at_cfa_m16;     /* GO_SPAN_SP: rbp saved at CFA - 16 */
};

struct go_frames_io {
	/* Emits one span; a non-zero return stops the walk. */
	int (*emit)(void *ctx, const struct go_span *s);
	/* Reads len bytes of code at vaddr; false when it cannot (then no
	 * prologue is recognized: rbp stays unchanged). */
	bool (*read_code)(void *ctx, uint64_t vaddr, uint8_t *buf, size_t len);
	void *ctx;
};

/* Calls io->emit for the spans of function f, in pc order, covering
 * [f->entry, f->end). Returns 0, or the first non-zero value emit
 * returned. A pc-value table that does not read gives one frame-pointer
 * span. */
int go_frames__spans(const struct gopclntab *t, const struct go_func *f,
		     const struct go_frames_io *io);

#endif
