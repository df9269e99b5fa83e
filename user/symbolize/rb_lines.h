/* SPDX-License-Identifier: BSD-2-Clause */
/* Ruby 3.1 line tables: an instruction sequence's insns_info (one entry a
 * run of instructions: its line) and where each entry begins, either as
 * the positions array or as Ruby's succinct bit-vector (succ_index_table,
 * iseq.c: 54 positions ranked in six words, then 512-position blocks of a
 * rank, eight 9-bit sub-ranks and eight 64-bit words). rb_names.c packs
 * what it reads into one buffer:
 *   u32 n (entries), u32 kind (RB_LINES_POSITIONS or RB_LINES_SUCCINCT),
 *   u32 line[n], then u32 position[n] or the succinct table's bytes.
 * Decoded with every read bounds-checked: a hostile table gives an unknown
 * line, never a read past its end. Fuzzed (tests/fuzz/rb_lines.c). */
#ifndef KILN_SYMBOLIZE_RB_LINES_H
#define KILN_SYMBOLIZE_RB_LINES_H

#include <stddef.h>
#include <stdint.h>

enum { RB_LINES_POSITIONS = 1, RB_LINES_SUCCINCT = 2 };

#define RB_SUCC_IMMEDIATE 54 /* positions ranked in the table's first words */
#define RB_SUCC_HEAD 48 /* bytes of those words */
#define RB_SUCC_BLOCK 80 /* bytes of one 512-position block */

/* The line of the instruction at position pos (VALUE words from the start
 * of the sequence), 0 when unknown. */
uint32_t rb_lines__line(const uint8_t *table, size_t len, uint32_t pos);

/* Bytes of the succinct table of a sequence of iseq_size words. */
size_t rb_lines__succ_bytes(uint32_t iseq_size);

#endif
