/* SPDX-License-Identifier: BSD-2-Clause */
/* ELF basics shared by the stages that read binaries (proc: build ids of
 * mapped files; symbolize: symbol tables). */
#ifndef KILN_CORE_ELF_H
#define KILN_CORE_ELF_H

#include <gelf.h>
#include <stddef.h>

#define ELF_BUILD_ID_MAX 64  /* bytes of a build id note; sha1 ids are 20 */

/* libelf's version handshake, done once. 0 or -ENOSYS. */
int elf__ready(void);
/* 0 when the ELF header and the section/segment counts agree (a truncated
 * or doctored file does not), else -EINVAL. */
int elf__check_headers(Elf *elf);
/* The GNU build id from PT_NOTE segments, else SHT_NOTE sections, as lower
 * case hex into hex (NUL terminated). 0, -ENOENT, -ERANGE (hex too short). */
int elf__read_build_id(Elf *elf, char *hex, size_t hex_len);
/* Reads only the build id note of the ELF file at fd into hex (NUL
 * terminated). 0, or -ENOENT when there is none, or -errno; hex is ""
 * after any failure. */
int elf__build_id(int fd, char *hex, size_t hex_len);

#endif
