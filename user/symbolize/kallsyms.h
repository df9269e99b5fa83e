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
/* The symbol containing addr (the nearest symbol at or below it) into
 * *out; false when none: also when addr is 1 MiB or more past that symbol
 * (no kernel function is that long: the address is in a hole or past the
 * last module), or, for a table from the cache, past the memory of that
 * symbol's module (counted: kallsyms__uncovered). Several symbols at one
 * address resolve to one: T before W before t before w, then the first in
 * the input. */
bool kallsyms__lookup(struct kallsyms *ks, uint64_t addr, struct ksym *out);
/* Lookups of a cached table that fell past a module's memory: something
 * loaded since (a BPF program, a trampoline) that only a new read names. */
size_t kallsyms__uncovered(const struct kallsyms *ks);

/* Where the kernel tells what kallsyms__load_cached needs. */
struct kallsyms_paths {
	const char *kallsyms;   /* /proc/kallsyms */
	const char *modules;    /* /proc/modules (absent: no modules) */
	const char *boot_id;    /* /proc/sys/kernel/random/boot_id */
};

enum kallsyms_cache_result {
	KALLSYMS_CACHE_OFF,             /* no directory, or addresses hidden */
	KALLSYMS_CACHE_HIT,             /* mmap()ed from the directory */
	KALLSYMS_CACHE_MISS,            /* none for this boot and modules: read, written */
	KALLSYMS_CACHE_REFUSED,         /* not kiln's own, or corrupt: read, rewritten */
	KALLSYMS_CACHE_UNWRITTEN,       /* read, but could not be written */
};

/* The kernel's symbols from the table that dirfd (a cache directory;
 * -1: none) keeps for this boot and these loaded modules, else read from
 * paths->kallsyms and written there for the next run. The cached table
 * holds no BPF program or trampoline symbol. NULL + errno as
 * kallsyms__load. */
struct kallsyms *kallsyms__load_cached(const struct kallsyms_paths *paths, int dirfd,
				       enum kallsyms_cache_result *res);
size_t kallsyms__count(const struct kallsyms *ks);
size_t kallsyms__skipped_lines(const struct kallsyms *ks);
/* True when every address read was zero (kptr_restrict hides them); the
 * table then holds no symbols. */
bool kallsyms__restricted(const struct kallsyms *ks);
size_t kallsyms__bytes(const struct kallsyms *ks);
void kallsyms__free(struct kallsyms *ks);

#endif
