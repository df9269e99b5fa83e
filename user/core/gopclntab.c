// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/elf.h"
#include "core/gopclntab.h"

/* Header magics (little-endian u32 at the table's start). */
#define MAGIC_1_2  0xfffffffbu
#define MAGIC_1_16 0xfffffffau
#define MAGIC_1_18 0xfffffff0u
#define MAGIC_1_20 0xfffffff1u

#define PTR 8u                  /* 64-bit layouts only */
#define NAME_MAX_SCAN 4096u     /* bytes searched for a name's NUL */
#define MODULE_TEXT_OFF (22 * 8) /* moduledata.text in .go.module (1.20 on) */
/* moduledata.gofunc: after 38 words in 1.18 and 1.19, 40 from 1.20 on
 * (covctrs, ecovctrs added); funcnametab's pointer is the second word */
#define MODULE_GOFUNC_OFF_1_18 (38 * 8)
#define MODULE_GOFUNC_OFF_1_20 (40 * 8)
#define SCAN_CHUNK (1u << 20)

static uint32_t u32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t u64_at(const uint8_t *p)
{
	return (uint64_t)u32_at(p) | (uint64_t)u32_at(p + 4) << 32;
}

/* [off, off + len) lies inside the table */
static bool inside(const struct gopclntab *t, uint64_t off, uint64_t len)
{
	return off <= t->size && len <= t->size - off;
}

/* A NUL-terminated string at off, or NULL. */
static const char *string_at(const struct gopclntab *t, uint64_t off)
{
	size_t n;

	if (off >= t->size)
		return NULL;
	n = t->size - off < NAME_MAX_SCAN ? t->size - off : NAME_MAX_SCAN;
	return memchr(t->data + off, '\0', n) ? (const char *)t->data + off : NULL;
}

/* Bytes of one functab entry: {pc, funcoff} as two words (to 1.17) or
 * two u32 offsets (1.18 on). */
static uint64_t functab_field(const struct gopclntab *t)
{
	return t->version >= GOPCLNTAB_1_18 ? 4 : PTR;
}

int gopclntab__open(struct gopclntab *t, const void *data, size_t size, uint64_t text_start)
{
	const uint8_t *d = data;
	uint64_t words[8], field, functab_bytes;
	unsigned nwords;

	memset(t, 0, sizeof(*t));
	t->data = d;
	t->size = size;
	if (size < 16 || d[4] || d[5] || d[7] != PTR || !(d[6] == 1 || d[6] == 2 || d[6] == 4))
		return -EINVAL;
	t->quantum = d[6];
	switch (u32_at(d)) {
	case MAGIC_1_2: t->version = GOPCLNTAB_1_2; nwords = 1; break;
	case MAGIC_1_16: t->version = GOPCLNTAB_1_16; nwords = 7; break;
	case MAGIC_1_18: t->version = GOPCLNTAB_1_18; nwords = 8; break;
	case MAGIC_1_20: t->version = GOPCLNTAB_1_20; nwords = 8; break;
	default: return -EINVAL;
	}
	if (!inside(t, 8, (uint64_t)nwords * PTR))
		return -EINVAL;
	for (unsigned i = 0; i < nwords; i++)
		words[i] = u64_at(d + 8 + i * PTR);
	t->nfunc = words[0];
	if (t->nfunc == 0)
		return -EINVAL;
	if (t->nfunc > GOPCLNTAB_FUNCS_MAX)
		return -E2BIG;
	if (t->version == GOPCLNTAB_1_2) {
		/* names, pc-value tables and records: offsets from the start;
		 * the file table's offset follows the function table */
		t->functab = 8 + PTR;
		functab_bytes = (2 * t->nfunc + 1) * PTR;
		if (!inside(t, t->functab, functab_bytes + 4))
			return -EINVAL;
		t->filetab = u32_at(d + t->functab + functab_bytes);
		return inside(t, t->filetab, 4) ? 0 : -EINVAL;
	}
	/* words: nfunc, nfiles, [textStart,] funcnames, cutab, filetab,
	 * pctab, functab */
	field = t->version >= GOPCLNTAB_1_18 ? 1 : 0;
	if (field) {
		t->text_start = words[2] ? words[2] : text_start;
		if (!t->text_start)
			return -EINVAL;
	}
	t->funcnames = words[2 + field];
	t->cutab = words[3 + field];
	t->filetab = words[4 + field];
	t->pctab = words[5 + field];
	t->functab = words[6 + field];
	functab_bytes = (2 * t->nfunc + 1) * functab_field(t);
	if (!inside(t, t->funcnames, 1) || !inside(t, t->cutab, 0) ||
	    !inside(t, t->filetab, 0) || !inside(t, t->pctab, 0) ||
	    !inside(t, t->functab, functab_bytes))
		return -EINVAL;
	return 0;
}

/* Entry pc and record offset (from the table's start) of functab slot i
 * (i == nfunc: the end of the last function, no record). */
static void functab_slot(const struct gopclntab *t, uint64_t i, uint64_t *pc, uint64_t *rec)
{
	uint64_t field = functab_field(t);
	const uint8_t *e = t->data + t->functab + 2 * i * field;

	if (field == 4) {
		*pc = t->text_start + u32_at(e);
		*rec = i < t->nfunc ? t->functab + u32_at(e + 4) : 0;
	} else {
		*pc = u64_at(e);
		*rec = i < t->nfunc ? (t->version == GOPCLNTAB_1_2 ? 0 : t->functab) +
				      u64_at(e + PTR) : 0;
	}
}

int gopclntab__func(const struct gopclntab *t, uint64_t i, struct go_func *f)
{
	/* _func fields after the entry: name, args, deferreturn, pcsp,
	 * pcfile, pcln, npcdata, then the compilation unit (1.16 on), the
	 * start line (1.20 on), funcID and flag */
	uint64_t rec, entry_bytes = t->version >= GOPCLNTAB_1_18 ? 4 : PTR, rec_bytes,
		      name_base = t->version == GOPCLNTAB_1_2 ? 0 : t->funcnames;
	const uint8_t *r;
	uint64_t end_pc;

	memset(f, 0, sizeof(*f));
	if (i >= t->nfunc)
		return -EINVAL;
	functab_slot(t, i, &f->entry, &rec);
	functab_slot(t, i + 1, &end_pc, &(uint64_t){ 0 });
	f->end = end_pc;
	rec_bytes = entry_bytes + 7 * 4 + (t->version == GOPCLNTAB_1_2 ? 4 :
					    t->version == GOPCLNTAB_1_20 ? 12 : 8);
	if (f->end <= f->entry || !inside(t, rec, rec_bytes))
		return -EINVAL;
	r = t->data + rec;
	/* the record's own entry must be the slot's */
	if (entry_bytes == 4 ? t->text_start + u32_at(r) != f->entry : u64_at(r) != f->entry)
		return -EINVAL;
	r += entry_bytes;
	f->name = string_at(t, name_base + u32_at(r));
	f->pcsp = u32_at(r + 12);
	f->pcfile = u32_at(r + 16);
	f->pcln = u32_at(r + 20);
	{
		/* 1.2-1.15: funcID, pad[2], nfuncdata; 1.16 on: cu, [startLine
		 * (1.20 on),] funcID, flag, pad, nfuncdata; then the pcdata
		 * offsets and the funcdata (pointers, 8-aligned, to 1.17) */
		uint64_t fixed = t->version == GOPCLNTAB_1_2 ? 32 :
				 t->version == GOPCLNTAB_1_20 ? 40 : 36, data_bytes;
		bool pointers = t->version <= GOPCLNTAB_1_16;

		if (t->version != GOPCLNTAB_1_2) {
			f->cu = u32_at(r + 28);
			f->flag = r[fixed - 3];
		}
		f->npcdata = u32_at(r + 24);
		f->nfuncdata = r[fixed - 1];
		f->pcdata = rec + entry_bytes + fixed;
		f->funcdata = f->pcdata + 4 * (uint64_t)f->npcdata;
		if (pointers)
			f->funcdata += f->funcdata % PTR;
		data_bytes = (uint64_t)f->nfuncdata * (pointers ? PTR : 4);
		if (f->npcdata > GOPCLNTAB_FUNCS_MAX ||
		    !inside(t, f->pcdata, 4 * (uint64_t)f->npcdata) ||
		    !inside(t, f->funcdata, data_bytes))
			f->npcdata = f->nfuncdata = 0;
	}
	return f->name ? 0 : -EINVAL;
}

int64_t gopclntab__find(const struct gopclntab *t, uint64_t pc)
{
	uint64_t lo = 0, hi = t->nfunc, entry, end, rec;

	functab_slot(t, 0, &entry, &rec);
	functab_slot(t, t->nfunc, &end, &rec);
	if (pc < entry || pc >= end)
		return -1;
	while (hi - lo > 1) {   /* slot lo's entry <= pc < slot hi's */
		uint64_t mid = lo + (hi - lo) / 2;

		functab_slot(t, mid, &entry, &rec);
		if (entry <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

bool gopclntab__pcvalue(const struct gopclntab *t, const struct go_func *f, uint32_t off,
			struct go_pcvalue *it)
{
	uint64_t base = t->version == GOPCLNTAB_1_2 ? 0 : t->pctab;

	memset(it, 0, sizeof(*it));
	if (off == 0 || base + off >= t->size)
		return false;
	it->p = t->data + base + off;
	it->end = t->data + t->size;
	it->pc = f->entry;
	it->func_end = f->end;
	it->value = -1;
	it->quantum = t->quantum;
	it->first = true;
	return true;
}

/* An unsigned LEB128 of at most 32 bits. */
static bool uvarint(struct go_pcvalue *it, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (it->p >= it->end)
			return false;
		b = *it->p++;
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

int gopclntab__pcvalue_next(struct go_pcvalue *it, uint64_t *start, uint64_t *end,
			    int32_t *value)
{
	uint32_t vdelta, pcdelta;

	if (!it->p)
		return 0;
	if (!uvarint(it, &vdelta))
		return -EINVAL;
	if (vdelta == 0 && !it->first) {
		it->p = NULL;
		return 0;
	}
	it->first = false;
	if (!uvarint(it, &pcdelta))
		return -EINVAL;
	/* zig-zag */
	it->value += (vdelta & 1) ? -(int64_t)(vdelta >> 1) - 1 : (int64_t)(vdelta >> 1);
	if (it->value < INT32_MIN || it->value > INT32_MAX ||
	    (uint64_t)pcdelta * it->quantum > it->func_end - it->pc)
		return -EINVAL;
	*start = it->pc;
	it->pc += (uint64_t)pcdelta * it->quantum;
	*end = it->pc;
	*value = (int32_t)it->value;
	return 1;
}

bool gopclntab__value_at(const struct gopclntab *t, const struct go_func *f, uint32_t off,
			 uint64_t pc, int32_t *value)
{
	struct go_pcvalue it;
	uint64_t s, e;
	int32_t v;

	if (!gopclntab__pcvalue(t, f, off, &it))
		return false;
	while (gopclntab__pcvalue_next(&it, &s, &e, &v) == 1)
		if (s <= pc && pc < e) {
			*value = v;
			return true;
		}
	return false;
}

const char *gopclntab__file(const struct gopclntab *t, const struct go_func *f, int32_t value)
{
	uint64_t idx, off;

	if (value < 0)
		return NULL;
	if (t->version == GOPCLNTAB_1_2) {
		/* a file number indexes u32 offsets from the table's start */
		idx = t->filetab + 4 * (uint64_t)value;
		if (value == 0 || !inside(t, idx, 4) || (uint32_t)value >= u32_at(t->data + t->filetab))
			return NULL;
		return string_at(t, u32_at(t->data + idx));
	}
	idx = t->cutab + 4 * ((uint64_t)f->cu + (uint64_t)value);
	if (!inside(t, idx, 4))
		return NULL;
	off = u32_at(t->data + idx);
	return off == UINT32_MAX ? NULL : string_at(t, t->filetab + off);
}

/* Entries of one inline tree: 1.12 to 1.19 {parent i16, funcID u8, pad,
 * file i32, line i32, name i32, parentPc i32}; 1.20 on {funcID u8, pad[3],
 * name i32, parentPc i32, startLine i32}. Names index the name table (the
 * whole table to 1.15). Go 1.9-1.11 wrote 16-byte entries with no parent
 * pc, which read as lies here and are dropped by the caller's checks. */
size_t gopclntab__inline_entry_size(const struct gopclntab *t)
{
	return t->version == GOPCLNTAB_1_20 ? 16 : 20;
}

bool gopclntab__pcdata_at(const struct gopclntab *t, const struct go_func *f, uint32_t k,
			  uint64_t pc, int32_t *value)
{
	return k < f->npcdata &&
	       gopclntab__value_at(t, f, u32_at(t->data + f->pcdata + 4 * (uint64_t)k), pc, value);
}

unsigned gopclntab__inline_slots(const struct gopclntab *t, uint8_t slots[3])
{
	if (t->version != GOPCLNTAB_1_2) {
		slots[0] = GO_FUNCDATA_INLINE_TREE;
		return 1;
	}
	slots[0] = 4;   /* 1.14, 1.15 */
	slots[1] = 3;   /* 1.13 */
	slots[2] = 2;   /* 1.12 */
	return 3;
}

bool gopclntab__inline_tree(const struct gopclntab *t, const struct go_func *f, uint8_t slot,
			    uint64_t gofunc, uint64_t *vaddr, uint32_t *count)
{
	struct go_pcvalue it;
	uint64_t s, e;
	int32_t v, max = -1;
	int step;

	if (f->npcdata <= GO_PCDATA_INLINE_INDEX || f->nfuncdata <= slot)
		return false;
	if (t->version <= GOPCLNTAB_1_16) {
		*vaddr = u64_at(t->data + f->funcdata + PTR * slot);
	} else {
		uint32_t off = u32_at(t->data + f->funcdata + 4 * slot);

		if (off == UINT32_MAX || !gofunc)
			return false;
		*vaddr = gofunc + off;
	}
	if (!*vaddr || !gopclntab__pcvalue(t, f, u32_at(t->data + f->pcdata +
							  4 * GO_PCDATA_INLINE_INDEX), &it))
		return false;
	while ((step = gopclntab__pcvalue_next(&it, &s, &e, &v)) == 1)
		if (v > max)
			max = v;
	if (step < 0 || max < 0 || max >= GO_INLINE_MAX)
		return false;
	*count = (uint32_t)max + 1;
	return true;
}

int gopclntab__inline_entry(const struct gopclntab *t, const uint8_t *bytes, uint32_t count,
			    struct go_inlined *out)
{
	bool v120 = t->version == GOPCLNTAB_1_20;
	uint32_t name = u32_at(bytes + (v120 ? 4 : 12));
	int16_t parent = (int16_t)(bytes[0] | bytes[1] << 8);

	if (v120 ? bytes[1] || bytes[2] || bytes[3] : bytes[3] || parent < -1 || parent >= (int32_t)count)
		return -EINVAL;
	out->parent_pc = (int32_t)u32_at(bytes + (v120 ? 8 : 16));
	out->name = string_at(t, t->funcnames + name);
	return out->name ? 0 : -EINVAL;
}

/* --- finding the table in an ELF file -------------------------------- */

static Elf_Scn *section_named(Elf *elf, const char *const names[], size_t n)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *s;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		s = elf_strptr(elf, shstrndx, sh.sh_name);
		for (size_t i = 0; s && i < n; i++)
			if (strcmp(s, names[i]) == 0)
				return scn;
	}
	return NULL;
}

/* The file offset of vaddr [vaddr, vaddr + len) inside one PT_LOAD's
 * file bytes, or -1. */
static int64_t file_offset(Elf *elf, uint64_t vaddr, uint64_t len)
{
	size_t phnum = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return -1;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr <= ph.p_filesz &&
		    len <= ph.p_filesz - (vaddr - ph.p_vaddr))
			return (int64_t)(ph.p_offset + (vaddr - ph.p_vaddr));
	}
	return -1;
}

int go_image__read_at(Elf *elf, int fd, uint64_t vaddr, void *buf, size_t len)
{
	int64_t off = file_offset(elf, vaddr, len);

	return off >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EINVAL;
}

/* What a Go binary's .symtab and module data say of its table. */
struct go_layout {
	uint64_t pclntab, epclntab;     /* runtime.pclntab, runtime.epclntab */
	uint64_t symtab_text;           /* runtime.text */
	uint64_t symtab_gofunc;         /* go:func.* (go.func.* in 1.18, 1.19) */
	uint64_t module_table;          /* .go.module: moduledata's table address */
	uint64_t module_text;           /* and its text start (Go 1.20 on) */
	uint64_t module_gofunc;         /* and go:func.* */
};

/* The runtime symbols and go:func.*, in one pass over .symtab (0 when
 * absent). */
static void read_symbols(Elf *elf, struct go_layout *l)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
			continue;
		/* the symbol table's size is bounded like every section read */
		if (sh.sh_size > ELF_FILE_MAX / 4 || !(d = elf_getdata(scn, NULL)))
			return;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && gelf_getsym(d, (int)i, &sym);
		     i++) {
			const char *s = elf_strptr(elf, sh.sh_link, sym.st_name);

			if (s && (!strcmp(s, "go:func.*") || !strcmp(s, "go.func.*")))
				l->symtab_gofunc = sym.st_value;
			if (!s || strncmp(s, "runtime.", 8) != 0)
				continue;
			if (strcmp(s + 8, "pclntab") == 0)
				l->pclntab = sym.st_value;
			else if (strcmp(s + 8, "epclntab") == 0)
				l->epclntab = sym.st_value;
			else if (strcmp(s + 8, "text") == 0)
				l->symtab_text = sym.st_value;
		}
		return;
	}
}

/* moduledata's first word (the table's address) and text start. */
static void read_module(Elf *elf, struct go_layout *l)
{
	static const char *const names[] = { ".go.module" };
	Elf_Scn *scn = section_named(elf, names, 1);
	Elf_Data *d;
	GElf_Shdr sh;

	if (scn && gelf_getshdr(scn, &sh) && sh.sh_size >= MODULE_TEXT_OFF + 8 &&
	    sh.sh_size <= (1u << 20) && (d = elf_getdata(scn, NULL)) && d->d_buf &&
	    d->d_size >= MODULE_TEXT_OFF + 8) {
		l->module_table = u64_at(d->d_buf);
		l->module_text = u64_at((const uint8_t *)d->d_buf + MODULE_TEXT_OFF);
		if (d->d_size >= MODULE_GOFUNC_OFF_1_20 + 8)
			l->module_gofunc = u64_at((const uint8_t *)d->d_buf +
						  MODULE_GOFUNC_OFF_1_20);
	}
}

/* The text start of the table at table_vaddr: the module data's when it
 * is that table's, else runtime.text, else 0. */
static uint64_t text_start(const struct go_layout *l, uint64_t table_vaddr)
{
	return l->module_table == table_vaddr && l->module_text ? l->module_text
								: l->symtab_text;
}

static int too_big(const char *name)
{
	elf__refuse(ELF_REFUSED_GOPCLNTAB, name, "Go function table over its bound");
	return -E2BIG;
}

/* Whether a header of a table this reads starts at p (8 bytes). */
static bool header_at(const uint8_t *p)
{
	uint32_t m = u32_at(p);

	return (m == MAGIC_1_2 || m == MAGIC_1_16 || m == MAGIC_1_18 || m == MAGIC_1_20) &&
	       !p[4] && !p[5] && (p[6] == 1 || p[6] == 2 || p[6] == 4) && p[7] == PTR;
}

/* Searches read-only, non-executable PT_LOAD segments for a header that
 * opens as a table; reads [header, segment end) into out->owned. */
static int scan_segments(Elf *elf, int fd, const struct go_layout *l, struct go_image *out)
{
	size_t phnum = 0;
	uint8_t *buf;
	int err = -ENOENT;

	if (fd < 0 || elf_getphdrnum(elf, &phnum) != 0)
		return -ENOENT;
	buf = malloc(SCAN_CHUNK);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < phnum && err == -ENOENT; i++) {
		uint64_t scanned = 0;
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_X | PF_W)) || ph.p_filesz < 16)
			continue;
		while (scanned + 16 <= ph.p_filesz && scanned < GOPCLNTAB_SCAN_MAX && err == -ENOENT) {
			size_t want = ph.p_filesz - scanned < SCAN_CHUNK ? ph.p_filesz - scanned
									 : SCAN_CHUNK;
			ssize_t got = pread(fd, buf, want, (off_t)(ph.p_offset + scanned));

			if (got < 16)
				break;
			for (size_t at = (8 - (ph.p_vaddr + scanned) % 8) % 8; at + 8 <= (size_t)got;
			     at += 8) {
				uint64_t off = scanned + at, size = ph.p_filesz - off;
				struct gopclntab t;
				uint8_t *table;

				if (!header_at(buf + at))
					continue;
				if (size > GOPCLNTAB_BYTES_MAX)
					size = GOPCLNTAB_BYTES_MAX;
				table = malloc(size);
				if (!table) {
					err = -ENOMEM;
					break;
				}
				if (pread(fd, table, size, (off_t)(ph.p_offset + off)) == (ssize_t)size &&
				    gopclntab__open(&t, table, size,
						    text_start(l, ph.p_vaddr + off)) == 0) {
					*out = (struct go_image){ .data = table, .size = size,
						.vaddr = ph.p_vaddr + off, .found_by = "scan",
						.owned = table };
					err = 0;
					break;
				}
				free(table);
			}
			scanned += (uint64_t)got > 8 ? (uint64_t)got - 8 : (uint64_t)got;
		}
	}
	free(buf);
	return err;
}

/* Whether a PT_NOTE segment holds Go's build id note (owner "Go"). */
static bool go_note(Elf *elf)
{
	size_t phnum = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    ph.p_filesz > ELF_NOTE_MAX)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
			if (nh.n_namesz == 3 && memcmp((char *)d->d_buf + name_off, "Go", 3) == 0)
				return true;
	}
	return false;
}

/* Whether elf is a Go binary: worth a symbol lookup or a segment search
 * (a C library is neither). */
static bool is_go(Elf *elf)
{
	static const char *const marks[] = { ".go.buildinfo", ".note.go.buildid" };

	return section_named(elf, marks, 2) || go_note(elf);
}

/* The table between the runtime.pclntab and runtime.epclntab symbols. */
static int symbol_image(Elf *elf, const char *name, const struct go_layout *l,
			struct go_image *out)
{
	uint64_t size = l->epclntab - l->pclntab;
	int64_t off;
	Elf_Data *d;

	if (size > GOPCLNTAB_BYTES_MAX)
		return too_big(name);
	off = file_offset(elf, l->pclntab, size);
	d = off < 0 ? NULL : elf_getdata_rawchunk(elf, off, size, ELF_T_BYTE);
	if (!d || !d->d_buf)
		return -ENOENT;
	*out = (struct go_image){ .data = d->d_buf, .size = d->d_size, .vaddr = l->pclntab,
				  .found_by = "symbol" };
	return 0;
}

int go_image__read(Elf *elf, int fd, const char *name, struct go_image *out)
{
	static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab" };
	Elf_Scn *scn = section_named(elf, names, 2);
	struct go_layout l = { 0 };
	GElf_Shdr sh;
	int err;

	memset(out, 0, sizeof(*out));
	if (scn && gelf_getshdr(scn, &sh) && sh.sh_size >= 16) {
		Elf_Data *d;

		if (sh.sh_size > GOPCLNTAB_BYTES_MAX)
			return too_big(name);
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 16)
			return -ENOENT;
		*out = (struct go_image){ .data = d->d_buf, .size = d->d_size,
					  .vaddr = sh.sh_addr, .found_by = "section" };
		read_module(elf, &l);
		if (!l.module_text || !l.module_gofunc) /* the .symtab only when the module data says nothing */
			read_symbols(elf, &l);
	} else {
		if (!is_go(elf))
			return -ENOENT;
		read_module(elf, &l);
		read_symbols(elf, &l);
		err = l.pclntab && l.epclntab > l.pclntab + 16 ? symbol_image(elf, name, &l, out)
							       : scan_segments(elf, fd, &l, out);
		if (err)
			return err;
	}
	if (!header_at(out->data)) {
		go_image__release(out);
		return -ENOENT;
	}
	out->text_start = text_start(&l, out->vaddr);
	out->gofunc = l.module_table == out->vaddr && l.module_gofunc ? l.module_gofunc
								     : l.symtab_gofunc;
	return 0;
}

/* Whether [vaddr, vaddr + len) lies in a read-only PT_LOAD's file bytes. */
static bool read_only(Elf *elf, uint64_t vaddr, uint64_t len)
{
	size_t phnum = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    !(ph.p_flags & PF_W) && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr <= ph.p_filesz &&
		    len <= ph.p_filesz - (vaddr - ph.p_vaddr))
			return true;
	}
	return false;
}

/* go:func.* of a stripped 1.18+ binary, from its module data: found in the
 * writable segments as the words {table address, table address +
 * funcnames offset}. 0 when not found or not in a read-only segment. */
static uint64_t module_gofunc(Elf *elf, int fd, const struct go_image *img,
			      const struct gopclntab *t)
{
	uint64_t at = t->version >= GOPCLNTAB_1_20 ? MODULE_GOFUNC_OFF_1_20
						     : MODULE_GOFUNC_OFF_1_18;
	size_t phnum = 0;
	uint64_t found = 0;
	uint8_t *buf;

	if (fd < 0 || elf_getphdrnum(elf, &phnum) != 0 || !(buf = malloc(SCAN_CHUNK)))
		return 0;
	for (size_t i = 0; i < phnum && !found; i++) {
		uint64_t scanned = 0;
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_W))
			continue;
		while (!found && scanned + at + 8 <= ph.p_filesz && scanned < GOPCLNTAB_SCAN_MAX) {
			uint64_t want = ph.p_filesz - scanned < SCAN_CHUNK ? ph.p_filesz - scanned
									   : SCAN_CHUNK;
			ssize_t got = pread(fd, buf, want, (off_t)(ph.p_offset + scanned));

			if (got < (ssize_t)(at + 8))
				break;
			for (size_t o = (8 - (ph.p_vaddr + scanned) % 8) % 8; o + at + 8 <= (size_t)got;
			     o += 8)
				if (u64_at(buf + o) == img->vaddr &&
				    u64_at(buf + o + 8) == img->vaddr + t->funcnames) {
					found = u64_at(buf + o + at);
					break;
				}
			if ((uint64_t)got < want || scanned + want >= ph.p_filesz)
				break;
			/* a chunk's tail could hold the start of the module data */
			scanned += (uint64_t)got - at - 8;
		}
	}
	free(buf);
	return found && read_only(elf, found, 1) ? found : 0;
}

int go_image__open(Elf *elf, int fd, const char *name, struct go_image *img,
		   struct gopclntab *t)
{
	int err = go_image__read(elf, fd, name, img);

	if (err)
		return err;
	if (gopclntab__open(t, img->data, img->size, img->text_start)) {
		elf__refuse(ELF_REFUSED_GOPCLNTAB, name, "Go function table unreadable");
		go_image__release(img);
		return -ENOENT;
	}
	return 0;
}

void go_image__find_gofunc(Elf *elf, int fd, struct go_image *img, const struct gopclntab *t)
{
	if (t->version >= GOPCLNTAB_1_18 && !img->gofunc)
		img->gofunc = module_gofunc(elf, fd, img, t);
}

void go_image__release(struct go_image *img)
{
	free(img->owned);
	memset(img, 0, sizeof(*img));
}
