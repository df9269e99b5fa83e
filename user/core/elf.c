/* SPDX-License-Identifier: BSD-2-Clause */
/* The ELF reading that every stage reading binaries shares: libelf's
 * one-time set-up, the header sanity check, the GNU build id. Bounds: a
 * note's descriptor is at most ELF_BUILD_ID_MAX bytes; libelf bounds every
 * section and segment by the file's size. */
#include <errno.h>
#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "core/elf.h"

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
int elf__read_build_id(Elf *elf, char *hex, size_t hex_len)
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

int elf__build_id(int fd, char *hex, size_t hex_len)
{
	Elf *elf;
	int err;

	err = elf__ready();
	if (err)
		return err;
	if (!hex || hex_len == 0)
		return -EINVAL;
	hex[0] = '\0';
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -EINVAL;
	err = elf__check_headers(elf);
	if (!err)
		err = elf__read_build_id(elf, hex, hex_len);
	elf_end(elf);
	if (err)
		hex[0] = '\0';
	return err;
}
