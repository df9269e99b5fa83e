/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of Python frames (symbolize/code_names.h caches them): a code
 * object's qualified name, file and line table read from its process, and
 * its check (co_firstlineno, co_argcount, co_flags, as BPF computes it). */
#ifndef KILN_SYMBOLIZE_PY_NAMES_H
#define KILN_SYMBOLIZE_PY_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/code_names.h"
#include "unwind/python.h"

/* The Python language of code_names (facts: const struct python_info *). */
extern const struct code_lang py_names_lang;

/* Decodes a str object's contents at data (kind: 1, 2 or 4 bytes a
 * character; len characters) into UTF-8 in out (NUL terminated, cut at
 * out_len). Exposed for tests. */
size_t py_names__utf8(const uint8_t *data, size_t len, unsigned kind, char *out, size_t out_len);

#endif
