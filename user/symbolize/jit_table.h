/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbols of JIT code one file (a perf map, a jitdump) gives a
 * process: built from (start, size, name) entries in file order, where a
 * later entry wins over the part of an earlier one it overlaps, as perf
 * reads them; then looked up by address. The parsers (perf_map.h,
 * jitdump.h) add entries to a builder, which counts what it refuses and
 * stops at its byte bound. */
#ifndef KILN_SYMBOLIZE_JIT_TABLE_H
#define KILN_SYMBOLIZE_JIT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of a name kept; a longer one is cut (and counted). */
#define JIT_NAME_MAX 1024

/* Why (part of) a JIT symbol file was refused. */
enum jit_refusal {
	JIT_REFUSED_OWNER = 0, /* not owned by one of the process's user ids */
	JIT_REFUSED_BAD_LINE, /* a perf map line that is not START SIZE NAME */
	JIT_REFUSED_BAD_HEADER, /* a jitdump header: magic, byte order, version, size */
	JIT_REFUSED_BAD_RECORD, /* a jitdump record cut short or inconsistent: the rest is skipped */
	JIT_REFUSED_NAME_LONG, /* a name cut to JIT_NAME_MAX bytes */
	JIT_REFUSED_TABLE, /* entries beyond the table's byte bound: the rest is skipped */
	JIT_REFUSAL_COUNT
};

/* Label values: "owner", "bad_line", "bad_header", "bad_record",
 * "name_too_long", "table_too_large". */
extern const char *const jit_refusal_names[JIT_REFUSAL_COUNT];

struct jit_entry {
	uint64_t start;
	uint32_t size;
	uint32_t name; /* offset in the builder's names */
	uint32_t seq; /* file order */
};

struct jit_builder {
	const char *file; /* for logs */
	size_t max_bytes; /* bound of the finished table */
	struct jit_entry *entries;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	bool full; /* max_bytes reached: the caller stops */
	uint64_t refused[JIT_REFUSAL_COUNT];
};

struct jit_table;

/* A builder for file (kept as a pointer: it must outlive the builder)
 * whose table will take at most max_bytes. */
void jit_builder__init(struct jit_builder *b, const char *file, size_t max_bytes);
/* Counts a refusal and logs it (once per file and reason, at warn). */
void jit_builder__refuse(struct jit_builder *b, enum jit_refusal r, const char *detail);
/* Adds [start, start + size) named by name_len bytes of name (cut at a NUL
 * or JIT_NAME_MAX, counted). 0 (a size of 0 adds nothing); -EINVAL for a
 * range that wraps or a size of 4 GiB or more (the caller counts it under
 * its own reason); -E2BIG once the table would exceed max_bytes (counted
 * once; b->full); -ENOMEM. */
int jit_builder__add(struct jit_builder *b, uint64_t start, uint64_t size, const char *name,
		     size_t name_len);
/* The table of everything added (NULL + errno ENOMEM), which may be empty;
 * the builder is released either way and may be initialised again. */
struct jit_table *jit_builder__finish(struct jit_builder *b);
void jit_builder__release(struct jit_builder *b);

/* The name of the symbol covering addr, or NULL. */
const char *jit_table__lookup(const struct jit_table *t, uint64_t addr);
/* Disjoint ranges named (adjacent ranges of one entry merged). */
size_t jit_table__count(const struct jit_table *t);
/* Bytes the table takes, at most the builder's max_bytes plus its header. */
size_t jit_table__bytes(const struct jit_table *t);
void jit_table__free(struct jit_table *t);

#endif
