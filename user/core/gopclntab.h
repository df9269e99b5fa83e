/* SPDX-License-Identifier: BSD-2-Clause */
/* Go's function table (.gopclntab), which every Go binary keeps, stripped
 * or not: function entries and names, and per function the pc-value tables
 * (stack-pointer delta, file, line). Read by unwind/ (rows for Go code
 * without CFI) and symbolize/ (names of stripped Go binaries).
 *
 * Layouts: Go 1.2-1.15, 1.16-1.17, 1.18-1.19 and 1.20 on, including the
 * releases that store a zero text start (Go 1.26: taken from the module
 * data). The table is hostile input: every offset, count and varint is
 * checked against the bytes present before use; a lying table yields
 * -EINVAL for the whole table or for one function, never a read outside
 * it. docs/unwinding.md ("Go") says what is built from it. */
#ifndef KILN_CORE_GOPCLNTAB_H
#define KILN_CORE_GOPCLNTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GOPCLNTAB_BYTES_MAX (96u << 20)     /* a table's bytes read into memory */
#define GOPCLNTAB_FUNCS_MAX (1u << 21)      /* functions in one table */
#define GOPCLNTAB_SCAN_MAX  (128u << 20)    /* segment bytes searched without headers */

enum gopclntab_version {
	GOPCLNTAB_1_2 = 0,      /* magic 0xfffffffb: Go 1.2 to 1.15 */
	GOPCLNTAB_1_16,         /* 0xfffffffa: 1.16, 1.17 */
	GOPCLNTAB_1_18,         /* 0xfffffff0: 1.18, 1.19 */
	GOPCLNTAB_1_20,         /* 0xfffffff1: 1.20 and later */
};

/* _func flags (Go 1.17 on; 0 before) */
#define GO_FUNC_TOPFRAME 0x1u   /* the bottom of a goroutine or thread stack */
#define GO_FUNC_SPWRITE  0x2u   /* writes SP other than by a fixed delta */
#define GO_FUNC_ASM      0x4u   /* written in assembly (Go 1.19 on) */

struct gopclntab {
	const uint8_t *data;
	size_t size;
	enum gopclntab_version version;
	uint32_t quantum;               /* instruction size unit: 1 on x86-64 */
	uint64_t nfunc;
	uint64_t text_start;            /* 1.18 on: entries are offsets from it */
	/* Offsets into data: names, compilation units, files, pc-value
	 * tables, function table (functab, then the _func records). */
	uint64_t funcnames, cutab, filetab, pctab, functab;
};

struct go_func {
	uint64_t entry, end;            /* [entry, end): virtual addresses */
	const char *name;               /* NUL-terminated inside the table */
	uint32_t pcsp, pcfile, pcln;    /* pc-value table offsets (0: none) */
	uint32_t cu;                    /* compilation unit's first cutab index */
	uint8_t flag;                   /* GO_FUNC_* */
	/* The record's pcdata and funcdata: offsets into the table of their
	 * arrays, and their lengths (0 when they lie outside it). */
	uint64_t pcdata, funcdata;
	uint32_t npcdata;
	uint8_t nfuncdata;
};

/* One entry of a function's inline tree: a call inlined into it. */
struct go_inlined {
	const char *name;               /* the inlined function, in the table */
	int32_t parent_pc;              /* offset from the entry of an instruction
					 * at the call site */
};

/* Where the table of an ELF file is, and its bytes. */
struct go_image {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;                 /* the table's virtual address */
	uint64_t text_start;            /* from the module data; 0 unknown */
	/* go:func.*, the base of funcdata offsets (1.18 on): from the module
	 * data or the symbol; 0 unknown */
	uint64_t gofunc;
	const char *found_by;           /* "section", "symbol" or "scan" */
	void *owned;                    /* malloc'd bytes (the scan), else NULL */
};

/* Finds and reads the table of the Go binary elf (open on fd, which is
 * only read; fd < 0: no scan): the .gopclntab or .data.rel.ro.gopclntab
 * section, else, in a Go binary (Go's build info or build id present),
 * the runtime.pclntab symbol's range, else a search of the read-only
 * segments for its header. name for logs. 0, -ENOENT (not Go,
 * or no table found), -E2BIG (over GOPCLNTAB_BYTES_MAX: counted as an ELF
 * refusal), -ENOMEM. The bytes stay valid until go_image__release and
 * elf_end. */
int go_image__read(Elf *elf, int fd, const char *name, struct go_image *out);
void go_image__release(struct go_image *img);
/* go_image__read, then gopclntab__open on its bytes: 0 with both filled
 * (release img after use), or -ENOENT (no table, or one that does not
 * open: counted as an ELF refusal), -E2BIG, -ENOMEM; img released. */
int go_image__open(Elf *elf, int fd, const char *name, struct go_image *img,
		   struct gopclntab *t);
/* Fills img->gofunc (Go 1.18 on) when neither .go.module nor the symbol
 * gave it: the module data searched for in the writable segments of the
 * file open on fd. Only the inline trees need it, so only their reader
 * pays for the search. */
void go_image__find_gofunc(Elf *elf, int fd, struct go_image *img, const struct gopclntab *t);

/* Checks the header of the table at data and fills t. text_start: the
 * module data's, used when a 1.18+ header stores 0. 0, or -EINVAL (not a
 * table of a 64-bit little-endian layout this reads, or a header whose
 * offsets fall outside size), -E2BIG (over GOPCLNTAB_FUNCS_MAX). */
int gopclntab__open(struct gopclntab *t, const void *data, size_t size, uint64_t text_start);
/* Function i (0 <= i < t->nfunc) into *f. -EINVAL when its entry, record
 * or name lies outside the table or its range is empty or out of order. */
int gopclntab__func(const struct gopclntab *t, uint64_t i, struct go_func *f);
/* Index of the function whose range holds pc, or -1. */
int64_t gopclntab__find(const struct gopclntab *t, uint64_t pc);

/* A pc-value table walk: each step yields the value that holds on
 * [start, end) of the function's code. */
struct go_pcvalue {
	const uint8_t *p, *end;
	uint64_t pc, func_end;
	int64_t value;
	uint32_t quantum;
	bool first;
};

/* Starts the walk of f's table at off (f->pcsp, f->pcfile or f->pcln).
 * false when the table has none there. */
bool gopclntab__pcvalue(const struct gopclntab *t, const struct go_func *f, uint32_t off,
			struct go_pcvalue *it);
/* 1: one more range; 0: the table's end; -EINVAL: a bad varint, a range
 * past the function's end, or a value out of the int32 range. */
int gopclntab__pcvalue_next(struct go_pcvalue *it, uint64_t *start, uint64_t *end,
			    int32_t *value);
/* The value at pc of f's table at off; false when it has none there. */
bool gopclntab__value_at(const struct gopclntab *t, const struct go_func *f, uint32_t off,
			 uint64_t pc, int32_t *value);
/* The source file of f's pc-file value (1.16 on, and 1.2-1.15), or NULL. */
const char *gopclntab__file(const struct gopclntab *t, const struct go_func *f, int32_t value);

/* Inlined calls (Go 1.12 on). */
#define GO_PCDATA_INLINE_INDEX 2        /* pc -> inline tree entry, -1 none */
/* funcdata index of the inline tree: 3 from 1.16 on; before, 2, 3 or 4
 * by release (1.12-1.15 share a layout), so each is tried */
#define GO_FUNCDATA_INLINE_TREE 3
#define GO_INLINE_MAX 4096              /* entries of one function's tree read */

/* The value at pc of f's pcdata table k; false when it has none there. */
bool gopclntab__pcdata_at(const struct gopclntab *t, const struct go_func *f, uint32_t k,
			  uint64_t pc, int32_t *value);
/* The funcdata indexes where this layout's inline trees may be, best
 * first, into slots[3]; returns how many. */
unsigned gopclntab__inline_slots(const struct gopclntab *t, uint8_t slots[3]);
/* Where f's inline tree lies if funcdata slot holds it (a virtual address;
 * gofunc: the image's, for 1.18 on), and how many entries its index table
 * names. false when f has none there. */
bool gopclntab__inline_tree(const struct gopclntab *t, const struct go_func *f, uint8_t slot,
			    uint64_t gofunc, uint64_t *vaddr, uint32_t *count);
/* Bytes of one entry of this layout's inline trees. */
size_t gopclntab__inline_entry_size(const struct gopclntab *t);
/* Decodes one entry's bytes, of a tree of count entries. -EINVAL when the
 * entry lies: a name outside the table, a parent outside the tree, padding
 * not zero. */
int gopclntab__inline_entry(const struct gopclntab *t, const uint8_t *bytes, uint32_t count,
			    struct go_inlined *out);
/* Reads len bytes at vaddr of the file open on fd (inside one PT_LOAD's
 * file bytes). 0, or -EINVAL (not there, or a short read). */
int go_image__read_at(Elf *elf, int fd, uint64_t vaddr, void *buf, size_t len);

#endif
