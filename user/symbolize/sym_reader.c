// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: symbols are read SYM_READER_CHUNK at a time, in the file's order,
 * and converted by libelf (gelf_xlatetom: the file's class and byte
 * order). A name is looked up in the windows read so far, else a window
 * is read starting at it; a table's names are wanted in address order,
 * which in a linker's .strtab is scattered, so the windows are small. A
 * name is valid as libelf's elf_strptr has it: a NUL follows it before
 * the section's end; one longer than a window is given cut, after the
 * section's last NUL is found (once) to follow it. Memory: 2 chunks of 48
 * KiB and 32 KiB of windows, whatever the sections' sizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/sym_reader.h"

bool sym_reader__usable(Elf *elf, int fd, const GElf_Shdr *sym, const GElf_Shdr *str)
{
	struct stat sb;
	uint64_t size, entsize;

	if (fd < 0 || fstat(fd, &sb) || elf_kind(elf) != ELF_K_ELF)
		return false;
	size = (uint64_t)sb.st_size;
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	/* (what libelf refuses to read, left to it) */
	return entsize && sym->sh_size % entsize == 0 && !(sym->sh_flags & SHF_COMPRESSED) && !(str->sh_flags & SHF_COMPRESSED) &&
	       sym->sh_type != SHT_NOBITS && str->sh_type == SHT_STRTAB &&
	       sym->sh_offset <= size && sym->sh_size <= size - sym->sh_offset &&
	       str->sh_offset <= size && str->sh_size <= size - str->sh_offset;
}

int sym_reader__open(struct sym_reader *r, Elf *elf, int fd, const GElf_Shdr *sym,
		     const GElf_Shdr *str)
{
	char *ident = elf_getident(elf, NULL);

	memset(r, 0, sizeof(*r));
	r->elf = elf;
	r->fd = fd;
	r->data = ident ? ident[EI_DATA] : ELFDATANONE;
	r->cls = gelf_getclass(elf);
	r->sym_off = sym->sh_offset;
	r->entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	r->nsyms = r->entsize ? sym->sh_size / r->entsize : 0;
	r->str_off = str->sh_offset;
	r->str_size = str->sh_size;
	for (unsigned i = 0; i < SYM_READER_WINDOWS; i++)
		r->at[i] = UINT64_MAX;
	r->raw = malloc(SYM_READER_CHUNK * sizeof(Elf64_Sym));
	r->syms = malloc(SYM_READER_CHUNK * sizeof(Elf64_Sym));
	r->win = malloc(SYM_READER_WINDOWS * SYM_READER_WINDOW);
	if (!r->raw || !r->syms || !r->win) {
		sym_reader__close(r);
		return -ENOMEM;
	}
	return 0;
}

static bool read_at(int fd, uint64_t off, void *out, size_t n)
{
	return pread(fd, out, n, (off_t)off) == (ssize_t)n;
}

/* Reads and converts the chunk holding symbol i. */
static int read_chunk(struct sym_reader *r, uint64_t i)
{
	uint64_t n = r->nsyms - i < SYM_READER_CHUNK ? r->nsyms - i : SYM_READER_CHUNK;
	Elf_Data src = { .d_buf = r->raw, .d_type = ELF_T_SYM, .d_size = n * r->entsize,
			 .d_version = EV_CURRENT };
	Elf_Data dst = { .d_buf = r->syms, .d_type = ELF_T_SYM, .d_size = n * r->entsize,
			 .d_version = EV_CURRENT };

	r->count = 0;
	if (!read_at(r->fd, r->sym_off + i * r->entsize, r->raw, n * r->entsize) ||
	    !gelf_xlatetom(r->elf, &dst, &src, (unsigned)r->data) || dst.d_size != n * r->entsize)
		return -EINVAL;
	r->first = i;
	r->count = n;
	return 0;
}

int sym_reader__sym(struct sym_reader *r, uint64_t i, GElf_Sym *out)
{
	if (i >= r->nsyms || (r->cls != ELFCLASS32 && r->cls != ELFCLASS64))
		return -EINVAL;
	if ((i < r->first || i - r->first >= r->count) && read_chunk(r, i))
		return -EINVAL;
	if (r->cls == ELFCLASS64) {
		memcpy(out, r->syms + (i - r->first) * sizeof(Elf64_Sym), sizeof(*out));
	} else {
		Elf32_Sym s;

		memcpy(&s, r->syms + (i - r->first) * sizeof(s), sizeof(s));
		*out = (GElf_Sym){ .st_name = s.st_name, .st_info = s.st_info,
				   .st_other = s.st_other, .st_shndx = s.st_shndx,
				   .st_value = s.st_value, .st_size = s.st_size };
	}
	return 0;
}

/* Whether a NUL follows offset from in the strings before their end:
 * whether from lies before the end of their last NUL, looked for once
 * (from the end back; a read error counts as none), so a file of long
 * names costs one scan, not one a name. */
static bool nul_after(struct sym_reader *r, uint64_t from)
{
	char buf[SYM_READER_WINDOW];
	uint64_t end = r->str_size;

	while (!r->nul_end_known && end > 0) {
		size_t n = end < sizeof(buf) ? end : sizeof(buf);
		const char *nul;

		if (!read_at(r->fd, r->str_off + end - n, buf, n))
			break;
		end -= n;
		nul = memrchr(buf, '\0', n);
		if (nul) {
			r->nul_end = end + (uint64_t)(nul - buf) + 1;
			break;
		}
	}
	r->nul_end_known = true;
	return from < r->nul_end;
}

const char *sym_reader__name(struct sym_reader *r, uint64_t off)
{
	unsigned w;
	char *p;
	size_t n;

	if (off >= r->str_size)
		return NULL;
	for (w = 0; w < SYM_READER_WINDOWS; w++) {
		if (r->at[w] == UINT64_MAX || off < r->at[w] || off - r->at[w] >= r->len[w])
			continue;
		p = r->win + (size_t)w * SYM_READER_WINDOW + (off - r->at[w]);
		if (memchr(p, '\0', r->len[w] - (off - r->at[w])))
			return p;
	}
	w = r->next++ % SYM_READER_WINDOWS;
	p = r->win + (size_t)w * SYM_READER_WINDOW;
	n = r->str_size - off < SYM_READER_WINDOW ? r->str_size - off : SYM_READER_WINDOW;
	r->at[w] = UINT64_MAX;
	if (!read_at(r->fd, r->str_off + off, p, n))
		return NULL;
	r->at[w] = off;
	r->len[w] = (uint32_t)n;
	if (memchr(p, '\0', n))
		return p;
	if (n < SYM_READER_WINDOW || !nul_after(r, off + n))
		return NULL;
	memcpy(r->name, p, SYM_READER_NAME_MAX);
	r->name[SYM_READER_NAME_MAX] = '\0';
	return r->name;
}

void sym_reader__close(struct sym_reader *r)
{
	free(r->raw);
	free(r->syms);
	free(r->win);
	r->raw = r->syms = NULL;
	r->win = NULL;
}
