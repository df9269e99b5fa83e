/* SPDX-License-Identifier: BSD-2-Clause */
/* The user frames named since the drain began, by process snapshot and
 * address. A drain's stacks share most of their frames (the same callers
 * under different leaves, the same loops in every thread), and a frame
 * found here skips the mapping search, the symbol lookup and the copies
 * of its names. A run (a machine frame and the calls inlined there) is
 * copied in whole, strings too: what frame_memo__find hands out stays
 * valid until frame_memo__clear, whatever happens to the symbol tables
 * meanwhile, and each frame kept gets an id (core/frame.h) no other
 * frame of the process has. Bounded (FRAME_MEMO_RUNS runs, FRAME_MEMO_FRAMES frames,
 * FRAME_MEMO_TEXT bytes of strings, about 2.3 MiB at most, touched as
 * used); when full, frames are named without it until the next clear,
 * counted. */
#ifndef KILN_SYMBOLIZE_FRAME_MEMO_H
#define KILN_SYMBOLIZE_FRAME_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"

#define FRAME_MEMO_RUNS 8192
#define FRAME_MEMO_FRAMES 12288
#define FRAME_MEMO_TEXT (768u << 10)

/* Where a frame's address sits in its stack: the innermost frame's is
 * the pc, any other's a return address (looked up one byte before). */
struct frame_memo_key {
	const void *snap;       /* the process snapshot the address is in */
	uint32_t instance;      /* its instance (a freed snapshot's address reused) */
	bool innermost;
	uint64_t ip;
};

struct frame_memo_run {
	const struct frame *frames;     /* n: the machine frame, then the inlined calls */
	uint32_t n;
	bool resolved;          /* named by a symbol */
	bool source;            /* with a source file and line */
};


struct frame_memo;

/* NULL + errno. */
struct frame_memo *frame_memo__new(void);
void frame_memo__free(struct frame_memo *m);
/* Forgets every run and takes their memory back: no frame it handed out
 * may be in use any more. */
void frame_memo__clear(struct frame_memo *m);
/* Forgets every run but keeps its memory until the next clear: the
 * frames handed out stay valid (a snapshot's mappings changed mid-drain). */
void frame_memo__forget(struct frame_memo *m);
/* The run kept under k: true and *run, or false. */
bool frame_memo__find(struct frame_memo *m, const struct frame_memo_key *k,
		      struct frame_memo_run *run);
/* Keeps a copy of run (its frames and their strings) under k, and points
 * run at the copy; false when the memo is full (counted) or run too long:
 * run is left as it was. */
bool frame_memo__put(struct frame_memo *m, const struct frame_memo_key *k,
		     struct frame_memo_run *run);
/* Runs not kept because the memo was full. */
uint64_t frame_memo__full(const struct frame_memo *m);

#endif
