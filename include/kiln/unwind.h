/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The unwind table format, shared by user/unwind/ (which builds it from an
 * ELF file's CFI and loads it into the BPF maps) and the BPF walker that
 * applies it: fixed-width kernel types only, no libc. docs/unwinding.md
 * describes it.
 *
 * A table is a sorted array of rows; a row applies from its pc_off up to
 * the next row's. pc_off is relative to the vaddr of the file's first
 * PT_LOAD segment, so a mapping's pc becomes pc - load bias - that vaddr.
 * A row's rule is either an index into a rule array or, with bit 15 set,
 * a command the walker carries out without a rule. */
#ifndef KILN_UNWIND_H
#define KILN_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct kiln_unwind_row {
	__u32 pc_off;
	__u16 rule;             /* rule index, or KILN_UNWIND_CMD | command */
	__u16 flags;            /* KILN_ROW_* */
};

/* Bit 15 of a row's rule: a command, not a rule index. */
#define KILN_UNWIND_CMD         0x8000u
enum kiln_unwind_cmd {
	KILN_CMD_INVALID = 0,   /* no usable CFI here: stop, mark the stack */
	KILN_CMD_STOP = 1,      /* the thread's root (RA undefined, _start, clone) */
	KILN_CMD_PLT = 2,       /* lazy .plt: CFA = rsp + 8, + 8 if (pc & 15) >= threshold */
	KILN_CMD_SIGNAL = 3,    /* rt_sigreturn trampoline: registers from the ucontext */
	KILN_CMD_FP = 4,        /* unwind by frame pointer */
	KILN_CMD_FP_SWITCH = 5, /* the same, where the chain leaves this stack for
				 * another (Go's systemstack: g0 -> goroutine) */
};

/* Row flags. The low 4 bits of a PLT row hold its threshold (11 or 10 in
 * the two x86-64 CFA expressions binutils writes). */
#define KILN_ROW_PLT_THRESHOLD  0x000fu
#define KILN_ROW_DEBUG_FRAME    0x0010u /* from .debug_frame of the file or its debug file */
#define KILN_ROW_SYNTHETIC      0x0020u /* no CFI: .plt.sec/.plt.got stub rule, gap */
#define KILN_ROW_GO             0x0040u /* from a Go binary's function table */

/* CFA base registers (x86-64 and arm64 names side by side). */
enum kiln_unwind_reg {
	KILN_REG_SP = 0,        /* rsp / sp */
	KILN_REG_FP = 1,        /* rbp / x29 */
};

/* How the caller's frame pointer (rbp / x29) is found. */
enum kiln_fp_rule {
	KILN_FP_UNCHANGED = 0,  /* same value (or not mentioned by the CFI) */
	KILN_FP_AT_CFA = 1,     /* saved at CFA + fp_off */
	KILN_FP_AT_FP = 2,      /* saved at fp + fp_off (stack realignment) */
};

/* How the return address is found. */
enum kiln_ra_rule {
	KILN_RA_AT_CFA = 0,     /* saved at CFA + ra_off (x86-64: always - 8) */
	KILN_RA_IN_LR = 1,      /* arm64, before the prologue saves it or in a
				 * leaf: still in x30, known only in the
				 * interrupted frame (the first, or a signal's) */
};

/* Rule flags. */
#define KILN_RULE_CFA_DEREF     0x01u   /* CFA = *(reg + cfa_off) (stack realignment) */

struct kiln_unwind_rule {
	__u8 cfa_reg;           /* enum kiln_unwind_reg */
	__u8 fp_rule;           /* enum kiln_fp_rule */
	__u8 ra_rule;           /* enum kiln_ra_rule */
	__u8 flags;             /* KILN_RULE_* */
	__s32 cfa_off;
	__s32 fp_off;
	__s32 ra_off;
};

/* The BPF maps the walker reads (bpf/sampler.bpf.c), filled by
 * user/unwind/unwinder.c.
 *
 * unwind_rows: ARRAY of struct kiln_unwind_row, every loaded table one
 *   contiguous range of it (the row budget, --unwind-memory).
 * unwind_rules: ARRAY of KILN_UNWIND_RULES struct kiln_unwind_rule, shared
 *   by every table (rules are deduplicated across files).
 * exe_tables: ARRAY of KILN_UNWIND_SLOTS struct kiln_exe_table.
 * proc_maps: HASH pid -> struct kiln_proc_maps, the executable mappings of
 *   every process whose stacks are walked with tables.
 * walk_progs: PROG_ARRAY the sampler fills: the walker and the
 *   interpreter walkers (KILN_PROG_PY + a kiln_interp_lang), which
 *   tail-call each other. */
enum { KILN_PROG_WALK = 0, KILN_PROG_PY = 1, KILN_PROG_RB = 2, KILN_PROG_COUNT = 3 };
#define KILN_UNWIND_RULES       16384u
#define KILN_UNWIND_SLOTS       8192u
#define KILN_PROC_MAPS_MAX      128u    /* executable mappings per process */
#define KILN_NO_TABLE           0xffffffffu

/* unwind_rows holds rows in 4 bytes, two to an element (slot i: element
 * i / 2, half i % 2). A packed row's off is its pc_off within its page
 * (the low KILN_ROW_PAGE_SHIFT bits: the page index below says which page
 * a search is in); its rule is the row's, a PLT row's threshold (flags &
 * KILN_ROW_PLT_THRESHOLD) in bits KILN_CMD_ARG_SHIFT.. of the command.
 * Twice the rows of 8-byte ones in the same kernel memory: one clang
 * process needs 2.2 M. */
struct kiln_packed_row {
	__u16 off;
	__u16 rule;
};
union kiln_row_pair {
	struct kiln_packed_row row[2];
	__u32 page[2];          /* page index entries */
};
/* unwind_rows is an array of chunks of KILN_ROWS_CHUNK elements (1 MiB;
 * one smaller chunk when --unwind-memory is below that): element e lies
 * in chunk e >> KILN_ROWS_CHUNK_SHIFT. */
#define KILN_ROWS_CHUNK_SHIFT   17u
#define KILN_ROWS_CHUNK         (1u << KILN_ROWS_CHUNK_SHIFT)
#define KILN_CMD_MASK           0x000fu
#define KILN_CMD_ARG_SHIFT      4

/* Rows in slots [first_row, first_row + nrows) of unwind_rows (first_row
 * even); nrows 0: unloaded. The table's page index follows from slot
 * first_row + nrows rounded up to even: npages entries, entry p holding
 * the index (from first_row) of the row that applies at offset p <<
 * KILN_ROW_PAGE_SHIFT (of the first row where none does), so a lookup
 * searches only the rows of one page: at most KILN_ROW_PAGE_ROWS, rows'
 * offsets being distinct. Every row after a page's first starts inside
 * the page, or (off 0) at the next page's first byte. Past the last page
 * the last row applies; before start_off (the first row's pc_off) none. */
struct kiln_exe_table {
	__u32 first_row;
	__u32 nrows;
	__u32 npages;
	__u32 start_off;
};
#define KILN_ROW_PAGE_SHIFT     12u
#define KILN_ROW_PAGE_MASK      ((1u << KILN_ROW_PAGE_SHIFT) - 1)
#define KILN_ROW_PAGE_ROWS      ((1u << KILN_ROW_PAGE_SHIFT) + 1)

struct kiln_exec_map {
	__u64 start, end;       /* [start, end) */
	__u64 bias;             /* a pc's row offset is pc - bias */
	__u32 slot;             /* exe_tables index; KILN_NO_TABLE: frame pointers */
	__u32 pad;
};

struct kiln_proc_maps {
	__u32 n;                /* maps[0, n) sorted by start, not overlapping */
	__u32 flags;            /* KILN_PROC_* */
	__u32 instance;         /* the process image these mappings are of */
	__u32 pad;
	/* Written by the walker (user space writes zeros): the process image
	 * (its exec count, its leader's start time) it found instance to be,
	 * so that image's next samples need not look the instance up. */
	__u64 seen_exec, seen_start;
	struct kiln_exec_map maps[KILN_PROC_MAPS_MAX];
};
/* Mappings were left out (more than KILN_PROC_MAPS_MAX): a pc in none of
 * maps may still be code, so the walker takes a frame-pointer step there. */
#define KILN_PROC_INCOMPLETE    0x1u
/* Set by the walker when it met a pc in no mapping and told user space
 * (KILN_EVENT_MAPS); user space clears it by rewriting the entry. */
#define KILN_PROC_MISS_SENT     0x2u
/* It maps a file named as an interpreter kiln walks (Python, Ruby): only
 * then does the walker look for its interpreter facts (py_procs,
 * rb_procs), two lookups every other sample is spared. */
#define KILN_PROC_INTERP        0x4u

/* Early walks: a process user space has not read yet (a compiler that
 * runs for 50 ms) is walked with the tables of its files all the same.
 * kiln_mmap gathers every process's executable file mappings as the
 * kernel makes them (early_maps: HASH, tgid -> struct kiln_early_maps,
 * deleted when the process exits; a mapping of a process past its room,
 * or past KILN_EARLY_MAPS, is counted and left out); file_tables (HASH,
 * filled by user space) gives the table of a file by the kernel's
 * identity of it (s_dev as the kernel encodes it, major << 20 | minor, the
 * inode number, size and mtime), and its executable PT_LOAD segments for
 * the bias, as unwind_table__bias reads them. */
#define KILN_EARLY_MAPS 16
struct kiln_file_key {
	__u64 dev, ino;
	__u64 size, mtime_ns;   /* an inode number is reused by later files */
};
struct kiln_early_map {
	__u64 start, end;       /* [start, end) */
	__u64 pgoff;            /* the file offset at start, bytes */
	struct kiln_file_key file;
};
struct kiln_early_maps {
	__u32 n;                /* maps[0, n), in no order; start = end: none */
	__u32 pad;
	__u64 exec_id;          /* the image they are of: its exec count, */
	__u64 start_time;       /* and the process's start */
	struct kiln_early_map maps[KILN_EARLY_MAPS];
};
#define KILN_FILE_SEGS 4
struct kiln_file_table {
	__u32 slot;
	__u32 nsegs;
	__u64 base;             /* vaddr of the first PT_LOAD */
	struct {
		__u64 offset, vaddr, filesz;
	} segs[KILN_FILE_SEGS];
};
/* An early walk reads the proc_maps entry of pid 0 (never a process
 * walked): no mappings, KILN_PROC_INCOMPLETE | KILN_PROC_MISS_SENT (a pc
 * in no early mapping gets a frame-pointer step, as in a process with
 * more mappings than proc_maps holds). */
#define KILN_PROC_MAPS_NONE     0u

/* Walker counters (struct kiln_counters). Those every walked sample
 * counts come first, in 64 bytes. */
enum kiln_unwind_stat {
	KILN_UW_WALKS = 0,      /* user stacks walked with tables */
	KILN_UW_PROC_MEMO,      /* samples whose process this CPU remembered */
	KILN_UW_MAP_MEMO,       /* frames whose mapping this CPU remembered */
	KILN_UW_ROW_MEMO,       /* frames whose row this CPU remembered */
	KILN_UW_FRAMES_TABLE,   /* frames unwound by a table row */
	KILN_UW_ROOT,           /* walks that reached the thread's root */
	KILN_UW_NO_PROC,        /* user stacks of processes without tables: frame pointers */
	KILN_UW_FRAMES_FP,      /* frames unwound by a frame-pointer step */
	KILN_UW_EARLY,          /* of KILN_UW_WALKS: early walks (early_maps) */
	KILN_UW_EARLY_NO_ROOM,  /* mappings left out: no room for their process */
	KILN_UW_EARLY_MAPS_LEFT,/* mappings left out: KILN_EARLY_MAPS kept */
	KILN_UW_TRUNCATED,      /* walks cut by the depth or tail-call budget */
	KILN_UW_ERR_NO_MAPPING, /* a pc in no known mapping */
	KILN_UW_ERR_BAD_FP,     /* frame-pointer step refused: fp not sane */
	KILN_UW_ERR_READ,       /* stack memory unreadable (not resident) */
	KILN_UW_ERR_BAD_CFA,    /* a rule gave a CFA at or below the stack pointer */
	KILN_UW_ERR_NO_ROW,     /* a table that covers no row at the pc */
	KILN_UW_ERR_LR,         /* arm64: a return address in x30 past the
				 * interrupted frame, where x30 is not known */
	KILN_UW_STAT_COUNT,
};

#endif
