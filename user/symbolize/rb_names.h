/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of Ruby frames (symbolize/code_names.h caches them): an
 * instruction sequence's label ("five", "block in five", "<main>"), its
 * file and line table (symbolize/rb_lines.h) read from its process, and
 * its check (first_lineno, iseq_size, type, as BPF computes it). */
#ifndef KILN_SYMBOLIZE_RB_NAMES_H
#define KILN_SYMBOLIZE_RB_NAMES_H

#include "symbolize/code_names.h"
#include "unwind/ruby.h"

/* The Ruby language of code_names (facts: const struct ruby_info *). */
extern const struct code_lang rb_names_lang;

#endif
