/* SPDX-License-Identifier: BSD-2-Clause */
/* The ELF reading that every stage reading binaries shares: libelf's
 * one-time set-up, the bounded begin (header counts checked before libelf
 * allocates for them), the header sanity check, the GNU build id, and the
 * refusal counters of every ELF reader. Bounds: see elf.h; a note's
 * descriptor is at most ELF_BUILD_ID_MAX bytes; libelf bounds every section
 * and segment by the file's size, which the safe opener caps. */
#include <errno.h>
#include <gelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/elf.h"
#include "core/safe_open.h"

const char *const elf_refusal_names[ELF_REFUSAL_COUNT] = {
	[ELF_REFUSED_HEADERS] = "headers",
	[ELF_REFUSED_NOTE] = "note",
	[ELF_REFUSED_SECTION] = "section",
	[ELF_REFUSED_SYMBOLS] = "symbols",
	[ELF_REFUSED_NAMES] = "names",
	[ELF_REFUSED_NAME_LONG] = "name_too_long",
	[ELF_REFUSED_DEMANGLE] = "demangle",
	[ELF_REFUSED_TABLE] = "table_too_large",
	[ELF_REFUSED_GOPCLNTAB] = "gopclntab",
};

static _Atomic uint64_t refusals[ELF_REFUSAL_COUNT];

void elf__refuse(enum elf_refusal r, const char *file, const char *detail)
{
	atomic_fetch_add_explicit(&refusals[r], 1, memory_order_relaxed);
	safe_open__log_refusal(file ? file : "(elf image)", elf_refusal_names[r], detail);
}

void elf__refusal_stats(uint64_t out[ELF_REFUSAL_COUNT])
{
	for (int i = 0; i < ELF_REFUSAL_COUNT; i++)
		out[i] = atomic_load_explicit(&refusals[i], memory_order_relaxed);
}

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;
static bool libelf_ok;

static void libelf_init(void)
{
	libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

int elf__ready(void)
{
	pthread_once(&libelf_once, libelf_init);
	return libelf_ok ? 0 : -ENOSYS;
}

static void hex_encode(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Finds NT_GNU_BUILD_ID in one note data block; 0 or -ENOENT. */
static int note_build_id(Elf_Data *data, char *hex, size_t hex_len)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= ELF_BUILD_ID_MAX) {
			if (hex_len < 2 * (size_t)nh.n_descsz + 1)
				return -ERANGE;
			hex_encode((const unsigned char *)data->d_buf + desc_off,
				   nh.n_descsz, hex);
			return 0;
		}
		off = next;
	}
	return -ENOENT;
}

/* Build id from PT_NOTE segments, else from SHT_NOTE sections. */
int elf__read_build_id(Elf *elf, const char *name, char *hex, size_t hex_len)
{
	size_t phnum = 0;
	Elf_Scn *scn = NULL;
	int err;

	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			/* rawchunk allocates what the header claims: a sparse
			 * file's 1 GiB note would be 1 GiB of memory. */
			if (ph.p_filesz > ELF_NOTE_MAX) {
				elf__refuse(ELF_REFUSED_NOTE, name, "PT_NOTE larger than 64 KiB skipped");
				continue;
			}
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			if (!d)
				continue;
			err = note_build_id(d, hex, hex_len);
			if (err != -ENOENT)
				return err;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (sh.sh_size > ELF_NOTE_MAX) {
			elf__refuse(ELF_REFUSED_NOTE, name, "SHT_NOTE larger than 64 KiB skipped");
			continue;
		}
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		err = note_build_id(d, hex, hex_len);
		if (err != -ENOENT)
			return err;
	}
	return -ENOENT;
}

int elf__check_headers(Elf *elf)
{
	size_t phnum, shnum;
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &phnum) != 0 || elf_getshdrnum(elf, &shnum) != 0)
		return -EINVAL;
	if (eh.e_phnum != PN_XNUM && phnum != eh.e_phnum)
		return -EINVAL;
	if (eh.e_shoff != 0 && (shnum == 0 || (eh.e_shnum != 0 && shnum != eh.e_shnum)))
		return -EINVAL;
	return 0;
}

/* Reads n bytes at off of the file or the image. */
struct source {
	int fd;
	const unsigned char *image;
	size_t size;
};

static bool source_read(const struct source *src, uint64_t off, void *out, size_t n)
{
	if (src->image)
		return off <= src->size && n <= src->size - off &&
		       memcpy(out, src->image + off, n);
	return pread(src->fd, out, n, (off_t)off) == (ssize_t)n;
}

static uint64_t field(const unsigned char *p, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[msb ? n - 1 - i : i] << (8 * i);
	return v;
}

/* The section and segment counts the header claims, extended numbering
 * (the counts in section 0) included, checked against the bounds. */
static int check_counts(const struct source *src, const char *name)
{
	unsigned char eh[64], sh0[64];
	uint64_t shoff, shnum, phnum;
	bool is64, msb;
	char detail[96];

	if (!source_read(src, 0, eh, EI_NIDENT) || memcmp(eh, ELFMAG, SELFMAG) != 0 ||
	    (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64))
		return -EINVAL;
	is64 = eh[EI_CLASS] == ELFCLASS64;
	msb = eh[EI_DATA] == ELFDATA2MSB;
	if (!source_read(src, 0, eh, is64 ? 64 : 52))
		return -EINVAL;
	shoff = is64 ? field(eh + 40, 8, msb) : field(eh + 32, 4, msb);
	phnum = field(eh + (is64 ? 56 : 44), 2, msb);
	shnum = field(eh + (is64 ? 60 : 48), 2, msb);
	if (shoff && (shnum == 0 || phnum == PN_XNUM)) {
		/* Extended numbering: the real counts sit in section 0. */
		if (!source_read(src, shoff, sh0, is64 ? 64 : 40))
			return -EINVAL;
		if (shnum == 0)
			shnum = is64 ? field(sh0 + 32, 8, msb) : field(sh0 + 20, 4, msb);
		if (phnum == PN_XNUM)
			phnum = field(sh0 + (is64 ? 44 : 28), 4, msb);
	}
	if (shnum > ELF_SECTIONS_MAX || phnum > ELF_SEGMENTS_MAX) {
		snprintf(detail, sizeof(detail), "%llu sections, %llu segments",
			 (unsigned long long)shnum, (unsigned long long)phnum);
		elf__refuse(ELF_REFUSED_HEADERS, name, detail);
		return -E2BIG;
	}
	return 0;
}

Elf *elf__begin_fd(int fd, const char *name)
{
	struct source src = { .fd = fd };
	int err = elf__ready();
	Elf *elf;

	if (!err)
		err = check_counts(&src, name);
	if (err) {
		errno = err == -E2BIG ? EINVAL : -err;
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		errno = EINVAL;
	return elf;
}

Elf *elf__begin_mem(void *image, size_t size, const char *name)
{
	struct source src = { .fd = -1, .image = image, .size = size };
	int err = elf__ready();
	Elf *elf;

	if (!err)
		err = image ? check_counts(&src, name) : -EINVAL;
	if (err) {
		errno = err == -E2BIG ? EINVAL : -err;
		return NULL;
	}
	elf = elf_memory(image, size);
	if (!elf)
		errno = EINVAL;
	return elf;
}

int elf__build_id(int fd, char *hex, size_t hex_len)
{
	return elf__build_id_of(fd, NULL, hex, hex_len);
}

int elf__build_id_of(int fd, const char *name, char *hex, size_t hex_len)
{
	Elf *elf;
	int err;

	err = elf__ready();
	if (err)
		return err;
	if (!hex || hex_len == 0)
		return -EINVAL;
	hex[0] = '\0';
	elf = elf__begin_fd(fd, name);
	if (!elf)
		return -EINVAL;
	err = elf__check_headers(elf);
	if (!err)
		err = elf__read_build_id(elf, name, hex, hex_len);
	elf_end(elf);
	if (err)
		hex[0] = '\0';
	return err;
}
