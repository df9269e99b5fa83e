/* SPDX-License-Identifier: BSD-2-Clause */
/* The unwind table of one ELF file, built in user space from its CFI
 * (.eh_frame, and .debug_frame of the file or of its separate debug file)
 * with libdw, in the format of include/kiln/unwind.h: sorted 8-byte rows
 * and a deduplicated rule array. docs/unwinding.md describes what is built
 * and why; x86-64 only for now (other machines are refused, counted).
 *
 * Built off the sampling path; bounded per file by struct unwind_limits,
 * every refusal counted by reason (unwind_table__stats) and logged once per
 * file. Thread-safe: a table is immutable once built. */
#ifndef KILN_UNWIND_UNWIND_TABLE_H
#define KILN_UNWIND_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/unwind.h"

struct unwind_table;

/* Per-file bounds; a file over any of them gets no table. */
#define UNWIND_CFI_BYTES_MAX   (64ull << 20)   /* .eh_frame + .debug_frame bytes read */
#define UNWIND_DEBUG_BYTES_MAX (512ull << 20)  /* a debug file's DWARF sections libdw loads */
#define UNWIND_FDES_MAX        (1u << 21)      /* FDEs walked */
#define UNWIND_ROWS_MAX        (1u << 22)      /* rows kept (4 Mi rows = 32 MiB) */
#define UNWIND_RULES_MAX       4096u           /* distinct rules (must stay < 0x8000) */
#define UNWIND_WORK_MAX        (1ull << 31)    /* CFI bytes interpreted (libdw runs an
                                                * FDE from its start for every row) */

struct unwind_limits {
	uint64_t max_cfi_bytes, max_debug_bytes, max_work;
	uint32_t max_fdes, max_rows, max_rules;
	uint16_t machine;       /* the one ELF machine taken; 0: x86-64 and arm64 */
};

/* The defaults above. */
extern const struct unwind_limits unwind_default_limits;

/* Why a file got no table. Label values: unwind_refusal_names. */
enum unwind_refusal {
	UNWIND_REFUSED_NOT_ELF = 0,  /* not ELF, bad headers, no PT_LOAD */
	UNWIND_REFUSED_ARCH,         /* not x86-64 or arm64, or not limits.machine */
	UNWIND_REFUSED_NO_CFI,       /* neither .eh_frame nor .debug_frame */
	UNWIND_REFUSED_CFI_BYTES,    /* CFI sections over max_cfi_bytes */
	UNWIND_REFUSED_FDES,         /* more FDEs than max_fdes */
	UNWIND_REFUSED_ROWS,         /* more rows than max_rows */
	UNWIND_REFUSED_RULES,        /* more distinct rules than max_rules */
	UNWIND_REFUSED_WORK,         /* CFI interpretation over max_work */
	UNWIND_REFUSED_DEBUG_FILE,   /* a debug file over max_debug_bytes: skipped, not fatal */
	UNWIND_REFUSAL_COUNT
};
extern const char *const unwind_refusal_names[UNWIND_REFUSAL_COUNT];

/* Why a row became INVALID although CFI covers it: rules libdw reports that
 * the BPF walker will not apply. Label values: unwind_unsupported_names. */
enum unwind_unsupported {
	UNWIND_UNSUP_CFA_REG = 0,    /* CFA based on a register other than rsp/rbp */
	UNWIND_UNSUP_CFA_EXPR,       /* a CFA expression other than PLT / realignment */
	UNWIND_UNSUP_CFA_RANGE,      /* CFA or register offset beyond s32 */
	UNWIND_UNSUP_FP_RULE,        /* rbp restored by another rule (register, value) */
	UNWIND_UNSUP_RA_RULE,        /* return address neither saved at CFA + off nor
	                              * (arm64) in the link register */
	UNWIND_UNSUP_CFI_ERROR,      /* libdw could not interpret the FDE at this pc */
	UNWIND_UNSUP_RANGE,          /* an FDE outside 4 GiB of the first PT_LOAD: skipped */
	UNWIND_UNSUP_COUNT
};
extern const char *const unwind_unsupported_names[UNWIND_UNSUP_COUNT];

/* Process-wide counters of every build (unwind_table__stats). */
struct unwind_stats {
	uint64_t built;                 /* tables built */
	uint64_t rows, bytes;           /* rows and heap bytes of the tables built */
	uint64_t build_ns;              /* time spent building them */
	uint64_t refused[UNWIND_REFUSAL_COUNT];
	uint64_t unsupported[UNWIND_UNSUP_COUNT];  /* rows */
};

#define UNWIND_SEGMENTS_MAX 4

/* Whether a build looked for a separate debug file: what else than the
 * file itself its table depends on (the on-disk cache, table_cache.h). */
enum unwind_debug_lookup {
	UNWIND_DEBUG_NO_LOOKUP = 0,     /* none made: own .debug_frame, Go, an image */
	UNWIND_DEBUG_NOT_FOUND,         /* made; no debug file with .debug_frame */
	UNWIND_DEBUG_FOUND,             /* made; one found (used, or over its bound) */
};

/* What one build found (unwind_table__info). */
struct unwind_table_info {
	uint16_t machine;               /* e_machine: EM_X86_64 or EM_AARCH64 */
	uint64_t base;                  /* vaddr of the first PT_LOAD: pc_off 0 */
	struct {                        /* executable PT_LOAD segments */
		uint64_t offset, vaddr, filesz;
	} segs[UNWIND_SEGMENTS_MAX];
	size_t nsegs;
	size_t rows, rules, bytes;
	size_t fdes_eh, fdes_debug;     /* FDEs walked from .eh_frame / .debug_frame */
	size_t stop_rows, plt_rows, signal_rows, invalid_rows;
	uint64_t cfi_bytes, work, build_ns;
	uint64_t unsupported[UNWIND_UNSUP_COUNT];
	const char *debug_source;       /* "none", "file" (own .debug_frame), "debug-file" */
	int debug_lookup;               /* enum unwind_debug_lookup */
	size_t go_funcs;                /* Go functions given rows from the Go function table */
	const char *go_source;          /* where that table was found (go_image), or NULL */
};

/* Builds the table of the ELF file open at fd (only read, never closed; the
 * caller opened it with the safe opener, size-capped). root and path as in
 * debug_file__find (core/debug_file.h): where its debug file is looked
 * for; path may be NULL (no debuglink lookup), root NULL or "" is the host.
 * lim NULL: unwind_default_limits. NULL + errno: EINVAL (not a usable ELF
 * file), ENOTSUP (machine), ENOENT (no CFI), E2BIG (over a bound), ENOMEM;
 * each refusal counted and logged once per file. */
struct unwind_table *unwind_table__build(int fd, const char *root, const char *path,
					 const struct unwind_limits *lim);
/* The layout alone (base, executable segments; the rest of *out zero) of
 * the ELF file open at fd, or of image when fd < 0: what a mapping's bias
 * needs (unwind_table__bias), read from the headers in microseconds. 0,
 * -EINVAL (not a usable ELF file) or -ENOTSUP (machine); nothing counted. */
int unwind_table__layout(int fd, const void *image, size_t size, const char *name,
			 struct unwind_table_info *out);
/* The same for an image in memory (no debug file); name for logs. */
struct unwind_table *unwind_table__build_mem(const void *image, size_t size, const char *name,
					     const struct unwind_limits *lim);

/* A table from its parts (the on-disk cache's reader), which it takes
 * over: rows and rules malloc'd (rules may be NULL when nrules is 0),
 * freed with the table, also when this fails (NULL, ENOMEM). Nothing is
 * checked or counted here: the caller has checked them (sorted rows, rule
 * indices below nrules, the last row INVALID). info's rows, rules and
 * bytes are set from the parts. */
struct unwind_table *unwind_table__adopt(struct kiln_unwind_row *rows, size_t nrows,
					 struct kiln_unwind_rule *rules, size_t nrules,
					 const struct unwind_table_info *info);
/* Whether a debug file with .debug_frame would be found now for the ELF
 * file at fd (root and path as in unwind_table__build): a table built when
 * none was (UNWIND_DEBUG_NOT_FOUND) is stale once one is. */
bool unwind_table__debug_file_found(int fd, const char *root, const char *path);

const struct kiln_unwind_row *unwind_table__rows(const struct unwind_table *t, size_t *n);
const struct kiln_unwind_rule *unwind_table__rules(const struct unwind_table *t, size_t *n);
/* The row that applies at ELF virtual address vaddr (the last row at or
 * below it), or NULL when vaddr is below the first row or at or past the
 * end of the table (the last row is always INVALID). */
const struct kiln_unwind_row *unwind_table__lookup(const struct unwind_table *t, uint64_t vaddr);
void unwind_table__info(const struct unwind_table *t, struct unwind_table_info *out);
/* For a mapping at start of the file info describes, from file offset
 * pgoff: *bias such that a pc in it has row offset pc - bias. -ENOENT when
 * pgoff is in no executable segment. */
int unwind_table__bias(const struct unwind_table_info *info, uint64_t start, uint64_t pgoff,
		       uint64_t *bias);
/* Text of a row's rule: "cfa=rsp+16 fp=c-16", "cfa=*(rbp-8) fp=f+0",
 * "STOP", "PLT/11", "SIGNAL", "FP", "INVALID". Returns buf. */
const char *unwind_table__describe(const struct unwind_table *t, const struct kiln_unwind_row *r,
				   char *buf, size_t len);
void unwind_table__free(struct unwind_table *t);

void unwind_table__stats(struct unwind_stats *out);

#endif
