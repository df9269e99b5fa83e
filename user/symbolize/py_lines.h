/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython 3.11+ location tables (PyCodeObject.co_linetable, PEP 626/657):
 * the source line of one instruction. The table comes from another
 * process's memory: every byte is bounds-checked, a malformed table gives
 * an unknown line, never a read past its end. Fuzzed (tests/fuzz/py_lines.c). */
#ifndef KILN_SYMBOLIZE_PY_LINES_H
#define KILN_SYMBOLIZE_PY_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The line of the instruction at code unit index (2-byte units from the
 * start of the bytecode) in a function starting at firstlineno; 0 when
 * unknown (no location, past the table's end, malformed). */
uint32_t py_lines__line(const uint8_t *table, size_t len, int32_t firstlineno, uint32_t index);

#endif
