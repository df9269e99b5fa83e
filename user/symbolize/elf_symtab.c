// SPDX-License-Identifier: BSD-2-Clause
/* Function symbols of one ELF file, read with libelf.
 *
 * DESIGN: a load picks one source of symbols (see elf_symtab.h for the
 * order), collects its function symbols as raw entries whose names are
 * where the file has them (read again a window at a time, sym_reader.h,
 * never the section whole) or in libelf's data (an image in memory), then
 * sorts them, keeps one symbol per address, demangles the survivors and
 * keeps their names (sym_names.h). Only the
 * main file's PT_LOAD segments are kept, to turn the file offsets of mapped
 * addresses into ELF virtual addresses. Every size read from a file is
 * checked (libelf bounds section data and strings by the file size; we
 * bound counts, note sizes and decompressed sizes), so a hostile or
 * truncated file costs an error, not a crash.
 *
 * Bounds, all checked before the allocation they guard (a file a container
 * controls can claim anything): the file under ELF_FILE_MAX (the safe
 * opener), section and segment counts (elf__begin_fd), notes (core/elf.c);
 * here: the symbol and string sections read at most SECTION_FACTOR times
 * the table bound, function symbols at most bound / sizeof(struct sym),
 * name bytes at most the bound as held (deflated or not, sym_names.h) and
 * four times it as demangled, each name cut to SYMTAB_NAME_MAX, and the
 * finished table within the bound (the caller passes a quarter of its
 * symbol cache). C++ and Rust names are demangled only when short enough, into a
 * bounded buffer: a 233-byte name can demangle to 100 MB, so the demangler
 * writes through a callback that gives up past DEMANGLE_OUT_MAX bytes and
 * the name stays mangled. Every refusal is counted (elf__refuse). Debug
 * files are opened only through the safe opener, inside the process's
 * root. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <lzma.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/crc_writer.h"
#include "core/debug_file.h"
#include "core/elf.h"
#include "core/gopclntab.h"
#include "core/log.h"
#include "core/safe_open.h"
#include "symbolize/demangle.h"
#include "symbolize/elf_symtab.h"
#include "symbolize/sym_names.h"
#include "symbolize/sym_reader.h"

/* libstdc++'s demangler writing through a callback, without a heap: no C
 * header declares it, and only the static libstdc++.a exports it (the
 * Makefile links that archive for it). 0 on success, -1 when name is not
 * a mangled name. */
int __gcclibcxx_demangle_callback(const char *name,
				  void (*out)(const char *s, size_t n, void *opaque),
				  void *opaque);

#define MINIDEBUG_MAX		(64u << 20)	/* decompressed .gnu_debugdata */
#define XZ_MEMLIMIT		(64u << 20)
#define IMAGE_MAX		(64u << 20)	/* symtab__load_mem */
#define SHSTRTAB_MAX		(1u << 20)	/* section names */
#define SECTION_FACTOR		2		/* symbol/string section read vs the table bound */
#define DEMANGLE_IN_MAX		1024		/* longer mangled names stay mangled */
#define DEMANGLE_OUT_MAX	(64u << 10)	/* demangler output that marks a bomb */

struct seg {
	uint64_t offset, filesz, vaddr;
};

/* A Go binary's source positions: a copy of its function table, and the
 * entries of its functions' inline trees. */
struct go_source {
	uint8_t *table;
	struct gopclntab t;
	uint32_t *inl_first;	/* per function: its first entry in inl, or NO_TREE */
	uint32_t *inl_count;
	struct go_inlined *inl;
	size_t ninl, inl_cap;
};

#define NO_TREE UINT32_MAX

_Static_assert(SYMTAB_NAME_MAX == SYM_NAMES_NAME_MAX, "one bound on a name");

/* A symbol; its name is the table's name of the same index. */
struct sym_entry {
	uint64_t start, size;
};

struct symtab {
	struct sym_entry *syms;
	size_t count;
	struct sym_names names;	/* demangled, in the order of syms */
	struct seg *segs;
	size_t nsegs;
	const char *source;
	char build_id[2 * ELF_BUILD_ID_MAX + 1];
	struct go_source *go;	/* NULL: not Go, or no room for it */
};

struct raw_sym {
	uint64_t start, size;
	union {
		const char *name;	/* in libelf's data: valid until elf_end */
		uint64_t name_off;	/* reader: in the loader's readers[reader - 1] */
	};
	unsigned rank;		/* 0 global, 1 weak, 2 local, 3 untyped label */
	bool plt;		/* a PLT stub that jumps to name: "name@plt" */
	uint8_t reader;		/* 0: name */
};

/* The sections a load reads from its file a piece at a time: the source's
 * symbols, and .dynsym for the PLT's stubs. */
enum { READER_SYMS, READER_PLT, READERS };

/* State of one load; everything here is released by loader_release. */
struct loader {
	size_t max_bytes;	/* the table bound */
	const char *name;	/* the main file, for logs */
	const char *aux_name;	/* the debug file, for logs */
	const char *fetched;	/* a debug file a debuginfod client fetched, or NULL */
	Elf *elf;		/* the main file */
	Elf *aux;		/* debug file or MiniDebugInfo image */
	int aux_fd;
	void *aux_image;	/* decompressed MiniDebugInfo */
	struct raw_sym *raw;
	size_t nraw, capraw;
	Elf_Scn *symtab, *dynsym, *debugdata, *debuglink;
	Elf_Scn *rela_plt, *plt, *plt_sec;
	struct go_image go;	/* a Go binary's function table, names in it */
	struct gopclntab go_table;	/* open on go's bytes when go_open */
	bool go_open;
	int fd;			/* the main file, -1: an image in memory */
	struct sym_reader readers[READERS];
	bool reading[READERS];
	char cmp_name[SYM_READER_NAME_MAX + 1];	/* raw_cmp's first name */
};

static void reader_close(struct loader *ld, int which)
{
	if (ld->reading[which])
		sym_reader__close(&ld->readers[which]);
	ld->reading[which] = false;
}

/* Opens reader which on section sh of elf (open on fd) and its strings,
 * unless raw symbols still name the one open. */
static int reader_open(struct loader *ld, int which, Elf *elf, int fd, const GElf_Shdr *sh,
		       const GElf_Shdr *strsh)
{
	int err;

	for (size_t i = 0; i < ld->nraw; i++)
		if (ld->raw[i].reader == which + 1)
			return -EINVAL;
	reader_close(ld, which);
	err = sym_reader__open(&ld->readers[which], elf, fd, sh, strsh);
	ld->reading[which] = !err;
	return err;
}

/* The file elf was opened on, -1: an image in memory. */
static int file_of(const struct loader *ld, Elf *elf)
{
	return elf == ld->elf ? ld->fd : elf == ld->aux ? ld->aux_fd : -1;
}

/* Whether section sh of elf, with its strings (*strsh), is read from its
 * file a piece at a time: its file's descriptor, or -1 (libelf reads it
 * whole: an image in memory, a compressed section, or one libelf refuses). */
static int piecewise(Elf *elf, int fd, const GElf_Shdr *sh, GElf_Shdr *strsh)
{
	return fd >= 0 && gelf_getshdr(elf_getscn(elf, sh->sh_link), strsh) &&
	       sym_reader__usable(elf, fd, sh, strsh) ? fd : -1;
}

static void loader_release(struct loader *ld)
{
	for (int i = 0; i < READERS; i++)
		reader_close(ld, i);
	elf_end(ld->aux);
	ld->aux = NULL;
	if (ld->aux_fd >= 0)
		close(ld->aux_fd);
	ld->aux_fd = -1;
	free(ld->aux_image);
	ld->aux_image = NULL;
	go_image__release(&ld->go);
}

/* Function symbols beyond the table bound could never be kept: each costs
 * at least a struct sym in the table. */
static size_t max_syms(const struct loader *ld)
{
	return ld->max_bytes / sizeof(struct sym);
}

static int raw_push(struct loader *ld, const struct raw_sym *r)
{
	if (ld->nraw == ld->capraw) {
		size_t cap = ld->capraw ? ld->capraw * 2 : 256;
		struct raw_sym *v;

		if (cap > max_syms(ld))
			cap = max_syms(ld);
		if (ld->nraw >= cap) {
			elf__refuse(ELF_REFUSED_SYMBOLS, ld->name,
				    "more function symbols than the table bound allows");
			return -EFBIG;
		}
		v = realloc(ld->raw, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ld->raw = v;
		ld->capraw = cap;
	}
	ld->raw[ld->nraw++] = *r;
	return 0;
}

/* A symbol without a type names code when its section is executable: the
 * entry points written in assembly (ld.so's _start and _dl_start_user) are
 * such labels, sizeless. Compiler-local labels (.L*) and ARM mapping
 * symbols ($x, $d) name no function. */
static bool code_label(Elf *elf, const GElf_Sym *s, const char *name)
{
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (name[0] == '$' || (name[0] == '.' && name[1] == 'L'))
		return false;
	if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE)
		return false;
	scn = elf_getscn(elf, s->st_shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* true when a section of size bytes may be read for a table of the
 * loader's bound; else counted. */
static bool section_fits(const struct loader *ld, const char *file, uint64_t size,
			 const char *what)
{
	if (size <= (uint64_t)ld->max_bytes * SECTION_FACTOR)
		return true;
	elf__refuse(ELF_REFUSED_SECTION, file, what);
	return false;
}

/* A SHT_SYMTAB/SHT_DYNSYM section's header into *sh and its symbols'
 * count into *n, once it and its string table are checked well-formed
 * (-EINVAL) and within the bound (-EFBIG): reading them reads both whole.
 * file: for logs. */
static int symbol_section(struct loader *ld, Elf *elf, Elf_Scn *scn, const char *file,
			  GElf_Shdr *sh, size_t *n)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	GElf_Shdr strsh;
	Elf_Scn *strscn;

	if (!gelf_getshdr(scn, sh) || entsize == 0 || sh->sh_entsize != entsize)
		return -EINVAL;
	*n = sh->sh_size / entsize;
	if (*n > INT_MAX || !section_fits(ld, file, sh->sh_size, "symbol section over twice the table bound"))
		return -EFBIG;
	strscn = elf_getscn(elf, sh->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB)
		return -EINVAL;
	/* elf_strptr reads the whole string section on first use. */
	if (!section_fits(ld, file, strsh.sh_size, "string section over twice the table bound"))
		return -EFBIG;
	return 0;
}

/* Appends s, a symbol named name (read again from ld->readers[reader -
 * 1] when reader is not 0), when it is a function or a label in an
 * executable section: 0, 1 when passed over, or -errno. */
static int consider_sym(struct loader *ld, Elf *elf, const GElf_Sym *s, const char *name,
			uint8_t reader)
{
	struct raw_sym r = { .plt = false };
	int type = GELF_ST_TYPE(s->st_info), bind = GELF_ST_BIND(s->st_info);

	if (!name[0] || (type == STT_NOTYPE && !code_label(elf, s, name)))
		return 1;
	/* A function of the same address wins over a label. */
	r.rank = type == STT_NOTYPE ? 3 : bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	r.start = s->st_value;
	r.size = s->st_size;
	r.reader = reader;
	if (reader)
		r.name_off = s->st_name;
	else
		r.name = name;
	return raw_push(ld, &r);
}

static bool wanted(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE) &&
	       s->st_shndx != SHN_UNDEF && s->st_name != 0;
}

/* collect_syms for a section read from its file a piece at a time. */
static int collect_from_file(struct loader *ld, Elf *elf, int fd, const GElf_Shdr *sh,
			     const GElf_Shdr *strsh, size_t n)
{
	struct sym_reader *r = &ld->readers[READER_SYMS];
	int err = reader_open(ld, READER_SYMS, elf, fd, sh, strsh);

	if (err)
		return err;
	for (size_t i = 1; i < n; i++) {
		const char *name;
		GElf_Sym s;

		if (sym_reader__sym(r, i, &s))
			return -EINVAL;
		if (!wanted(&s))
			continue;
		name = sym_reader__name(r, s.st_name);
		if (!name)
			return -EINVAL;
		err = consider_sym(ld, elf, &s, name, READER_SYMS + 1);
		if (err < 0)
			return err;
	}
	return 0;
}

/* Appends the defined function symbols (and labels in executable sections)
 * of a SHT_SYMTAB/SHT_DYNSYM section. -EINVAL when the section or its
 * string table is malformed, -EFBIG when one is over its bound. file: for
 * logs. A file's sections are read a piece at a time (sym_reader.h), an
 * image's in place. */
static int collect_syms(struct loader *ld, Elf *elf, Elf_Scn *scn, const char *file)
{
	GElf_Shdr sh, strsh;
	Elf_Data *data;
	size_t n;
	int err = symbol_section(ld, elf, scn, file, &sh, &n);
	int fd;

	if (err)
		return err;
	fd = piecewise(elf, file_of(ld, elf), &sh, &strsh);
	if (fd >= 0)
		return collect_from_file(ld, elf, fd, &sh, &strsh, n);
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return n ? -EINVAL : 0;
	for (size_t i = 1; i < n; i++) {
		const char *name;
		GElf_Sym s;

		if (!gelf_getsym(data, (int)i, &s))
			return -EINVAL;
		if (!wanted(&s))
			continue;
		/* elf_strptr checks the offset and the terminating NUL. */
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name)
			return -EINVAL;
		err = consider_sym(ld, elf, &s, name, 0);
		if (err < 0)
			return err;
	}
	return 0;
}

static int read_segments(struct symtab *st, Elf *elf)
{
	size_t phnum, n = 0;

	/* elf__begin_* bounded phnum by ELF_SEGMENTS_MAX. */
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum > ELF_SEGMENTS_MAX)
		return -EINVAL;
	if (phnum == 0)
		return 0;
	st->segs = calloc(phnum, sizeof(*st->segs));
	if (!st->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || ph.p_filesz == 0)
			continue;
		st->segs[n].offset = ph.p_offset;
		st->segs[n].filesz = ph.p_filesz;
		st->segs[n].vaddr = ph.p_vaddr;
		n++;
	}
	st->nsegs = n;
	if (n == 0) {
		free(st->segs);
		st->segs = NULL;
	} else if (n < phnum) {
		struct seg *s = realloc(st->segs, n * sizeof(*s));

		if (s)
			st->segs = s;
	}
	return 0;
}

/* libelf quietly reports no program or section headers when the tables
 * lie past the end of the file; a truncated file is an error for us. */
/* Remembers the sections a load may use. -EINVAL when any section header
 * cannot be read: the file is truncated or corrupt. */
static int scan_sections(struct loader *ld)
{
	size_t shnum, shstrndx;

	Elf_Scn *names;
	GElf_Shdr nsh;

	if (elf_getshdrnum(ld->elf, &shnum) != 0 ||
	    elf_getshdrstrndx(ld->elf, &shstrndx) != 0)
		return -EINVAL;
	/* elf_strptr below reads the whole section-name table. */
	names = elf_getscn(ld->elf, shstrndx);
	if (names && gelf_getshdr(names, &nsh) && nsh.sh_size > SHSTRTAB_MAX) {
		elf__refuse(ELF_REFUSED_SECTION, ld->name, "section names over 1 MiB");
		return -EFBIG;
	}
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(ld->elf, i);
		const char *name;
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (sh.sh_type == SHT_SYMTAB && !ld->symtab)
			ld->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !ld->dynsym)
			ld->dynsym = scn;
		if (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_RELA)
			continue;
		name = elf_strptr(ld->elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type == SHT_RELA) {
			if (strcmp(name, ".rela.plt") == 0)
				ld->rela_plt = scn;
		} else if (strcmp(name, ".gnu_debugdata") == 0)
			ld->debugdata = scn;
		else if (strcmp(name, ".gnu_debuglink") == 0)
			ld->debuglink = scn;
		else if (strcmp(name, ".plt") == 0)
			ld->plt = scn;
		else if (strcmp(name, ".plt.sec") == 0)
			ld->plt_sec = scn;
	}
	return 0;
}

static Elf_Scn *find_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return scn;
	}
	return NULL;
}

/* Uses the .symtab of aux (taking ownership of aux and fd) when it has
 * function symbols; otherwise releases them. true when used. */
static bool use_aux(struct loader *ld, Elf *aux, int fd, void *image)
{
	Elf_Scn *scn = find_symtab(aux);

	ld->aux = aux;
	ld->aux_fd = fd;
	ld->aux_image = image;
	if (scn && collect_syms(ld, aux, scn, ld->aux_name) == 0 && ld->nraw > 0)
		return true;
	ld->nraw = 0;
	loader_release(ld);
	return false;
}

/* debug_file__find's accept: the candidate's .symtab, when it has function
 * symbols (use_aux keeps elf and fd, or releases both). */
static bool accept_debug_file(Elf *elf, int fd, const char *file, void *ctx)
{
	struct loader *ld = ctx;
	bool used;

	ld->aux_name = file;
	used = use_aux(ld, elf, fd, NULL);
	ld->aux_name = ld->name;
	if (used)
		pr_debug("debug file '%s': %zu function symbols", file, ld->nraw);
	return used;
}

/* Separate debug file by build id, then by .gnu_debuglink (core/debug_file.h). */
static bool load_debug_file(struct loader *ld, const struct symtab *st, int fd,
			    const char *root, const char *path)
{
	return debug_file__find(ld->elf, ld->debuglink, fd, st->build_id, root, path,
				accept_debug_file, ld);
}

/* Decompresses an xz stream into a new buffer of at most max bytes. */
static int xz_decode(const void *in, size_t in_len, size_t max, void **out, size_t *out_len)
{
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = in_len < max / 8 ? in_len * 8 + 4096 : max;
	uint8_t *buf = NULL, *p;
	lzma_ret ret;
	int err = 0;

	if (lzma_stream_decoder(&s, XZ_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	s.next_in = in;
	s.avail_in = in_len;
	s.next_out = buf;
	s.avail_out = cap;
	for (;;) {
		ret = lzma_code(&s, LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK) {
			err = ret == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
			goto cleanup;
		}
		if (s.avail_out == 0) {
			size_t used = cap;

			if (cap >= max) {
				err = -E2BIG;
				goto cleanup;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			p = realloc(buf, cap);
			if (!p) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = p;
			s.next_out = buf + used;
			s.avail_out = cap - used;
		}
	}
	*out_len = cap - s.avail_out;
	*out = buf;
	buf = NULL;
cleanup:
	free(buf);
	lzma_end(&s);
	return err;
}

/* MiniDebugInfo: the xz-compressed ELF in .gnu_debugdata, whose .symtab
 * holds the functions .dynsym lacks. */
static bool load_minidebuginfo(struct loader *ld)
{
	size_t max = ld->max_bytes * SECTION_FACTOR < MINIDEBUG_MAX ?
		     ld->max_bytes * SECTION_FACTOR : MINIDEBUG_MAX;
	GElf_Shdr sh;
	Elf_Data *d;
	void *image;
	size_t len;
	Elf *elf;
	int err;

	if (!gelf_getshdr(ld->debugdata, &sh))
		return false;
	if (sh.sh_size > max) {
		elf__refuse(ELF_REFUSED_SECTION, ld->name, ".gnu_debugdata over its bound");
		return false;
	}
	d = elf_getdata(ld->debugdata, NULL);
	if (!d || !d->d_buf)
		return false;
	err = xz_decode(d->d_buf, d->d_size, max, &image, &len);
	if (err == -E2BIG)
		elf__refuse(ELF_REFUSED_SECTION, ld->name, ".gnu_debugdata decompresses over its bound");
	if (err)
		return false;
	ld->aux_name = ld->name;
	elf = elf__begin_mem(image, len, ld->name);
	if (!elf) {
		free(image);
		return false;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		free(image);
		return false;
	}
	return use_aux(ld, elf, -1, image);
}

static unsigned leading_underscores(const char *s)
{
	unsigned n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* raw's name; NULL when its file cannot be read again. */
static const char *raw_name(struct loader *ld, const struct raw_sym *r)
{
	return r->reader ? sym_reader__name(&ld->readers[r->reader - 1], r->name_off) : r->name;
}

/* One symbol per address: global before weak before local, then the name
 * with fewer leading underscores (the public alias: malloc before
 * __libc_malloc), then the smaller name by strcmp, then the larger size.
 * (qsort_r: names are read only to order the symbols of one address.) */
static int raw_cmp(const void *a, const void *b, void *ctx)
{
	const struct raw_sym *x = a, *y = b;
	struct loader *ld = ctx;
	const char *nx, *ny;
	unsigned ux, uy;
	int c;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	/* the first name copied: reading the second may reuse its window */
	nx = raw_name(ld, x);
	snprintf(ld->cmp_name, sizeof(ld->cmp_name), "%s", nx ? nx : "");
	nx = ld->cmp_name;
	ny = raw_name(ld, y);
	if (!ny)
		ny = "";
	ux = leading_underscores(nx);
	uy = leading_underscores(ny);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	c = strcmp(nx, ny);
	if (c)
		return c;
	return x->size > y->size ? -1 : x->size < y->size;
}

/* The demangler's output, kept up to SYMTAB_NAME_MAX - 1 bytes; past
 * DEMANGLE_OUT_MAX the demangling is abandoned with a longjmp (libstdc++'s
 * callback demangler keeps its state on the stack: nothing leaks). */
struct demangled {
	char buf[SYMTAB_NAME_MAX];
	size_t len, total;
	jmp_buf bail;
};

static void demangle_sink(const char *s, size_t n, void *opaque)
{
	struct demangled *d = opaque;
	size_t room = sizeof(d->buf) - 1 - d->len;

	memcpy(d->buf + d->len, s, n < room ? n : room);
	d->len += n < room ? n : room;
	d->total += n;
	if (d->total > DEMANGLE_OUT_MAX)
		longjmp(d->bail, 1);
}

/* 1: d->buf holds the demangled name (cut; d->total is its full length);
 * 0: not a mangled name; -1: refused (too long to try, or a bomb). */
static int demangle(const char *name, struct demangled *d)
{
	int r;

	if (strnlen(name, DEMANGLE_IN_MAX + 1) > DEMANGLE_IN_MAX)
		return -1;
	/* Rust first: libstdc++ takes a legacy Rust name for C++ and keeps
	 * its hash and its $LT$ escapes. */
	r = demangle__rust(name, d->buf, sizeof(d->buf), DEMANGLE_OUT_MAX, &d->total);
	if (r)
		return r;
	d->len = d->total = 0;
	if (setjmp(d->bail))
		return -1;
	if (__gcclibcxx_demangle_callback(name, demangle_sink, d) != 0)
		return 0;
	d->buf[d->len] = '\0';
	return 1;
}

/* The name to keep for raw: demangled when it can be, cut to
 * SYMTAB_NAME_MAX - 1 bytes; *len: how many bytes of it to keep. */
static const char *symbol_name(struct loader *ld, const char *raw, struct demangled *d,
			       size_t *len)
{
	const char *name = raw;
	size_t full;
	int r = 0;

	if (raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')) {
		r = demangle(raw, d);
		if (r < 0)
			elf__refuse(ELF_REFUSED_DEMANGLE, ld->name,
				    "mangled name too long or demangling too large: kept mangled");
	}
	if (r > 0) {
		name = d->buf;
		full = d->total;
	} else {
		full = strnlen(raw, SYMTAB_NAME_MAX);
	}
	*len = full < SYMTAB_NAME_MAX ? full : SYMTAB_NAME_MAX - 1;
	if (full >= SYMTAB_NAME_MAX)
		elf__refuse(ELF_REFUSED_NAME_LONG, ld->name, "names cut to 1023 bytes");
	return name;
}

/* Sorts and deduplicates the raw symbols, demangles, fills st. */
static int build_table(struct symtab *st, struct loader *ld)
{
	struct demangled *dem = NULL;
	char plt_name[SYMTAB_NAME_MAX];
	struct sym_names_builder names;
	size_t n = 0;
	uint64_t covered = 0;   /* end of the sized functions so far */
	int err = 0;

	if (ld->nraw == 0)
		return 0;
	qsort_r(ld->raw, ld->nraw, sizeof(*ld->raw), raw_cmp, ld);
	sym_names__builder_init(&names, ld->max_bytes);
	st->syms = calloc(ld->nraw, sizeof(*st->syms));
	dem = malloc(sizeof(*dem));
	if (!st->syms || !dem) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < ld->nraw; i++) {
		const struct raw_sym *r = &ld->raw[i];
		const char *name;
		size_t len;

		if (r->size && r->start + r->size > covered && (r->rank < 3 || r->start >= covered))
			covered = r->start + r->size;
		if (n && st->syms[n - 1].start == r->start) {
			/* An alias with a size tells the extent of a sizeless one. */
			if (st->syms[n - 1].size == 0)
				st->syms[n - 1].size = r->size;
			continue;
		}
		/* A label inside a function is a branch target, not a name. */
		if (r->rank == 3 && r->start < covered && r->size == 0)
			continue;
		name = raw_name(ld, r);
		if (!name) {
			err = -EIO;     /* the file changed under the load */
			goto cleanup;
		}
		name = symbol_name(ld, name, dem, &len);
		if (r->plt) {
			int k = snprintf(plt_name, sizeof(plt_name), "%.*s@plt", (int)len, name);

			name = plt_name;
			len = k < 0 ? 0 : (size_t)k < sizeof(plt_name) ? (size_t)k : sizeof(plt_name) - 1;
		}
		err = sym_names__add(&names, name, len);
		if (err) {
			if (err == -EFBIG)
				elf__refuse(ELF_REFUSED_NAMES, ld->name,
					    "symbol names over the table bound");
			goto cleanup;
		}
		st->syms[n].start = r->start;
		st->syms[n].size = r->size;
		n++;
	}
	if (n < ld->nraw) {
		struct sym_entry *s = realloc(st->syms, n * sizeof(*s));

		if (s)
			st->syms = s;
	}
	err = sym_names__finish(&names, &st->names);
	if (err)
		goto cleanup;
	st->count = n;
	if (symtab__bytes(st) > ld->max_bytes) {
		elf__refuse(ELF_REFUSED_TABLE, ld->name,
			    "symbol table over a quarter of --symbol-cache: raise it to name this file");
		err = -EFBIG;
	}
cleanup:
	sym_names__builder_release(&names);
	free(dem);
	return err;
}

/* Functions of a Go binary's function table (core/gopclntab.h), which
 * stripped Go binaries keep: 1, 0 when there is none, or -errno. */
static int collect_go(struct loader *ld)
{
	const struct gopclntab *t = &ld->go_table;
	int err = 0;

	if (!ld->go_open)
		return 0;
	for (uint64_t i = 0; i < t->nfunc && !err; i++) {
		struct go_func f;

		if (gopclntab__func(t, i, &f) == 0 && f.name[0])
			err = raw_push(ld, &(struct raw_sym){ .start = f.entry,
							      .size = f.end - f.entry,
							      .name = f.name });
	}
	return err ? err : 1;
}

static void go_source_free(struct go_source *gs)
{
	if (!gs)
		return;
	free(gs->table);
	free(gs->inl_first);
	free(gs->inl_count);
	free(gs->inl);
	free(gs);
}

static size_t go_source_bytes(const struct go_source *gs)
{
	return gs ? sizeof(*gs) + gs->t.size + gs->t.nfunc * 2 * sizeof(uint32_t) +
			    gs->inl_cap * sizeof(*gs->inl) : 0;
}

/* Reads function f's (index i) inline tree at vaddr, count entries, into
 * gs; a tree with an entry that lies (a parent pc outside f, a name outside
 * the table) is left out whole: 1 when read, 0 when left out, or -ENOMEM. */
static int read_inline_tree(struct go_source *gs, struct loader *ld, int fd, uint64_t i,
			    const struct go_func *f, uint64_t vaddr, uint32_t count)
{
	size_t esize = gopclntab__inline_entry_size(&gs->t);
	uint8_t buf[64];

	if (gs->ninl + count > gs->inl_cap) {
		size_t cap = gs->inl_cap ? gs->inl_cap * 2 : 1024;
		struct go_inlined *v;

		while (cap < gs->ninl + count)
			cap *= 2;
		v = realloc(gs->inl, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		gs->inl = v;
		gs->inl_cap = cap;
	}
	for (uint32_t k = 0; k < count; k++) {
		struct go_inlined *in = &gs->inl[gs->ninl + k];

		if (go_image__read_at(ld->elf, fd, vaddr + k * esize, buf, esize) ||
		    gopclntab__inline_entry(&gs->t, buf, count, in) || in->parent_pc < 0 ||
		    (uint64_t)in->parent_pc >= f->end - f->entry)
			return 0;
	}
	gs->inl_first[i] = gs->ninl;
	gs->inl_count[i] = count;
	gs->ninl += count;
	return 1;
}

/* Keeps a Go binary's function table and inline trees for
 * symtab__source_frames, when they fit half the table bound (the names
 * need the rest); beyond it the names stay and the refusal is counted. */
static int load_go_source(struct symtab *st, struct loader *ld, int fd)
{
	struct go_source *gs;
	uint8_t slots[3];
	unsigned nslots;
	int err = 0;

	if (ld->go.size + ld->go_table.nfunc * 2 * sizeof(uint32_t) > ld->max_bytes / 2) {
		elf__refuse(ELF_REFUSED_TABLE, ld->name,
			    "Go source lines over half the table bound: names only");
		return 0;
	}
	gs = calloc(1, sizeof(*gs));
	if (!gs)
		return -ENOMEM;
	gs->table = malloc(ld->go.size);
	gs->inl_first = malloc(ld->go_table.nfunc * sizeof(uint32_t));
	gs->inl_count = calloc(ld->go_table.nfunc, sizeof(uint32_t));
	if (!gs->table || !gs->inl_first || !gs->inl_count) {
		go_source_free(gs);
		return -ENOMEM;
	}
	go_image__find_gofunc(ld->elf, fd, &ld->go, &ld->go_table);
	memcpy(gs->table, ld->go.data, ld->go.size);
	gs->t = ld->go_table;
	gs->t.data = gs->table;
	memset(gs->inl_first, 0xff, ld->go_table.nfunc * sizeof(uint32_t));
	nslots = gopclntab__inline_slots(&gs->t, slots);
	for (uint64_t i = 0; fd >= 0 && i < gs->t.nfunc && err >= 0; i++) {
		struct go_func f;
		uint64_t vaddr;
		uint32_t count;

		err = 0;
		if (gopclntab__func(&gs->t, i, &f))
			continue;
		for (unsigned k = 0; k < nslots && !err; k++)
			if (gopclntab__inline_tree(&gs->t, &f, slots[k], ld->go.gofunc, &vaddr, &count))
				err = read_inline_tree(gs, ld, fd, i, &f, vaddr, count);
		if (err >= 0 && go_source_bytes(gs) > ld->max_bytes / 2) {
			elf__refuse(ELF_REFUSED_TABLE, ld->name,
				    "Go inline trees over half the table bound: names only");
			go_source_free(gs);
			return 0;
		}
	}
	if (err < 0) {
		go_source_free(gs);
		return err;
	}
	st->go = gs;
	return 0;
}

/* Names stub r after symbol i of .dynsym (header sh): read from the file
 * a piece at a time when fd is not -1 (r keeps the name's offset), else
 * from libelf's data. The name, NULL when it cannot be read. */
static const char *plt_symbol_name(struct loader *ld, int fd, const GElf_Shdr *sh, size_t i,
				   struct raw_sym *r)
{
	struct sym_reader *rd = &ld->readers[READER_PLT];
	Elf_Data *d;
	GElf_Sym s;

	if (fd < 0) {
		d = elf_getdata(ld->dynsym, NULL);
		if (!d || !gelf_getsym(d, (int)i, &s) || s.st_name == 0)
			return NULL;
		return r->name = elf_strptr(ld->elf, sh->sh_link, s.st_name);
	}
	if (sym_reader__sym(rd, i, &s) || s.st_name == 0)
		return NULL;
	r->reader = READER_PLT + 1;
	r->name_off = s.st_name;
	return sym_reader__name(rd, s.st_name);
}

/* The PLT's stubs, each as "name@plt" (perf's names): a sample in one is
 * a call on its way to name, through the GOT slot that relocation i of
 * .rela.plt fills. Stub i is at .plt.sec + 16 i where the linker made one
 * (x86-64 IBT), else at .plt + 16 i past its header (x86-64 16 bytes,
 * arm64 32): GNU ld's layout, taken only when the sizes say so exactly.
 * A file's .dynsym and .dynstr are read a piece at a time, not whole (7
 * MB for node's, whose .symtab names it).
 * Names only: a refusal leaves the stubs unnamed, nothing else. */
static void collect_plt(struct loader *ld)
{
	size_t entsize = gelf_fsize(ld->elf, ELF_T_RELA, 1, EV_CURRENT), n, header, nsyms;
	GElf_Shdr rsh, ssh, psh, strsh;
	Elf_Data *rels;
	GElf_Ehdr eh;
	int fd;
	Elf_Scn *stubs = ld->plt_sec ? ld->plt_sec : ld->plt;

	if (!ld->rela_plt || !stubs || !gelf_getehdr(ld->elf, &eh) ||
	    !gelf_getshdr(ld->rela_plt, &rsh) || !gelf_getshdr(stubs, &psh) || entsize == 0 ||
	    rsh.sh_entsize != entsize || !ld->dynsym || elf_getscn(ld->elf, rsh.sh_link) != ld->dynsym ||
	    symbol_section(ld, ld->elf, ld->dynsym, ld->name, &ssh, &nsyms))
		return;
	if (eh.e_machine == EM_X86_64)
		header = ld->plt_sec ? 0 : 16;
	else if (eh.e_machine == EM_AARCH64 && !ld->plt_sec)
		header = 32;
	else
		return;
	n = rsh.sh_size / entsize;
	if (psh.sh_size != header + 16 * (uint64_t)n ||
	    !section_fits(ld, ld->name, rsh.sh_size, "PLT relocations over twice the table bound"))
		return;
	rels = elf_getdata(ld->rela_plt, NULL);
	fd = piecewise(ld->elf, ld->fd, &ssh, &strsh);
	if (!rels || (fd >= 0 && reader_open(ld, READER_PLT, ld->elf, fd, &ssh, &strsh)))
		return;
	for (size_t i = 0; i < n; i++) {
		struct raw_sym r = { .start = psh.sh_addr + header + 16 * i, .size = 16, .rank = 2,
				     .plt = true };
		const char *name;
		size_t sym;
		GElf_Rela rel;

		if (!gelf_getrela(rels, (int)i, &rel))
			return;
		sym = GELF_R_SYM(rel.r_info);
		/* (0: an IFUNC resolved in place, no name) */
		if (sym == 0 || sym >= nsyms)
			continue;
		name = plt_symbol_name(ld, fd, &ssh, sym, &r);
		if (name && name[0] && raw_push(ld, &r))
			return;
	}
}

/* The table of what was collected, the PLT's stubs added. */
static int finish_table(struct symtab *st, struct loader *ld)
{
	collect_plt(ld);
	return build_table(st, ld);
}

/* The part shared by files and images. fd < 0: no debug files. */
static int load_elf(struct symtab *st, struct loader *ld, int fd, const char *root,
		    const char *path)
{
	int err;

	err = elf__check_headers(ld->elf);
	if (err)
		return err;
	err = read_segments(st, ld->elf);
	if (err)
		return err;
	err = elf__read_build_id(ld->elf, ld->name, st->build_id, sizeof(st->build_id));
	if (err && err != -ENOENT)
		return err;
	err = scan_sections(ld);
	if (err)
		return err;
	/* a Go binary's table names it when nothing else does, and gives
	 * every Go frame its file and line */
	ld->go_open = go_image__open(ld->elf, fd, ld->name, &ld->go, &ld->go_table) == 0;
	if (ld->go_open) {
		err = load_go_source(st, ld, fd);
		if (err)
			return err;
	}

	st->source = "symtab";
	if (ld->symtab) {
		err = collect_syms(ld, ld->elf, ld->symtab, ld->name);
		if (err)
			return err;
		if (ld->nraw)
			return finish_table(st, ld);
	}
	st->source = "debug-file";
	if (fd >= 0 && load_debug_file(ld, st, fd, root ? root : "", path))
		return finish_table(st, ld);
	/* Go's own table names every Go function; .dynsym adds cgo's. */
	st->source = "gopclntab";
	err = collect_go(ld);
	if (err > 0) {
		err = ld->dynsym ? collect_syms(ld, ld->elf, ld->dynsym, ld->name) : 0;
		return err ? err : finish_table(st, ld);
	}
	if (err)
		return err;
	/* MiniDebugInfo holds only the local symbols: .dynsym adds the rest. */
	st->source = "minidebuginfo";
	if (ld->debugdata && load_minidebuginfo(ld)) {
		err = ld->dynsym ? collect_syms(ld, ld->elf, ld->dynsym, ld->name) : 0;
		return err ? err : finish_table(st, ld);
	}
	st->source = "debuginfod";
	if (fd >= 0 && ld->fetched &&
	    debug_file__try(fd, st->build_id, ld->fetched, accept_debug_file, ld))
		return finish_table(st, ld);
	st->source = "dynsym";
	err = ld->dynsym ? collect_syms(ld, ld->elf, ld->dynsym, ld->name) : 0;
	if (err)
		return err;
	/* (a stripped program's .dynsym may hold none of its functions: its
	 * stubs are still named) */
	collect_plt(ld);
	if (ld->nraw)
		return build_table(st, ld);
	st->source = "none";
	return 0;
}

static struct symtab *load(Elf *elf, int fd, const char *root, const char *path,
			   size_t max_bytes, const char *fetched)
{
	struct loader ld = { .elf = elf, .aux_fd = -1, .max_bytes = max_bytes, .fetched = fetched,
			     .name = path ? path : "(elf image)", .fd = fd };
	struct symtab *st = calloc(1, sizeof(*st));
	int err = st ? load_elf(st, &ld, fd, root, path) : -ENOMEM;

	loader_release(&ld);
	free(ld.raw);
	if (err) {
		symtab__free(st);
		errno = -err;
		return NULL;
	}
	return st;
}

struct symtab *symtab__load_fd(int fd, const char *root, const char *path)
{
	return symtab__load(fd, root, path, SYMTAB_DEFAULT_MAX_BYTES);
}

struct symtab *symtab__load(int fd, const char *root, const char *path, size_t max_bytes)
{
	return symtab__load_with(fd, root, path, max_bytes, NULL);
}

struct symtab *symtab__load_with(int fd, const char *root, const char *path, size_t max_bytes,
				 const char *fetched)
{
	struct symtab *st;
	Elf *elf;
	int err;

	err = elf__ready();
	if (err) {
		errno = -err;
		return NULL;
	}
	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	/* Whoever opened fd: a regular file under the cap, or nothing. */
	err = safe_open__check_fd(fd, path ? path : "(fd)", ELF_FILE_MAX, NULL);
	if (err) {
		errno = -err;
		return NULL;
	}
	elf = elf__begin_fd(fd, path);
	if (!elf)
		return NULL;
	st = load(elf, fd, root, path, max_bytes, fetched);
	err = errno;
	elf_end(elf);
	if (!st) {
		pr_debug("elf '%s': no symbol table: %s", path ? path : "(fd)",
			 strerror(err));
		errno = err;
	}
	return st;
}

struct symtab *symtab__load_mem(const void *image, size_t size)
{
	struct symtab *st;
	void *copy;
	Elf *elf;
	int err;

	err = elf__ready();
	if (err) {
		errno = -err;
		return NULL;
	}
	if (!image || size == 0 || size > IMAGE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	/* libelf wants a writable image; the vDSO is not. */
	copy = malloc(size);
	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, image, size);
	elf = elf__begin_mem(copy, size, NULL);
	if (!elf) {
		err = errno;
		free(copy);
		errno = err;
		return NULL;
	}
	st = load(elf, -1, NULL, NULL, SYMTAB_DEFAULT_MAX_BYTES, NULL);
	err = errno;
	elf_end(elf);
	free(copy);
	errno = err;
	return st;
}

const struct sym *symtab__lookup(const struct symtab *st, uint64_t file_offset,
				 uint64_t *vaddr, struct sym *out)
{
	const struct seg *seg = NULL;
	size_t lo = 0, hi;
	uint64_t va;

	if (!st)
		return NULL;
	for (size_t i = 0; i < st->nsegs; i++) {
		if (file_offset >= st->segs[i].offset &&
		    file_offset - st->segs[i].offset < st->segs[i].filesz) {
			seg = &st->segs[i];
			break;
		}
	}
	if (!seg)
		return NULL;
	va = file_offset - seg->offset + seg->vaddr;
	if (vaddr)
		*vaddr = va;
	if (!st->count || va < st->syms[0].start)
		return NULL;
	hi = st->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->syms[mid].start <= va)
			lo = mid;
		else
			hi = mid;
	}
	if (st->syms[lo].size && va - st->syms[lo].start >= st->syms[lo].size)
		return NULL;
	*out = (struct sym){ st->syms[lo].start, st->syms[lo].size,
			     sym_names__get(&st->names, lo) };
	return out->name ? out : NULL;
}

size_t symtab__count(const struct symtab *st)
{
	return st ? st->count : 0;
}

size_t symtab__bytes(const struct symtab *st)
{
	if (!st)
		return 0;
	return sizeof(*st) + st->count * sizeof(*st->syms) + sym_names__bytes(&st->names) +
	       st->nsegs * sizeof(*st->segs) + go_source_bytes(st->go);
}

/* The source position at pc of function f (table index i): its file and
 * line. */
static struct src_frame go_position(const struct go_source *gs, const struct go_func *f,
				    const char *name, uint64_t pc)
{
	struct src_frame out = { .name = name };
	int32_t v;

	if (gopclntab__value_at(&gs->t, f, f->pcfile, pc, &v))
		out.file = gopclntab__file(&gs->t, f, v);
	if (gopclntab__value_at(&gs->t, f, f->pcln, pc, &v) && v > 0)
		out.line = (uint32_t)v;
	return out;
}

size_t symtab__source_frames(const struct symtab *st, uint64_t vaddr, struct src_frame *out,
			     size_t max)
{
	const struct go_source *gs = st ? st->go : NULL;
	uint64_t pc = vaddr;
	struct go_func f;
	int64_t i;
	size_t n = 0;

	if (!gs || !max || (i = gopclntab__find(&gs->t, vaddr)) < 0 ||
	    gopclntab__func(&gs->t, (uint64_t)i, &f))
		return 0;
	/* innermost first: each inlined call's position, then its caller's
	 * at the call site (the parent pc), up to the function itself */
	while (n + 1 < max && gs->inl_first[i] != NO_TREE) {
		uint32_t idx = UINT32_MAX;
		int32_t v;

		if (gopclntab__pcdata_at(&gs->t, &f, GO_PCDATA_INLINE_INDEX, pc, &v) && v >= 0)
			idx = (uint32_t)v;
		if (idx >= gs->inl_count[i])
			break;
		out[n] = go_position(gs, &f, gs->inl[gs->inl_first[i] + idx].name, pc);
		n++;
		pc = f.entry + (uint64_t)gs->inl[gs->inl_first[i] + idx].parent_pc;
	}
	out[n++] = go_position(gs, &f, f.name, pc);
	return n;
}

/* ---- the cache file (symtab__encode, symtab__decode) ----
 * A fixed header, the key, the segments, the symbols {start, size}, the
 * names' blocks {offset, inflated length} (sym_names.h), where each name
 * starts in its block, the names as the table holds them (deflated or
 * not) and a CRC-32 of everything before it. The reader checks every
 * count against the table bound and the file's size before it allocates,
 * the CRC, the key, and then the table as symtab__lookup uses it: starts
 * increasing, each name inside its block (sym_names__check; a deflated
 * block is checked when a lookup inflates it). */

#ifndef KILN_SYMTAB_LOADER
/* The Makefile sets it from the loader's sources. */
#define KILN_SYMTAB_LOADER 0ull
#endif

#define CACHE_MAGIC "KILNSYM\n"
#define CACHE_FORMAT 2u
#define CACHE_KEY_MAX 512u

/* The sources a cache file may hold: the file's own, or a debug file
 * whose identity the key holds. A Go binary's source positions and a
 * debuginfod download are not cached. */
static const char *const cached_sources[] = { "symtab", "debug-file", "minidebuginfo", "dynsym",
					      "none" };
#define CACHED_SOURCES (sizeof(cached_sources) / sizeof(cached_sources[0]))

struct cache_header {
	char magic[8];
	uint32_t format, key_len;
	uint64_t loader;
	uint64_t count, names_len;
	uint32_t nsegs, source;
	uint32_t deflated, reserved;
	char build_id[2 * ELF_BUILD_ID_MAX + 8];
};

_Static_assert(sizeof(struct cache_header) == 192, "symbol cache header layout");
_Static_assert(sizeof(struct sym_entry) == 16 && sizeof(struct sym_names_block) == 8,
	       "symbol cache layout");

/* Bytes of the symbols, blocks and names of a file with this header. */
static size_t cache_body(const struct cache_header *h)
{
	size_t nblocks = sym_names__nblocks(h->count);

	return h->count * (sizeof(struct sym_entry) + sizeof(uint32_t)) +
	       (nblocks ? (nblocks + 1) * sizeof(struct sym_names_block) : 0) + h->names_len;
}

/* debug_file__find's accept, for the key: the first candidate's identity. */
static bool note_debug_file(Elf *elf, int fd, const char *file, void *ctx)
{
	char **id = ctx;
	struct stat st;

	(void)file;
	if (fstat(fd, &st) == 0)
		snprintf(id[0], (size_t)(id[1] - id[0]), "%llu:%llu:%lld:%lld.%09ld",
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	elf_end(elf);
	close(fd);
	return true;
}

int symtab__debug_file_id(int fd, const char *root, const char *path, char *id, size_t len)
{
	struct loader ld = { .aux_fd = -1, .fd = -1, .name = path ? path : "(fd)" };
	char build_id[2 * ELF_BUILD_ID_MAX + 1] = "";
	char *span[2] = { id, id + len };
	int err = elf__ready();

	if (len < 2)
		return -EINVAL;
	snprintf(id, len, "-");
	if (err)
		return err;
	ld.elf = elf__begin_fd(fd, path);
	if (!ld.elf)
		return -errno;
	err = scan_sections(&ld);
	if (!err) {
		if (elf__read_build_id(ld.elf, ld.name, build_id, sizeof(build_id)))
			build_id[0] = '\0';
		debug_file__find(ld.elf, ld.debuglink, fd, build_id, root ? root : "", path,
				 note_debug_file, span);
	}
	elf_end(ld.elf);
	return err;
}

/* st's cache file header under key; -EINVAL for a table not cached. */
static int cache_header_of(const struct symtab *st, const char *key, struct cache_header *h)
{
	size_t klen = strlen(key), src;

	for (src = 0; src < CACHED_SOURCES; src++)
		if (strcmp(symtab__source(st), cached_sources[src]) == 0)
			break;
	if (st->go || src == CACHED_SOURCES || klen > CACHE_KEY_MAX)
		return -EINVAL;
	/* (zeroed whole: the padding goes into the crc and the file) */
	memset(h, 0, sizeof(*h));
	h->format = CACHE_FORMAT;
	h->loader = KILN_SYMTAB_LOADER;
	memcpy(h->magic, CACHE_MAGIC, sizeof(h->magic));
	h->key_len = (uint32_t)klen;
	h->count = st->count;
	h->names_len = st->names.len;
	h->deflated = st->names.deflated;
	h->nsegs = (uint32_t)st->nsegs;
	h->source = (uint32_t)src;
	snprintf(h->build_id, sizeof(h->build_id), "%s", st->build_id);
	return 0;
}

int symtab__cache_size(const struct symtab *st, const char *key, size_t *len)
{
	struct cache_header h;
	int err = cache_header_of(st, key, &h);

	if (!err)
		*len = sizeof(h) + h.key_len + st->nsegs * sizeof(struct seg) + cache_body(&h) +
		       sizeof(uint32_t);
	return err;
}

/* Writes st's cache file under key through w, every part as the table
 * holds it. 0, -EINVAL (not cached) or -EIO. */
static int write_cache(const struct symtab *st, const char *key, struct crc_writer *w)
{
	const struct sym_names *names = &st->names;
	struct cache_header h;
	int err = cache_header_of(st, key, &h);

	if (!err)
		err = crc_writer__put(w, &h, sizeof(h));
	if (!err)
		err = crc_writer__put(w, key, h.key_len);
	if (!err)
		err = crc_writer__put(w, st->segs, st->nsegs * sizeof(struct seg));
	if (!err)
		err = crc_writer__put(w, st->syms, st->count * sizeof(*st->syms));
	if (!err && names->nblocks)
		err = crc_writer__put(w, names->blocks, (names->nblocks + 1) * sizeof(*names->blocks));
	if (!err)
		err = crc_writer__put(w, names->refs, names->count * sizeof(*names->refs));
	if (!err)
		err = crc_writer__put(w, names->data, names->len);
	return err ? err : crc_writer__end(w);
}

int symtab__encode(const struct symtab *st, const char *key, uint8_t **buf, size_t *len)
{
	struct crc_writer w;
	uint8_t *p;
	size_t n;
	int err = symtab__cache_size(st, key, &n);

	if (err)
		return err;
	p = malloc(n);
	if (!p)
		return -ENOMEM;
	crc_writer__init(&w, NULL, p);
	write_cache(st, key, &w);
	*buf = p;
	*len = n;
	return 0;
}

int symtab__cache_write(const struct symtab *st, const char *key, FILE *f)
{
	struct crc_writer w;

	crc_writer__init(&w, f, NULL);
	return write_cache(st, key, &w);
}

/* The header's fields against the bounds and the file's length. */
static int cache_check(const struct cache_header *h, size_t len, size_t max_bytes)
{
	const char *end = memchr(h->build_id, '\0', 2 * ELF_BUILD_ID_MAX + 1);

	if (memcmp(h->magic, CACHE_MAGIC, sizeof(h->magic)) != 0)
		return -EBADMSG;
	if (h->format != CACHE_FORMAT || h->loader != KILN_SYMTAB_LOADER)
		return -ESTALE;
	if (h->key_len > CACHE_KEY_MAX || h->nsegs > ELF_SEGMENTS_MAX ||
	    h->source >= CACHED_SOURCES || (h->count && !h->names_len) || !end ||
	    h->deflated > 1 || h->reserved ||
	    strspn(h->build_id, "0123456789abcdef") != (size_t)(end - h->build_id))
		return -EBADMSG;
	if (h->count > max_bytes / sizeof(struct sym_entry) || h->names_len > max_bytes)
		return -EFBIG;
	if (len != sizeof(*h) + h->key_len + h->nsegs * sizeof(struct seg) + cache_body(h) +
			   sizeof(uint32_t))
		return -EBADMSG;
	return 0;
}

/* symtab__decode; with own (buf malloc'd, and freed here whatever
 * happens) the names are moved to buf's start and buf becomes their
 * storage: a table from the disk holds its names once, not twice. */
static int decode(uint8_t *buf, size_t len, bool own, const char *key, size_t max_bytes,
		  struct symtab **out)
{
	size_t klen = strlen(key), nblocks, blocks_len;
	struct cache_header h;
	struct symtab *st = NULL;
	const uint8_t *q, *names;
	uint32_t crc;
	int err = -EBADMSG;

	*out = NULL;
	if (len < sizeof(h) + sizeof(crc))
		goto fail;
	memcpy(&h, buf, sizeof(h));
	err = cache_check(&h, len, max_bytes);
	if (err)
		goto fail;
	err = -EBADMSG;
	memcpy(&crc, buf + len - sizeof(crc), sizeof(crc));
	if (crc != (uint32_t)crc32_z(crc32_z(0, NULL, 0), buf, len - sizeof(crc)))
		goto fail;
	err = -ENOENT;
	if (h.key_len != klen || memcmp(buf + sizeof(h), key, klen) != 0)
		goto fail;
	nblocks = sym_names__nblocks(h.count);
	blocks_len = nblocks ? (nblocks + 1) * sizeof(struct sym_names_block) : 0;
	q = buf + sizeof(h) + klen;
	/* (cache_check matched len to the parts: the names end before the crc) */
	names = buf + len - sizeof(crc) - h.names_len;
	err = -ENOMEM;
	st = calloc(1, sizeof(*st));
	if (!st)
		goto fail;
	st->segs = h.nsegs ? malloc(h.nsegs * sizeof(struct seg)) : NULL;
	st->syms = h.count ? malloc(h.count * sizeof(struct sym_entry)) : NULL;
	st->names.blocks = nblocks ? malloc(blocks_len) : NULL;
	st->names.refs = h.count ? malloc(h.count * sizeof(uint32_t)) : NULL;
	if ((h.nsegs && !st->segs) ||
	    (h.count && (!st->syms || !st->names.blocks || !st->names.refs)))
		goto fail;
	st->nsegs = h.nsegs;
	st->count = h.count;
	st->source = cached_sources[h.source];
	memcpy(st->build_id, h.build_id, sizeof(st->build_id) - 1);
	if (st->nsegs)
		memcpy(st->segs, q, st->nsegs * sizeof(struct seg));
	q += st->nsegs * sizeof(struct seg);
	if (st->count)
		memcpy(st->syms, q, st->count * sizeof(struct sym_entry));
	q += st->count * sizeof(struct sym_entry);
	if (nblocks)
		memcpy(st->names.blocks, q, blocks_len);
	q += blocks_len;
	if (st->count)
		memcpy(st->names.refs, q, st->count * sizeof(uint32_t));
	err = 0;
	for (size_t i = 1; i < st->count && !err; i++)
		if (st->syms[i].start <= st->syms[i - 1].start)
			err = -EBADMSG;
	if (err)
		goto fail;
	err = -ENOMEM;
	if (own && h.names_len) {
		memmove(buf, names, h.names_len);
		st->names.data = realloc(buf, h.names_len);
		if (!st->names.data)
			goto fail;      /* (buf is still ours) */
		buf = NULL;
	} else if (h.names_len) {
		st->names.data = malloc(h.names_len);
		if (!st->names.data)
			goto fail;
		memcpy(st->names.data, names, h.names_len);
	}
	st->names.len = h.names_len;
	st->names.count = st->count;
	st->names.nblocks = nblocks;
	st->names.deflated = h.deflated;
	err = sym_names__check(&st->names);
	if (!err && symtab__bytes(st) > max_bytes)
		err = -EFBIG;
	if (err)
		goto fail;
	if (own)
		free(buf);
	*out = st;
	return 0;
fail:
	symtab__free(st);
	if (own)
		free(buf);
	return err;
}

int symtab__decode(const uint8_t *buf, size_t len, const char *key, size_t max_bytes,
		   struct symtab **out)
{
	/* (not own: buf is only read) */
	return decode((uint8_t *)buf, len, false, key, max_bytes, out);
}

int symtab__adopt(uint8_t *buf, size_t len, const char *key, size_t max_bytes,
		  struct symtab **out)
{
	return decode(buf, len, true, key, max_bytes, out);
}

const char *symtab__build_id(const struct symtab *st)
{
	return st ? st->build_id : "";
}

const char *symtab__source(const struct symtab *st)
{
	return st && st->source ? st->source : "none";
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	go_source_free(st->go);
	free(st->syms);
	sym_names__release(&st->names);
	free(st->segs);
	free(st);
}
