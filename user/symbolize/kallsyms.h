/* SPDX-License-Identifier: BSD-2-Clause */
/* Kernel symbols from /proc/kallsyms (or any buffer in its format). */
#ifndef KILN_SYMBOLIZE_KALLSYMS_H
#define KILN_SYMBOLIZE_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kallsyms;

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module;     /* NULL for the core kernel image */
};

/* Parse a kallsyms text. Only function symbols (t T w W) are kept; lines
 * that do not parse are skipped and counted. NULL + errno on failure. */
struct kallsyms *kallsyms__parse(const char *buf, size_t len);
/* Read and parse a file (normally "/proc/kallsyms"). NULL + errno. */
struct kallsyms *kallsyms__load(const char *path);
/* Symbol containing addr (the nearest symbol at or below it), or NULL,
 * also when addr is 1 MiB or more past that symbol (no kernel function is
 * that long: the address is in a hole or past the last module). Several
 * symbols at one address resolve to one: T before W before t before w,
 * then the first in the input. */
const struct ksym *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr);
size_t kallsyms__count(const struct kallsyms *ks);
size_t kallsyms__skipped_lines(const struct kallsyms *ks);
/* True when every address read was zero (kptr_restrict hides them); the
 * table then holds no symbols. */
bool kallsyms__restricted(const struct kallsyms *ks);
size_t kallsyms__bytes(const struct kallsyms *ks);
void kallsyms__free(struct kallsyms *ks);

#endif
