/* SPDX-License-Identifier: BSD-2-Clause */
/* Unwind tables from CFI, through libdw (unwind_table.h).
 *
 * DESIGN: libdw interprets the CFI; we only enumerate and classify. FDEs
 * are enumerated with dwarf_next_cfi over the raw .eh_frame (found by
 * section header, or through PT_GNU_EH_FRAME -> .eh_frame_hdr's
 * eh_frame_ptr when the section headers are gone) and over .debug_frame
 * (the file's own, else its separate debug file's, found by
 * core/debug_file). Decoding an FDE's initial location needs the CIE's
 * pointer encoding ('R' in the augmentation), a few lines below. Each FDE
 * range [start, end) is then walked row by row: dwarf_cfi_addrframe(pc)
 * gives the frame state at pc and, through dwarf_frame_info, the range
 * [s, e) over which it holds; the next pc is e. Every state is classified
 * into a rule the BPF walker applies (CFA = rsp/rbp + off, or *(reg + off)
 * for stack realignment; rbp unchanged, at CFA + off or at rbp + off; RA at
 * CFA - 8) or a command (STOP where the RA is undefined or at the entry
 * point's FDE, PLT for the lazy .plt expression, SIGNAL for 'S' CIEs);
 * anything else becomes INVALID, counted by reason.
 *
 * The ranges ("spans") of all sources are merged: .eh_frame wins, a
 * .debug_frame FDE is used only where no .eh_frame FDE overlaps it, and
 * .plt.sec / .plt.got stubs (no CFI: CFA = rsp + 8 throughout) and an
 * uncovered .plt fill what is left. Sorted spans become rows; equal
 * neighbours merge; a gap of more than GAP_MAX bytes gets an INVALID row
 * (smaller gaps are alignment padding, never executed), and so does the
 * end of the last span.
 *
 * Bounds (struct unwind_limits), checked before the work they guard: CFI
 * bytes read, a debug file's DWARF bytes (libdw loads and decompresses its
 * sections), FDEs, rows, rules, and the bytes of CFI libdw interprets (it
 * reruns an FDE from its start for every row, so a hostile FDE of many
 * tiny rows would be quadratic). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/debug_file.h"
#include "core/elf.h"
#include "core/gopclntab.h"
#include "core/log.h"
#include "core/safe_open.h"
#include "unwind/go_frames.h"
#include "unwind/unwind_table.h"

#define GAP_MAX        15      /* bytes between FDEs taken as padding */
#define SHSTRTAB_MAX   (1u << 20)
#define EH_HDR_MAX     (64u << 20)
#define DYNAMIC_MAX    (64u << 10)
#define ENTRY_STOP_MAX 256     /* bytes of STOP at an entry point without CFI */

/* The registers the walker knows, by DWARF number, per machine: the stack
 * pointer, the frame pointer and the return address column (arm64: the
 * link register x30). */
struct cfi_arch {
	uint16_t machine;
	unsigned sp, fp, ra;
	const char *sp_name, *fp_name;
};

#define X86_RBP 6
#define X86_RSP 7
#define X86_RA  16

static const struct cfi_arch cfi_archs[] = {
	{ EM_X86_64, X86_RSP, X86_RBP, X86_RA, "rsp", "rbp" },
	{ EM_AARCH64, 31, 29, 30, "sp", "x29" },
};

static const struct cfi_arch *arch_of(uint16_t machine)
{
	for (size_t i = 0; i < sizeof(cfi_archs) / sizeof(cfi_archs[0]); i++)
		if (cfi_archs[i].machine == machine)
			return &cfi_archs[i];
	return NULL;
}

/* A rule with the return address where x86-64 keeps it, the caller's
 * stack pointer (CFA) - 8. */
#define RA_AT_CFA_M8 .ra_rule = KILN_RA_AT_CFA, .ra_off = -8

const struct unwind_limits unwind_default_limits = {
	.max_cfi_bytes = UNWIND_CFI_BYTES_MAX,
	.max_debug_bytes = UNWIND_DEBUG_BYTES_MAX,
	.max_work = UNWIND_WORK_MAX,
	.max_fdes = UNWIND_FDES_MAX,
	.max_rows = UNWIND_ROWS_MAX,
	.max_rules = UNWIND_RULES_MAX,
};

const char *const unwind_refusal_names[UNWIND_REFUSAL_COUNT] = {
	[UNWIND_REFUSED_NOT_ELF] = "not_elf",
	[UNWIND_REFUSED_ARCH] = "arch",
	[UNWIND_REFUSED_NO_CFI] = "no_cfi",
	[UNWIND_REFUSED_CFI_BYTES] = "cfi_bytes",
	[UNWIND_REFUSED_FDES] = "fdes",
	[UNWIND_REFUSED_ROWS] = "rows",
	[UNWIND_REFUSED_RULES] = "rules",
	[UNWIND_REFUSED_WORK] = "work",
	[UNWIND_REFUSED_DEBUG_FILE] = "debug_file",
};

const char *const unwind_unsupported_names[UNWIND_UNSUP_COUNT] = {
	[UNWIND_UNSUP_CFA_REG] = "cfa_register",
	[UNWIND_UNSUP_CFA_EXPR] = "cfa_expression",
	[UNWIND_UNSUP_CFA_RANGE] = "offset_range",
	[UNWIND_UNSUP_FP_RULE] = "fp_rule",
	[UNWIND_UNSUP_RA_RULE] = "ra_rule",
	[UNWIND_UNSUP_CFI_ERROR] = "cfi_error",
	[UNWIND_UNSUP_RANGE] = "fde_range",
};

static struct {
	_Atomic uint64_t built, rows, bytes, build_ns;
	_Atomic uint64_t refused[UNWIND_REFUSAL_COUNT];
	_Atomic uint64_t unsupported[UNWIND_UNSUP_COUNT];
} stats;

struct unwind_table {
	struct kiln_unwind_row *rows;
	struct kiln_unwind_rule *rules;
	size_t nrows, nrules;
	struct unwind_table_info info;
};

/* A range with one rule, [start, end) as offsets from the first PT_LOAD
 * (a row's pc_off; every source is checked to lie within 4 GiB of it);
 * fde groups the spans of one FDE. 16 bytes: libclang-cpp has 900 000. */
struct span {
	uint32_t start, end;
	uint32_t fde;
	uint16_t rule, flags;
};

struct builder {
	const struct unwind_limits *lim;
	const struct cfi_arch *arch;
	const char *name;
	Elf *elf;
	const unsigned char *ident;
	uint64_t base;                  /* first PT_LOAD vaddr */
	uint64_t entry;                 /* e_entry, 0 when not an executable */
	struct span *spans;
	size_t nspans, capspans;
	uint32_t nfdes;                 /* FDE ids handed out, all sources */
	size_t eh_end;                  /* spans [0, eh_end) came from .eh_frame */
	struct kiln_unwind_rule *rules;
	size_t nrules;
	uint16_t *hash;                 /* open addressing: rule index + 1, 0 free */
	size_t hash_size;
	struct unwind_table_info *info;
	enum unwind_refusal refusal;    /* valid when a step returned -E2BIG */
	/* Section-derived ranges (vaddr), 0/0 when absent. */
	uint64_t plt[2], plt_sec[2], plt_got[2];
	Elf_Scn *eh_frame, *eh_frame_hdr, *debug_frame, *debuglink;
	/* The debug file, when one was opened. */
	Elf *dbg_elf;
	int dbg_fd;
};

static void refuse(struct builder *b, enum unwind_refusal r, const char *detail)
{
	atomic_fetch_add_explicit(&stats.refused[r], 1, memory_order_relaxed);
	safe_open__log_refusal(b->name, unwind_refusal_names[r], detail);
	b->refusal = r;
}

static void unsupported(struct builder *b, enum unwind_unsupported u)
{
	b->info->unsupported[u]++;
}

/* --- rules --------------------------------------------------------------- */

static uint32_t rule_hash(const struct kiln_unwind_rule *r)
{
	uint32_t h = 2166136261u;
	const unsigned char *p = (const unsigned char *)r;

	for (size_t i = 0; i < sizeof(*r); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* The index of rule r, added when new. 0.. or -E2BIG (max_rules). */
static int rule_index(struct builder *b, const struct kiln_unwind_rule *r)
{
	size_t mask = b->hash_size - 1, i = rule_hash(r) & mask;

	for (;; i = (i + 1) & mask) {
		uint16_t slot = b->hash[i];

		if (!slot)
			break;
		if (memcmp(&b->rules[slot - 1], r, sizeof(*r)) == 0)
			return slot - 1;
	}
	if (b->nrules >= b->lim->max_rules) {
		refuse(b, UNWIND_REFUSED_RULES, "more distinct rules than the bound");
		return -E2BIG;
	}
	b->rules[b->nrules] = *r;
	b->hash[i] = (uint16_t)(b->nrules + 1);
	return (int)b->nrules++;
}

static bool fits_s32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static bool breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	return false;
}

/* binutils' lazy-PLT CFA: rsp + 8 + ((((rip & 15) >= N)) << 3). */
static int plt_threshold(const Dwarf_Op *ops, size_t n)
{
	unsigned reg;
	int64_t off;

	if (n != 9 || !breg(&ops[0], &reg, &off) || reg != X86_RSP || off != 8 ||
	    !breg(&ops[1], &reg, &off) || reg != X86_RA || off != 0 ||
	    ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and ||
	    ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 || ops[5].atom != DW_OP_ge ||
	    ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
		return -1;
	return ops[4].atom - DW_OP_lit0;
}

/* Where a register is saved, from libdw's expression for it: at CFA + off
 * (true), else false. */
static bool at_cfa(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n < 1 || n > 2 || ops[0].atom != DW_OP_call_frame_cfa ||
	    (n == 2 && ops[1].atom != DW_OP_plus_uconst))
		return false;
	*off = n == 1 ? 0 : (int64_t)ops[1].number;
	return true;
}

/* Rule (or command) of one frame state; flags may get the PLT threshold.
 * -E2BIG when the rule table is full. */
static int classify(struct builder *b, Dwarf_Frame *frame, bool signal, uint16_t *flags)
{
	const struct cfi_arch *a = b->arch;
	struct kiln_unwind_rule r = { .ra_rule = KILN_RA_AT_CFA };
	Dwarf_Op mem[3], *ops;
	size_t n;
	unsigned reg;
	int64_t off;
	int thr;

	if (signal)
		return KILN_UNWIND_CMD | KILN_CMD_SIGNAL;
	/* The return address: undefined marks the thread's root; arm64 keeps
	 * it in x30 ("same value") until the prologue saves it. */
	if (dwarf_frame_register(frame, a->ra, mem, &ops, &n) != 0)
		goto cfi_error;
	if (n == 0 && ops == mem)
		return KILN_UNWIND_CMD | KILN_CMD_STOP;
	if (n == 0 && a->machine == EM_AARCH64) {
		r.ra_rule = KILN_RA_IN_LR;
	} else if (at_cfa(ops, n, &off) && fits_s32(off) &&
		   (a->machine != EM_X86_64 || off == -8)) {
		r.ra_off = (int32_t)off;
	} else {
		unsupported(b, UNWIND_UNSUP_RA_RULE);
		return KILN_UNWIND_CMD | KILN_CMD_INVALID;
	}
	/* The CFA. */
	if (dwarf_frame_cfa(frame, &ops, &n) != 0)
		goto cfi_error;
	if (n == 1 && breg(&ops[0], &reg, &off)) {
		if (reg != a->sp && reg != a->fp) {
			unsupported(b, UNWIND_UNSUP_CFA_REG);
			return KILN_UNWIND_CMD | KILN_CMD_INVALID;
		}
	} else if (n == 2 && breg(&ops[0], &reg, &off) && ops[1].atom == DW_OP_deref &&
		   (reg == a->sp || reg == a->fp)) {
		r.flags |= KILN_RULE_CFA_DEREF;  /* gcc's stack realignment */
	} else if (a->machine == EM_X86_64 && (thr = plt_threshold(ops, n)) >= 0) {
		*flags |= (uint16_t)thr;
		return KILN_UNWIND_CMD | KILN_CMD_PLT;
	} else {
		unsupported(b, n ? UNWIND_UNSUP_CFA_EXPR : UNWIND_UNSUP_CFI_ERROR);
		return KILN_UNWIND_CMD | KILN_CMD_INVALID;
	}
	if (!fits_s32(off)) {
		unsupported(b, UNWIND_UNSUP_CFA_RANGE);
		return KILN_UNWIND_CMD | KILN_CMD_INVALID;
	}
	r.cfa_reg = reg == a->sp ? KILN_REG_SP : KILN_REG_FP;
	r.cfa_off = (int32_t)off;
	/* The frame pointer: same value (or never mentioned, libdw's default)
	 * and undefined both leave the register as it is. */
	if (dwarf_frame_register(frame, a->fp, mem, &ops, &n) != 0)
		goto cfi_error;
	if (n == 0) {
		r.fp_rule = KILN_FP_UNCHANGED;
	} else if (at_cfa(ops, n, &off)) {
		r.fp_rule = KILN_FP_AT_CFA;
	} else if ((n == 1 && breg(&ops[0], &reg, &off) && reg == a->fp) ||
		   (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		    breg(&ops[1], &reg, &off) && reg == a->fp)) {
		r.fp_rule = KILN_FP_AT_FP;   /* DW_CFA_expression: rbp + off */
	} else {
		unsupported(b, UNWIND_UNSUP_FP_RULE);
		return KILN_UNWIND_CMD | KILN_CMD_INVALID;
	}
	if (r.fp_rule != KILN_FP_UNCHANGED) {
		if (!fits_s32(off)) {
			unsupported(b, UNWIND_UNSUP_CFA_RANGE);
			return KILN_UNWIND_CMD | KILN_CMD_INVALID;
		}
		r.fp_off = (int32_t)off;
	}
	return rule_index(b, &r);
cfi_error:
	unsupported(b, UNWIND_UNSUP_CFI_ERROR);
	return KILN_UNWIND_CMD | KILN_CMD_INVALID;
}

/* --- spans ------------------------------------------------------------- */

static int push_span(struct builder *b, uint64_t start, uint64_t end, uint32_t fde,
		     int rule, uint16_t flags)
{
	if (start < b->base || end < start || end - b->base > UINT32_MAX) {
		unsupported(b, UNWIND_UNSUP_RANGE);
		return 0;
	}
	if (b->nspans == b->capspans) {
		size_t cap = b->capspans ? 2 * b->capspans : 1024;
		struct span *s;

		/* Spans become rows: more than max_rows of them never fit. */
		if (b->nspans >= b->lim->max_rows) {
			refuse(b, UNWIND_REFUSED_ROWS, "more rows than the bound");
			return -E2BIG;
		}
		if (cap > (size_t)b->lim->max_rows + 1)
			cap = (size_t)b->lim->max_rows + 1;
		s = realloc(b->spans, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		b->spans = s;
		b->capspans = cap;
	}
	b->spans[b->nspans++] = (struct span){ .start = (uint32_t)(start - b->base),
					       .end = (uint32_t)(end - b->base), .fde = fde,
					       .rule = (uint16_t)rule, .flags = flags };
	return 0;
}

/* A span's bounds as addresses. */
static uint64_t span_start(const struct builder *b, const struct span *s)
{
	return b->base + s->start;
}

static uint64_t span_end(const struct builder *b, const struct span *s)
{
	return b->base + s->end;
}

/* Walks one FDE's range row by row through libdw. */
static int walk_fde(struct builder *b, Dwarf_CFI *cfi, uint64_t start, uint64_t end,
		    size_t fde_bytes, uint16_t src_flags)
{
	uint32_t id = b->nfdes++;
	uint64_t pc = start;
	int err;

	if (start < b->base || end - b->base > UINT32_MAX) {
		unsupported(b, UNWIND_UNSUP_RANGE);
		return 0;
	}
	while (pc < end) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr s, e;
		uint16_t flags = src_flags;
		bool signal = false;
		int rule;

		b->info->work += fde_bytes;
		if (b->info->work > b->lim->max_work) {
			refuse(b, UNWIND_REFUSED_WORK, "CFI interpretation over the bound");
			return -E2BIG;
		}
		if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0 ||
		    dwarf_frame_info(frame, &s, &e, &signal) < 0 || e <= pc || s > pc) {
			free(frame);
			unsupported(b, UNWIND_UNSUP_CFI_ERROR);
			return push_span(b, pc, end, id, KILN_UNWIND_CMD | KILN_CMD_INVALID,
					 src_flags);
		}
		rule = classify(b, frame, signal, &flags);
		free(frame);
		if (rule < 0)
			return rule;
		if (e > end)
			e = end;
		err = push_span(b, pc, e, id, rule, flags);
		if (err)
			return err;
		pc = e;
	}
	return 0;
}

/* --- FDE enumeration ---------------------------------------------------- */

/* Reads a pointer of encoding enc at *p (< end); field: its vaddr, for
 * pcrel. Only the forms initial locations and ranges use. 0 or -EINVAL. */
static int read_encoded(uint8_t enc, const uint8_t **p, const uint8_t *end, uint64_t field,
			uint64_t datarel, bool is64, uint64_t *out)
{
	uint64_t v = 0;
	size_t n;
	bool sign = false;

	if (enc == DW_EH_PE_omit)
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: n = is64 ? 8 : 4; break;
	case DW_EH_PE_udata2: n = 2; break;
	case DW_EH_PE_udata4: n = 4; break;
	case DW_EH_PE_udata8: n = 8; break;
	case DW_EH_PE_sdata2: n = 2; sign = true; break;
	case DW_EH_PE_sdata4: n = 4; sign = true; break;
	case DW_EH_PE_sdata8: n = 8; sign = true; break;
	default: return -EINVAL;        /* uleb128 forms: not seen in FDE headers */
	}
	if ((size_t)(end - *p) < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)  /* little-endian: x86-64 only */
		v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n);
	*p += n;
	switch (enc & 0x70) {
	case 0: break;
	case DW_EH_PE_pcrel: v += field; break;
	case DW_EH_PE_datarel: v += datarel; break;
	default: return -EINVAL;
	}
	*out = v;
	return 0;
}

/* The FDE pointer encoding of a CIE: 'R' of a "z..." augmentation. */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *a = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d ? d + cie->augmentation_data_size : NULL;

	if (!a || a[0] != 'z' || !d)
		return DW_EH_PE_absptr;
	for (a++; *a && d < end; a++) {
		switch (*a) {
		case 'R':
			return *d;
		case 'L':
			d++;
			break;
		case 'P': {
			uint8_t penc = *d++;
			uint64_t ignored;

			if (read_encoded(penc & 0x7f, &d, end, 0, 0, true, &ignored) != 0)
				return DW_EH_PE_omit;
			break;
		}
		case 'S': case 'B': case 'G':
			break;
		default:
			return DW_EH_PE_omit;
		}
	}
	return DW_EH_PE_absptr;
}

/* Every FDE of one CFI section. data: the raw section; vaddr: where it is
 * loaded (pcrel base; 0 for .debug_frame); eh: .eh_frame rules. */
static int walk_section(struct builder *b, Dwarf_CFI *cfi, Elf_Data *data, uint64_t vaddr,
			bool eh, uint16_t src_flags)
{
	/* Encodings of the CIEs met so far, by offset (CIEs come before their
	 * FDEs in practice; an unknown one is looked up on the spot). */
	bool is64 = b->ident[EI_CLASS] == ELFCLASS64;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry entry;
	int ret, err;

	for (; off != (Dwarf_Off)-1; off = next) {
		const uint8_t *p, *end;
		Dwarf_CFI_Entry cie;
		uint64_t start, len;
		uint8_t enc;

		ret = dwarf_next_cfi(b->ident, data, eh, off, &next, &entry);
		if (ret == 1)
			break;
		if (ret < 0) {
			if (next <= off || next == (Dwarf_Off)-1)
				break;
			continue;
		}
		if (dwarf_cfi_cie_p(&entry))
			continue;
		if ((eh ? b->info->fdes_eh : b->info->fdes_debug) + 1 > b->lim->max_fdes ||
		    b->info->fdes_eh + b->info->fdes_debug + 1 > b->lim->max_fdes) {
			refuse(b, UNWIND_REFUSED_FDES, "more FDEs than the bound");
			return -E2BIG;
		}
		if (dwarf_next_cfi(b->ident, data, eh, entry.fde.CIE_pointer, &(Dwarf_Off){ 0 },
				   &cie) != 0 || !dwarf_cfi_cie_p(&cie))
			continue;
		enc = eh ? cie_fde_encoding(&cie.cie) : DW_EH_PE_absptr;
		p = entry.fde.start;
		end = entry.fde.end;
		if (read_encoded(enc, &p, end,
				 vaddr + (uint64_t)(p - (const uint8_t *)data->d_buf), 0, is64,
				 &start) != 0 ||
		    read_encoded(enc & 0x0f, &p, end, 0, 0, is64, &len) != 0 || len == 0 ||
		    start + len < start)
			continue;
		if (eh)
			b->info->fdes_eh++;
		else
			b->info->fdes_debug++;
		/* .debug_frame: only where .eh_frame said nothing. */
		if (!eh && b->eh_end) {
			bool overlap = false;

			for (size_t lo = 0, hi = b->eh_end; lo < hi;) {
				size_t mid = lo + (hi - lo) / 2;

				if (span_end(b, &b->spans[mid]) <= start) {
					lo = mid + 1;
				} else {
					overlap = span_start(b, &b->spans[mid]) < start + len;
					break;
				}
			}
			if (overlap)
				continue;
		}
		err = walk_fde(b, cfi, start, start + len,
			       (size_t)(entry.fde.end - entry.fde.start), src_flags);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_span(const void *x, const void *y)
{
	const struct span *a = x, *c = y;

	if (a->start != c->start)
		return a->start < c->start ? -1 : 1;
	return a->end < c->end ? -1 : a->end > c->end;
}

/* cmp_span, ties by FDE id: spans are pushed in the order of their ids,
 * and one id's spans never start at the same pc, so this orders them as a
 * stable sort by cmp_span would. */
static bool span_before(const struct span *a, const struct span *c)
{
	int r = cmp_span(a, c);

	return r ? r < 0 : a->fde < c->fde;
}

static void sift_down(struct span *sp, size_t i, size_t n)
{
	for (;;) {
		size_t big = i, l = 2 * i + 1, r = l + 1;
		struct span tmp;

		if (l < n && span_before(&sp[big], &sp[l]))
			big = l;
		if (r < n && span_before(&sp[big], &sp[r]))
			big = r;
		if (big == i)
			return;
		tmp = sp[i];
		sp[i] = sp[big];
		sp[big] = tmp;
		i = big;
	}
}

/* By start address, as a stable sort would order them (span_before).
 * Spans mostly come in order (an FDE's rows are, and linkers lay out most
 * FDEs as the code: libLLVM's 861 000 spans have 594 descents), and then
 * nothing is done. Else a heap sort in place: no memory beside the spans
 * (an index sort's indices and qsort's copy of them were 7 MB for
 * libclang-cpp, at the build's peak), O(n log n) whatever the input. */
static void sort_spans(struct builder *b)
{
	struct span *sp = b->spans, tmp;
	size_t i = 1, n = b->nspans;

	while (i < n && !span_before(&sp[i], &sp[i - 1]))
		i++;
	if (i >= n)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(sp, i, n);
	for (i = n; i-- > 1;) {
		tmp = sp[0];
		sp[0] = sp[i];
		sp[i] = tmp;
		sift_down(sp, 0, i);
	}
}

/* .eh_frame's data and vaddr: the section, or PT_GNU_EH_FRAME's
 * eh_frame_ptr up to the end of its PT_LOAD (dwarf_next_cfi stops at the
 * zero terminator). NULL when there is none, or when the section is over
 * max_cfi_bytes (*too_big, checked before libelf reads it). */
static Elf_Data *eh_frame_data(struct builder *b, uint64_t *vaddr, bool *too_big)
{
	size_t phnum = 0;
	GElf_Shdr sh;

	/* (the type libdw takes too: dwarf_getcfi_elf then shares this read
	 * of the section, not a second copy of its megabytes) */
	if (b->eh_frame && gelf_getshdr(b->eh_frame, &sh) &&
	    (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND)) {
		*too_big = sh.sh_size > b->lim->max_cfi_bytes;
		if (*too_big)
			return NULL;
		*vaddr = sh.sh_addr;
		return elf_rawdata(b->eh_frame, NULL);
	}
	if (elf_getphdrnum(b->elf, &phnum) != 0)
		return NULL;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph, lp;
		Elf_Data *hdr;
		const uint8_t *p, *end;
		uint64_t eh;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME ||
		    ph.p_filesz < 8 || ph.p_filesz > EH_HDR_MAX)
			continue;
		hdr = elf_getdata_rawchunk(b->elf, (int64_t)ph.p_offset, 8, ELF_T_BYTE);
		if (!hdr || hdr->d_size < 8)
			return NULL;
		p = hdr->d_buf;
		end = p + hdr->d_size;
		if (p[0] != 1)
			return NULL;
		p += 4;
		if (read_encoded(((const uint8_t *)hdr->d_buf)[1], &p, end, ph.p_vaddr + 4,
				 ph.p_vaddr, true, &eh) != 0)
			return NULL;
		for (size_t j = 0; j < phnum; j++) {
			uint64_t size;

			if (!gelf_getphdr(b->elf, (int)j, &lp) || lp.p_type != PT_LOAD ||
			    eh < lp.p_vaddr || eh - lp.p_vaddr >= lp.p_filesz)
				continue;
			size = lp.p_filesz - (eh - lp.p_vaddr);
			if (size > b->lim->max_cfi_bytes)
				size = b->lim->max_cfi_bytes;
			*vaddr = eh;
			return elf_getdata_rawchunk(b->elf,
						    (int64_t)(lp.p_offset + (eh - lp.p_vaddr)),
						    size, ELF_T_BYTE);
		}
		return NULL;
	}
	return NULL;
}

/* Section names we use; the section-name table is bounded first. */
static int scan_sections(struct builder *b)
{
	size_t shnum = 0, shstrndx;
	Elf_Scn *names;
	GElf_Shdr nsh;

	if (elf_getshdrnum(b->elf, &shnum) != 0 || shnum == 0 ||
	    elf_getshdrstrndx(b->elf, &shstrndx) != 0)
		return 0;               /* no section headers: PT_GNU_EH_FRAME */
	names = elf_getscn(b->elf, shstrndx);
	if (!names || !gelf_getshdr(names, &nsh) || nsh.sh_size > SHSTRTAB_MAX)
		return 0;
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(b->elf, i);
		const char *name;
		uint64_t *range = NULL;
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(b->elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (strcmp(name, ".eh_frame") == 0)
			b->eh_frame = scn;
		else if (strcmp(name, ".eh_frame_hdr") == 0)
			b->eh_frame_hdr = scn;
		else if (strcmp(name, ".debug_frame") == 0)
			b->debug_frame = scn;
		else if (strcmp(name, ".gnu_debuglink") == 0)
			b->debuglink = scn;
		else if (strcmp(name, ".plt") == 0)
			range = b->plt;
		else if (strcmp(name, ".plt.sec") == 0)
			range = b->plt_sec;
		else if (strcmp(name, ".plt.got") == 0)
			range = b->plt_got;
		if (range && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_addr + sh.sh_size > sh.sh_addr) {
			range[0] = sh.sh_addr;
			range[1] = sh.sh_addr + sh.sh_size;
		}
	}
	return 0;
}

/* The .debug_frame section of elf, or NULL. */
static Elf_Scn *find_debug_frame(Elf *elf)
{
	size_t shnum = 0, shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrnum(elf, &shnum) != 0 || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || sh.sh_size == 0)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".debug_frame") == 0)
			return scn;
	}
	return NULL;
}

/* Bytes of DWARF libdw would load from elf (decompressed sizes). */
static uint64_t debug_bytes(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t total = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return UINT64_MAX;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;
		const char *name;
		uint64_t size;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strncmp(name, ".debug_", 7) != 0 && strncmp(name, ".zdebug_", 8) != 0))
			continue;
		size = sh.sh_size;
		if (sh.sh_flags & SHF_COMPRESSED)
			size = gelf_getchdr(scn, &ch) ? ch.ch_size : UINT64_MAX;
		else if (name[1] == 'z')
			size = UINT64_MAX;      /* old GNU compression: size unknown up front */
		if (size > UINT64_MAX - total)
			return UINT64_MAX;
		total += size;
	}
	return total;
}

/* .debug_frame of elf through libdw, walked. dwarf_getcfi needs a Dwarf,
 * and dwarf_begin_elf loads (and decompresses) every DWARF section, so the
 * file's DWARF bytes are bounded first. 0, -ENOENT (none) or -E2BIG. */
static int walk_debug_frame(struct builder *b, Elf *elf, const char *what)
{
	Elf_Scn *scn = find_debug_frame(elf);
	uint64_t dbytes;
	Dwarf_CFI *cfi;
	Elf_Data *data;
	Dwarf *dw;
	int err;

	if (!scn)
		return -ENOENT;
	dbytes = debug_bytes(elf);
	if (dbytes > b->lim->max_debug_bytes) {
		refuse(b, UNWIND_REFUSED_DEBUG_FILE, "DWARF sections over the bound: skipped");
		return -ENOENT;
	}
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return -ENOENT;
	cfi = dwarf_getcfi(dw);
	data = cfi ? elf_getdata(scn, NULL) : NULL;   /* decompressed by libdw */
	err = -ENOENT;
	if (data && data->d_buf) {
		if (b->info->cfi_bytes + data->d_size > b->lim->max_cfi_bytes) {
			refuse(b, UNWIND_REFUSED_CFI_BYTES, ".debug_frame over the bound");
			err = -E2BIG;
		} else {
			b->info->cfi_bytes += data->d_size;
			pr_debug("unwind '%s': .debug_frame of %s, %zu bytes", b->name, what,
				 data->d_size);
			err = walk_section(b, cfi, data, 0, false, KILN_ROW_DEBUG_FRAME);
		}
	}
	dwarf_end(dw);
	return err;
}

static bool accept_debug_file(Elf *elf, int fd, const char *file, void *ctx)
{
	struct builder *b = ctx;

	if (!find_debug_frame(elf)) {
		elf_end(elf);
		close(fd);
		return false;
	}
	b->dbg_elf = elf;
	b->dbg_fd = fd;
	return true;
}

/* --- Go ----------------------------------------------------------------- */

/* Whether a span from .eh_frame (spans [0, eh_end), sorted) overlaps
 * [start, end). */
static bool eh_covers(const struct builder *b, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = b->eh_end;

	while (lo < hi) {       /* the first span starting at or after end */
		size_t mid = lo + (hi - lo) / 2;

		if (span_start(b, &b->spans[mid]) < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && span_end(b, &b->spans[lo - 1]) > start;
}

struct go_push {
	struct builder *b;
	int fd;
	uint32_t fde;
};

static int push_go_span(void *ctx, const struct go_span *s)
{
	struct go_push *g = ctx;
	struct builder *b = g->b;
	struct kiln_unwind_rule r = { .cfa_reg = KILN_REG_SP, .cfa_off = s->cfa_off,
				      RA_AT_CFA_M8 };
	uint64_t start = s->start;
	int rule;

	switch (s->kind) {
	case GO_SPAN_FP: rule = KILN_UNWIND_CMD | KILN_CMD_FP; break;
	case GO_SPAN_FP_SWITCH: rule = KILN_UNWIND_CMD | KILN_CMD_FP_SWITCH; break;
	case GO_SPAN_STOP: rule = KILN_UNWIND_CMD | KILN_CMD_STOP; break;
	case GO_SPAN_SIGNAL:
		rule = KILN_UNWIND_CMD | KILN_CMD_SIGNAL;
		/* The handler "returns" to the trampoline's first byte, and a
		 * return address is looked up at pc - 1: the byte before it
		 * (padding of the function before) belongs to it too. */
		if (b->nspans && span_end(b, &b->spans[b->nspans - 1]) == start &&
		    b->spans[b->nspans - 1].end - b->spans[b->nspans - 1].start > 1) {
			b->spans[b->nspans - 1].end--;
			start--;
		}
		break;
	default:
		if (s->fp_at_cfa_m16) {
			r.fp_rule = KILN_FP_AT_CFA;
			r.fp_off = -16;
		}
		rule = rule_index(b, &r);
		if (rule < 0)
			return rule;
	}
	return push_span(b, start, s->end, g->fde, rule, KILN_ROW_GO);
}

/* Code bytes through the executable segments' file offsets. */
static bool read_go_code(void *ctx, uint64_t vaddr, uint8_t *buf, size_t len)
{
	struct go_push *g = ctx;
	const struct unwind_table_info *in = g->b->info;

	for (size_t i = 0; g->fd >= 0 && i < in->nsegs; i++)
		if (vaddr >= in->segs[i].vaddr && vaddr - in->segs[i].vaddr <= in->segs[i].filesz &&
		    len <= in->segs[i].filesz - (vaddr - in->segs[i].vaddr))
			return pread(g->fd, buf, len, (off_t)(in->segs[i].offset + vaddr -
							      in->segs[i].vaddr)) == (ssize_t)len;
	return false;
}

/* Spans for the Go functions (go_frames.h) that no .eh_frame FDE covers.
 * -ENOENT when the file has no readable Go function table. */
static int walk_go(struct builder *b, int fd)
{
	struct go_push g = { .b = b, .fd = fd };
	struct go_frames_io io = { .emit = push_go_span, .read_code = read_go_code, .ctx = &g };
	struct go_image img;
	struct gopclntab t;
	int err = go_image__open(b->elf, fd, b->name, &img, &t);

	if (err)
		return err == -ENOMEM ? err : -ENOENT;  /* over its bound: counted */
	for (uint64_t i = 0; i < t.nfunc && !err; i++) {
		struct go_func f;

		if (gopclntab__func(&t, i, &f) || f.entry < b->base ||
		    f.end - b->base > UINT32_MAX || eh_covers(b, f.entry, f.end))
			continue;
		g.fde = b->nfdes++;
		err = go_frames__spans(&t, &f, &io);
		b->info->go_funcs++;
	}
	b->info->go_source = img.found_by;
	go_image__release(&img);
	return err;
}

/* --- rows ---------------------------------------------------------------- */

static int synth(struct builder *b, const uint64_t range[2], int rule, uint16_t flags)
{
	uint64_t pc = range[0];

	if (range[1] <= range[0] || range[0] < b->base || range[1] - b->base > UINT32_MAX)
		return 0;
	/* Only the parts no CFI covers (spans are sorted here). */
	for (size_t i = 0, n = b->nspans; i < n && pc < range[1]; i++) {
		const struct span *s = &b->spans[i];
		int err;

		if (span_end(b, s) <= pc || span_start(b, s) >= range[1])
			continue;
		if (span_start(b, s) > pc) {
			err = push_span(b, pc, span_start(b, s), b->nfdes, rule, flags);
			if (err)
				return err;
		}
		pc = span_end(b, s);
	}
	if (pc < range[1])
		return push_span(b, pc, range[1], b->nfdes++, rule, flags);
	b->nfdes++;
	return 0;
}

static int add_row(struct builder *b, struct kiln_unwind_row *rows, size_t *n, uint64_t pc,
		   uint16_t rule, uint16_t flags)
{
	if (*n && rows[*n - 1].rule == rule && rows[*n - 1].flags == flags)
		return 0;       /* equal neighbours merge */
	if (*n && rows[*n - 1].pc_off == (uint32_t)(pc - b->base)) {
		rows[*n - 1].rule = rule;   /* an empty span replaced */
		rows[*n - 1].flags = flags;
		return 0;
	}
	if (*n >= b->lim->max_rows) {
		refuse(b, UNWIND_REFUSED_ROWS, "more rows than the bound");
		return -E2BIG;
	}
	rows[(*n)++] = (struct kiln_unwind_row){ .pc_off = (uint32_t)(pc - b->base),
						 .rule = rule, .flags = flags };
	return 0;
}

static int make_rows(struct builder *b, struct unwind_table *t)
{
	const uint16_t invalid = KILN_UNWIND_CMD | KILN_CMD_INVALID;
	uint64_t covered = 0;
	uint32_t entry_fde = UINT32_MAX;
	size_t n = 0;
	int err;

	sort_spans(b);
	/* The executable's entry point is its thread's root, whatever the
	 * CFI says (musl's _start has none that ends the walk). */
	for (size_t i = 0; b->entry && i < b->nspans; i++)
		if (span_start(b, &b->spans[i]) <= b->entry && b->entry < span_end(b, &b->spans[i]))
			entry_fde = b->spans[i].fde;
	/* Rows: at most two a span (a gap row and its own) plus the end,
	 * written over the spans themselves, so a large file's rows cost no
	 * second array. Rows are 8 bytes and spans 16: the rows of spans
	 * [0, i) end at byte 16 i, before span i, and span i's end by byte
	 * 16 i + 16, before span i + 1. Span i is copied out before its rows
	 * are written (the barrier keeps the compiler from reading it after:
	 * the types say rows and spans never alias, here they do). */
	_Static_assert(2 * sizeof(struct kiln_unwind_row) <= sizeof(struct span),
		       "rows are written over the spans");
	if (!b->nspans)
		return 0;
	t->rows = (struct kiln_unwind_row *)(void *)b->spans;
	b->spans = NULL;
	b->capspans = 0;
	for (size_t i = 0; i < b->nspans; i++) {
		struct span sp, *s = &sp;
		uint64_t start;
		uint16_t rule;

		memcpy(&sp, (const struct span *)(void *)t->rows + i, sizeof(sp));
		__asm__ volatile("" ::: "memory");
		start = span_start(b, s);
		rule = s->rule;
		if (span_end(b, s) <= covered)
			continue;               /* overlapping FDEs: the first wins */
		if (start < covered)
			start = covered;
		if (n && start > covered + GAP_MAX) {
			err = add_row(b, t->rows, &n, covered, invalid, 0);
			if (err)
				return err;
		}
		if (s->fde == entry_fde)
			rule = KILN_UNWIND_CMD | KILN_CMD_STOP;
		err = add_row(b, t->rows, &n, start, rule, s->flags);
		if (err)
			return err;
		covered = span_end(b, s);
	}
	if (n) {
		err = add_row(b, t->rows, &n, covered, invalid, 0);
		if (err)
			return err;
	}
	t->nrows = n;
	for (size_t i = 0; i < n; i++) {
		const struct kiln_unwind_row *r = &t->rows[i];

		if (!(r->rule & KILN_UNWIND_CMD))
			continue;
		switch (r->rule & ~KILN_UNWIND_CMD) {
		case KILN_CMD_STOP: b->info->stop_rows++; break;
		case KILN_CMD_PLT: b->info->plt_rows++; break;
		case KILN_CMD_SIGNAL: b->info->signal_rows++; break;
		case KILN_CMD_INVALID: b->info->invalid_rows++; break;
		}
	}
	return 0;
}

/* --- the build ----------------------------------------------------------- */

/* Whether PT_DYNAMIC has a DT_NEEDED entry (no PT_DYNAMIC: true). */
static bool needs_libraries(struct builder *b)
{
	size_t phnum = 0;

	if (elf_getphdrnum(b->elf, &phnum) != 0)
		return true;
	for (size_t i = 0; i < phnum; i++) {
		Elf_Data *d;
		GElf_Phdr ph;
		GElf_Dyn dyn;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		if (ph.p_filesz > DYNAMIC_MAX)
			return true;
		d = elf_getdata_rawchunk(b->elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_DYN);
		for (int j = 0; d && gelf_getdyn(d, j, &dyn); j++) {
			if (dyn.d_tag == DT_NULL)
				return false;
			if (dyn.d_tag == DT_NEEDED)
				return true;
		}
		return false;
	}
	return true;
}

/* What the headers say of the file's layout: base and executable
 * segments into info, the ELF header into *eh, whether it has PT_INTERP.
 * -EINVAL (not a usable ELF file), -ENOTSUP (not x86-64), -ENOENT (no
 * PT_LOAD); *why names the refusal. */
/* machine: the one e_machine taken, 0 for any the walker knows. */
static int read_layout(Elf *elf, uint16_t machine, GElf_Ehdr *eh, struct unwind_table_info *info,
		       bool *interp, const char **why)
{
	const unsigned char *ident;
	size_t phnum = 0;
	bool found = false;

	*interp = false;
	*why = "bad ELF headers";
	if (elf__check_headers(elf) != 0 || !gelf_getehdr(elf, eh) ||
	    elf_getphdrnum(elf, &phnum) != 0)
		return -EINVAL;
	ident = (const unsigned char *)elf_getident(elf, NULL);
	*why = machine == EM_AARCH64 ? "not arm64" : machine ? "not x86-64" : "not x86-64 or arm64";
	if (!arch_of(eh->e_machine) || (machine && eh->e_machine != machine) || !ident ||
	    ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
		return -ENOTSUP;
	info->machine = eh->e_machine;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && !found) {
			info->base = ph.p_vaddr;
			found = true;
		}
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && info->nsegs < UNWIND_SEGMENTS_MAX)
			info->segs[info->nsegs++] = (typeof(info->segs[0])){
				.offset = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz };
		*interp |= ph.p_type == PT_INTERP;
	}
	*why = "no PT_LOAD segment";
	return found ? 0 : -ENOENT;
}

int unwind_table__layout(int fd, const void *image, size_t size, const char *name,
			 struct unwind_table_info *out)
{
	Elf *elf = fd >= 0 ? elf__begin_fd(fd, name) :
		elf__begin_mem((void *)(uintptr_t)image, size, name);
	const char *why;
	GElf_Ehdr eh;
	bool interp;
	int err;

	memset(out, 0, sizeof(*out));
	if (!elf)
		return -EINVAL;
	err = read_layout(elf, 0, &eh, out, &interp, &why);
	elf_end(elf);
	return err == -ENOENT ? -EINVAL : err;
}

static int read_headers(struct builder *b)
{
	bool interp;
	const char *why;
	GElf_Ehdr eh;
	int err = read_layout(b->elf, b->lim->machine, &eh, b->info, &interp, &why);

	if (err) {
		refuse(b, err == -ENOTSUP ? UNWIND_REFUSED_ARCH : UNWIND_REFUSED_NOT_ELF, why);
		return err == -ENOENT ? -EINVAL : err;
	}
	b->ident = (const unsigned char *)elf_getident(b->elf, NULL);
	b->arch = arch_of(eh.e_machine);
	b->base = b->info->base;
	/* The entry point is a thread's root in executables and in the
	 * dynamic loader itself (a shared object that needs nothing); in
	 * other shared objects it may just be the start of .text. */
	if (eh.e_type == ET_EXEC || interp || (eh.e_type == ET_DYN && !needs_libraries(b)))
		b->entry = eh.e_entry;
	return 0;
}

/* Rows for PLT stubs without CFI (spans sorted). x86-64: a .plt.sec or
 * .plt.got stub runs with the caller's return address just pushed (CFA =
 * rsp + 8), the lazy .plt pushes more (the PLT command). arm64: a .plt
 * entry branches on with sp untouched and the return address still in x30;
 * the first entry (32 bytes) pushes x16 and x30 with its first
 * instruction. */
static int synth_plt(struct builder *b)
{
	const uint16_t flags = KILN_ROW_SYNTHETIC;
	struct kiln_unwind_rule stub = { .cfa_reg = KILN_REG_SP, .cfa_off = 8, RA_AT_CFA_M8 };
	int rule, err;

	if (b->arch->machine == EM_AARCH64) {
		struct kiln_unwind_rule lr = { .cfa_reg = KILN_REG_SP, .ra_rule = KILN_RA_IN_LR };
		uint64_t at[4] = { b->plt[0], b->plt[0] + 4, b->plt[0] + 32, b->plt[1] };

		for (int i = 0; i < 3; i++) {
			uint64_t range[2] = { at[i] < b->plt[1] ? at[i] : b->plt[1],
					      at[i + 1] < b->plt[1] ? at[i + 1] : b->plt[1] };

			lr.cfa_off = i == 1 ? 16 : 0;
			rule = rule_index(b, &lr);
			err = rule < 0 ? rule : synth(b, range, rule, flags);
			if (err)
				return err;
		}
		return 0;
	}
	rule = rule_index(b, &stub);
	if (rule < 0)
		return rule;
	err = synth(b, b->plt, KILN_UNWIND_CMD | KILN_CMD_PLT, flags | 11);
	if (!err)
		err = synth(b, b->plt_sec, rule, flags);
	if (!err)
		err = synth(b, b->plt_got, rule, flags);
	return err;
}

static int build(struct builder *b, struct unwind_table *t, int fd, const char *root,
		 const char *path)
{
	const uint16_t synth_flags = KILN_ROW_SYNTHETIC;
	Elf_Data *data;
	Dwarf_CFI *cfi;
	uint64_t vaddr = 0;
	bool too_big = false;
	int err;

	err = read_headers(b);
	if (!err)
		err = scan_sections(b);
	if (err)
		return err;
	b->hash_size = 1;
	while (b->hash_size < 2 * (size_t)b->lim->max_rules)
		b->hash_size <<= 1;
	b->hash = calloc(b->hash_size, sizeof(*b->hash));
	b->rules = malloc((size_t)b->lim->max_rules * sizeof(*b->rules));
	if (!b->hash || !b->rules)
		return -ENOMEM;

	/* .eh_frame first. */
	data = eh_frame_data(b, &vaddr, &too_big);
	if (too_big || (data && data->d_buf && data->d_size)) {
		if (too_big || data->d_size > b->lim->max_cfi_bytes) {
			refuse(b, UNWIND_REFUSED_CFI_BYTES, ".eh_frame over the bound");
			return -E2BIG;
		}
		b->info->cfi_bytes += data->d_size;
		cfi = dwarf_getcfi_elf(b->elf);
		if (cfi) {
			err = walk_section(b, cfi, data, vaddr, true, 0);
			dwarf_cfi_end(cfi);
			if (err)
				return err;
		}
	}
	sort_spans(b);
	b->eh_end = b->nspans;

	/* Go code: from Go's function table, whose rows are smaller and
	 * restore what the .debug_frame Go writes does not (rbp); x86-64
	 * only (the rows read x86 prologues). */
	b->info->debug_source = "none";
	err = b->arch->machine == EM_X86_64 ? walk_go(b, fd) : -ENOENT;
	if (err == -ENOENT) {
		/* Else .debug_frame: the file's own, else its debug file's. */
		err = walk_debug_frame(b, b->elf, "the file");
		if (!err) {
			b->info->debug_source = "file";
		} else if (err == -ENOENT && fd >= 0) {
			char id[2 * ELF_BUILD_ID_MAX + 1] = "";

			elf__read_build_id(b->elf, b->name, id, sizeof(id));
			b->info->debug_lookup = UNWIND_DEBUG_NOT_FOUND;
			if (debug_file__find(b->elf, b->debuglink, fd, id, root, path,
					     accept_debug_file, b)) {
				b->info->debug_lookup = UNWIND_DEBUG_FOUND;
				err = walk_debug_frame(b, b->dbg_elf, "the debug file");
				if (!err)
					b->info->debug_source = "debug-file";
			}
		}
	}
	if (err && err != -ENOENT)
		return err;
	if (!b->info->fdes_eh && !b->info->fdes_debug && !b->info->go_funcs) {
		refuse(b, UNWIND_REFUSED_NO_CFI, "no .eh_frame or .debug_frame FDE, no Go function table");
		return -ENOENT;
	}

	sort_spans(b);
	err = synth_plt(b);
	if (!err && b->entry) {
		/* An entry point without CFI (ld.so's _start): STOP up to the
		 * next FDE, at most ENTRY_STOP_MAX bytes. */
		uint64_t range[2] = { b->entry, b->entry + ENTRY_STOP_MAX };

		sort_spans(b);
		for (size_t i = 0; i < b->nspans; i++)
			if (span_end(b, &b->spans[i]) > b->entry &&
			    span_start(b, &b->spans[i]) < range[1]) {
				range[1] = span_start(b, &b->spans[i]) > b->entry ?
						   span_start(b, &b->spans[i]) : b->entry;
				break;
			}
		err = synth(b, range, KILN_UNWIND_CMD | KILN_CMD_STOP, synth_flags);
	}
	if (!err)
		err = make_rows(b, t);
	return err;
}

static struct unwind_table *build_table(Elf *elf, int fd, const char *root, const char *path,
					const char *name, const struct unwind_limits *lim)
{
	struct unwind_table *t = calloc(1, sizeof(*t));
	struct builder b = { .lim = lim ? lim : &unwind_default_limits, .name = name,
			     .elf = elf, .dbg_fd = -1 };
	struct timespec t0, t1;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!t) {
		err = -ENOMEM;
		goto out;
	}
	if (b.lim->max_rules >= KILN_UNWIND_CMD) {
		err = -EINVAL;
		goto out;
	}
	b.info = &t->info;
	err = build(&b, t, fd, root, path);
out:
	elf_end(b.dbg_elf);
	if (b.dbg_fd >= 0)
		close(b.dbg_fd);
	free(b.spans);
	free(b.hash);
	if (err) {
		free(b.rules);
		unwind_table__free(t);
		errno = -err;
		return NULL;
	}
	/* The rule array shrinks to what is used. */
	t->nrules = b.nrules;
	t->rules = b.nrules ? realloc(b.rules, b.nrules * sizeof(*t->rules)) : NULL;
	if (!t->rules) {
		t->rules = b.rules;
		if (!b.nrules) {
			free(b.rules);
			t->rules = NULL;
		}
	}
	if (t->nrows)
		t->rows = realloc(t->rows, t->nrows * sizeof(*t->rows)) ?: t->rows;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	t->info.rows = t->nrows;
	t->info.rules = t->nrules;
	t->info.bytes = sizeof(*t) + t->nrows * sizeof(*t->rows) + t->nrules * sizeof(*t->rules);
	t->info.build_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			   (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	atomic_fetch_add_explicit(&stats.built, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&stats.rows, t->nrows, memory_order_relaxed);
	atomic_fetch_add_explicit(&stats.bytes, t->info.bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&stats.build_ns, t->info.build_ns, memory_order_relaxed);
	for (int i = 0; i < UNWIND_UNSUP_COUNT; i++)
		atomic_fetch_add_explicit(&stats.unsupported[i], t->info.unsupported[i],
					  memory_order_relaxed);
	pr_debug("unwind '%s': %zu rows, %zu rules, %zu bytes from %zu + %zu FDEs in %.1f ms",
		 name, t->nrows, t->nrules, t->info.bytes, t->info.fdes_eh, t->info.fdes_debug,
		 (double)t->info.build_ns / 1e6);
	return t;
}

struct unwind_table *unwind_table__build(int fd, const char *root, const char *path,
					 const struct unwind_limits *lim)
{
	const char *name = path ? path : "(unwind fd)";
	struct unwind_table *t;
	Elf *elf = elf__begin_fd(fd, name);

	if (!elf) {
		atomic_fetch_add_explicit(&stats.refused[UNWIND_REFUSED_NOT_ELF], 1,
					  memory_order_relaxed);
		return NULL;
	}
	t = build_table(elf, fd, root, path, name, lim);
	elf_end(elf);
	return t;
}

struct unwind_table *unwind_table__build_mem(const void *image, size_t size, const char *name,
					     const struct unwind_limits *lim)
{
	struct unwind_table *t;
	Elf *elf;

	name = name ? name : "(elf image)";
	/* elf_memory wants a writable pointer; ELF_C_READ never writes. */
	elf = elf__begin_mem((void *)(uintptr_t)image, size, name);
	if (!elf) {
		atomic_fetch_add_explicit(&stats.refused[UNWIND_REFUSED_NOT_ELF], 1,
					  memory_order_relaxed);
		return NULL;
	}
	t = build_table(elf, -1, NULL, NULL, name, lim);
	elf_end(elf);
	return t;
}

struct unwind_table *unwind_table__adopt(struct kiln_unwind_row *rows, size_t nrows,
					 struct kiln_unwind_rule *rules, size_t nrules,
					 const struct unwind_table_info *info)
{
	struct unwind_table *t = calloc(1, sizeof(*t));

	if (!t) {
		free(rows);
		free(rules);
		errno = ENOMEM;
		return NULL;
	}
	t->rows = rows;
	t->nrows = nrows;
	t->rules = rules;
	t->nrules = nrules;
	t->info = *info;
	t->info.rows = nrows;
	t->info.rules = nrules;
	t->info.bytes = sizeof(*t) + nrows * sizeof(*rows) + nrules * sizeof(*rules);
	return t;
}

/* The first candidate with .debug_frame ends the search. */
static bool has_debug_frame(Elf *elf, int fd, const char *file, void *ctx)
{
	bool found = find_debug_frame(elf) != NULL;

	(void)file;
	(void)ctx;
	elf_end(elf);
	close(fd);
	return found;
}

bool unwind_table__debug_file_found(int fd, const char *root, const char *path)
{
	const char *name = path ? path : "(unwind fd)";
	struct unwind_table_info info = { 0 };
	struct builder b = { .lim = &unwind_default_limits, .name = name, .info = &info,
			     .dbg_fd = -1 };
	char id[2 * ELF_BUILD_ID_MAX + 1] = "";
	bool found;

	b.elf = elf__begin_fd(fd, name);
	if (!b.elf)
		return false;
	scan_sections(&b);
	elf__read_build_id(b.elf, name, id, sizeof(id));
	found = debug_file__find(b.elf, b.debuglink, fd, id, root, path, has_debug_frame, NULL);
	elf_end(b.elf);
	return found;
}

const struct kiln_unwind_row *unwind_table__rows(const struct unwind_table *t, size_t *n)
{
	*n = t ? t->nrows : 0;
	return t ? t->rows : NULL;
}

const struct kiln_unwind_rule *unwind_table__rules(const struct unwind_table *t, size_t *n)
{
	*n = t ? t->nrules : 0;
	return t ? t->rules : NULL;
}

const struct kiln_unwind_row *unwind_table__lookup(const struct unwind_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi;
	uint64_t off;

	if (!t || !t->nrows || vaddr < t->info.base || vaddr - t->info.base > UINT32_MAX)
		return NULL;
	off = vaddr - t->info.base;
	hi = t->nrows;
	while (lo < hi) {       /* first row above off */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc_off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lo == t->nrows)
		return NULL;
	return &t->rows[lo - 1];
}

void unwind_table__info(const struct unwind_table *t, struct unwind_table_info *out)
{
	if (t)
		*out = t->info;
	else
		memset(out, 0, sizeof(*out));
}

int unwind_table__bias(const struct unwind_table_info *info, uint64_t start, uint64_t pgoff,
		       uint64_t *bias)
{
	for (size_t i = 0; i < info->nsegs; i++) {
		uint64_t off = info->segs[i].offset, page_off = off & ~(uint64_t)4095;

		if (pgoff >= page_off && pgoff < off + info->segs[i].filesz) {
			/* pc - start + pgoff is a file offset; + vaddr - offset a
			 * vaddr; - base a row offset. */
			*bias = start - pgoff + off - info->segs[i].vaddr + info->base;
			return 0;
		}
	}
	return -ENOENT;
}

const char *unwind_table__describe(const struct unwind_table *t, const struct kiln_unwind_row *r,
				   char *buf, size_t len)
{
	static const char *const cmds[] = { "INVALID", "STOP", "PLT", "SIGNAL", "FP", "FP-SWITCH" };
	const struct kiln_unwind_rule *u;
	const struct cfi_arch *a;
	char fp[32], ra[32];
	const char *reg;

	if (r->rule & KILN_UNWIND_CMD) {
		unsigned c = r->rule & ~KILN_UNWIND_CMD;

		if (c == KILN_CMD_PLT)
			snprintf(buf, len, "PLT/%u", r->flags & KILN_ROW_PLT_THRESHOLD);
		else
			snprintf(buf, len, "%s", c < sizeof(cmds) / sizeof(cmds[0]) ? cmds[c] : "?");
		return buf;
	}
	if (!t || r->rule >= t->nrules) {
		snprintf(buf, len, "rule %u?", r->rule);
		return buf;
	}
	u = &t->rules[r->rule];
	a = arch_of(t->info.machine);
	reg = !a ? "?" : u->cfa_reg == KILN_REG_SP ? a->sp_name : a->fp_name;
	if (u->fp_rule == KILN_FP_AT_CFA)
		snprintf(fp, sizeof(fp), "c%+d", u->fp_off);
	else if (u->fp_rule == KILN_FP_AT_FP)
		snprintf(fp, sizeof(fp), "f%+d", u->fp_off);
	else
		snprintf(fp, sizeof(fp), "u");
	/* The return address, but x86-64's, always at CFA - 8. */
	if (u->ra_rule == KILN_RA_IN_LR)
		snprintf(ra, sizeof(ra), " ra=x30");
	else if (t->info.machine != EM_X86_64)
		snprintf(ra, sizeof(ra), " ra=c%+d", u->ra_off);
	else
		ra[0] = '\0';
	if (u->flags & KILN_RULE_CFA_DEREF)
		snprintf(buf, len, "cfa=*(%s%+d) fp=%s%s", reg, u->cfa_off, fp, ra);
	else
		snprintf(buf, len, "cfa=%s%+d fp=%s%s", reg, u->cfa_off, fp, ra);
	return buf;
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->rules);
	free(t);
}

void unwind_table__stats(struct unwind_stats *out)
{
	out->built = atomic_load_explicit(&stats.built, memory_order_relaxed);
	out->rows = atomic_load_explicit(&stats.rows, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&stats.bytes, memory_order_relaxed);
	out->build_ns = atomic_load_explicit(&stats.build_ns, memory_order_relaxed);
	for (int i = 0; i < UNWIND_REFUSAL_COUNT; i++)
		out->refused[i] = atomic_load_explicit(&stats.refused[i], memory_order_relaxed);
	for (int i = 0; i < UNWIND_UNSUP_COUNT; i++)
		out->unsupported[i] = atomic_load_explicit(&stats.unsupported[i],
							   memory_order_relaxed);
}
