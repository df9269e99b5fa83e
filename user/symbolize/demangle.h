/* SPDX-License-Identifier: BSD-2-Clause */
/* Rust symbol names, demangled by libiberty's Rust demangler (Debian's
 * libiberty-dev): legacy names (_ZN...17h<16 hex>E) without their
 * ::h<hash> and with their $LT$-style escapes decoded, and v0 names
 * (_R...), with a suffix such as LLVM's ".llvm.<hex>" or without. Bounded
 * as elf_symtab.c bounds C++ names: the output is cut to the caller's
 * buffer, and a name whose demangling grows past max_total bytes (v0 back
 * references can double the output at every level) is abandoned. */
#ifndef KILN_SYMBOLIZE_DEMANGLE_H
#define KILN_SYMBOLIZE_DEMANGLE_H

#include <stddef.h>

/* 1: name is a Rust symbol, out (cap > 0 bytes) holds its demangled name,
 * NUL-terminated and cut to cap - 1 bytes, *total its full length; 0: not
 * a Rust symbol (out is ""); -1: refused, the demangling passed max_total
 * bytes. name must be NUL-terminated; the caller bounds its length. */
int demangle__rust(const char *name, char *out, size_t cap, size_t max_total, size_t *total);

#endif
