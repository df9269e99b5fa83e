/* SPDX-License-Identifier: BSD-2-Clause */
/* A symbol section of an ELF file and its string section, read from the
 * file a piece at a time (libelf reads each whole: node's .symtab and
 * .strtab are 10 MB, for names a table keeps deflated in 2). */
#ifndef KILN_SYMBOLIZE_SYM_READER_H
#define KILN_SYMBOLIZE_SYM_READER_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYM_READER_CHUNK 2048   /* symbols a read */
#define SYM_READER_WINDOWS 8    /* pieces of the strings remembered */
#define SYM_READER_WINDOW 4096  /* bytes of each */
/* Bytes of a name given: longer names are given cut here (they are kept
 * mangled and cut to SYMTAB_NAME_MAX all the same). */
#define SYM_READER_NAME_MAX 1025

struct sym_reader {
	Elf *elf;
	int fd;
	int data;               /* the file's ELFDATA2* */
	int cls;                /* ELFCLASS32 or ELFCLASS64 */
	uint64_t sym_off, entsize, nsyms;
	uint64_t str_off, str_size;
	unsigned char *raw, *syms;      /* a chunk as read, and converted */
	uint64_t first, count;          /* the chunk: symbols first.. */
	char *win;                      /* SYM_READER_WINDOWS windows */
	uint64_t at[SYM_READER_WINDOWS];        /* each one's offset in the strings */
	uint32_t len[SYM_READER_WINDOWS];
	unsigned next;
	uint64_t nul_end;                /* past the strings' last NUL, 0: none */
	bool nul_end_known;              /* nul_end looked for */
	char name[SYM_READER_NAME_MAX + 1];     /* a long name, cut */
};

/* Whether the sections sym and str of elf (open on fd) can be read this
 * way: in the file whole, not compressed. */
bool sym_reader__usable(Elf *elf, int fd, const GElf_Shdr *sym, const GElf_Shdr *str);

/* 0, -ENOMEM; sym_reader__usable first. */
int sym_reader__open(struct sym_reader *r, Elf *elf, int fd, const GElf_Shdr *sym,
		     const GElf_Shdr *str);

/* Symbol i into *out: 0, or -EINVAL when it cannot be read. Fastest in
 * order. */
int sym_reader__sym(struct sym_reader *r, uint64_t i, GElf_Sym *out);

/* The name at off of the strings: NULL when off is past them, no NUL
 * follows it before their end, or the file cannot be read; at most
 * SYM_READER_NAME_MAX bytes of it. Valid until the next call. */
const char *sym_reader__name(struct sym_reader *r, uint64_t off);

void sym_reader__close(struct sym_reader *r);

#endif
