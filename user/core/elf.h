/* SPDX-License-Identifier: BSD-2-Clause */
/* ELF basics shared by the stages that read binaries (proc: build ids of
 * mapped files; symbolize: symbol tables). */
#ifndef KILN_CORE_ELF_H
#define KILN_CORE_ELF_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_MAX 64  /* bytes of a build id note; sha1 ids are 20 */

/* Bounds every ELF reader keeps, checked before anything is allocated for
 * what a file claims (docs/agent.md, "Security posture"). */
#define ELF_FILE_MAX     (1ull << 30)   /* bytes of a binary or debug file opened */
#define ELF_SECTIONS_MAX 65535u         /* section headers (libelf allocates per section) */
#define ELF_SEGMENTS_MAX 4096u          /* program headers */
#define ELF_NOTE_MAX     (64u << 10)    /* bytes of one PT_NOTE segment or SHT_NOTE section */

/* Why an ELF file, or part of one, was refused. Counted process-wide. */
enum elf_refusal {
	ELF_REFUSED_HEADERS = 0,  /* more sections or segments than allowed */
	ELF_REFUSED_NOTE,         /* a note segment or section over ELF_NOTE_MAX */
	ELF_REFUSED_SECTION,      /* symbol, string or debug section over its bound */
	ELF_REFUSED_SYMBOLS,      /* more function symbols than the table bound allows */
	ELF_REFUSED_NAMES,        /* name bytes over the table bound */
	ELF_REFUSED_NAME_LONG,    /* a name cut to its maximum length */
	ELF_REFUSED_DEMANGLE,     /* a mangled name too long or demangling too large: kept mangled */
	ELF_REFUSED_TABLE,        /* a table over its bound (a quarter of the symbol cache) */
	ELF_REFUSED_GOPCLNTAB,    /* a Go function table over its bound (core/gopclntab.h) */
	ELF_REFUSAL_COUNT
};

/* Label values: "headers", "note", "section", "symbols", "names",
 * "name_too_long", "demangle", "table_too_large", "gopclntab". */
extern const char *const elf_refusal_names[ELF_REFUSAL_COUNT];

/* libelf's version handshake, done once. 0 or -ENOSYS. */
int elf__ready(void);
/* Counts a refusal of file (or a part of it) and logs it once per file and
 * reason (safe_open__log_refusal). Thread-safe. */
void elf__refuse(enum elf_refusal r, const char *file, const char *detail);
/* The refusals so far, by reason. */
void elf__refusal_stats(uint64_t out[ELF_REFUSAL_COUNT]);
/* elf_begin(ELF_C_READ) on fd, or elf_memory on image, after reading the
 * ELF header ourselves: libelf allocates per section header at elf_begin,
 * so a file claiming more than ELF_SECTIONS_MAX sections (or
 * ELF_SEGMENTS_MAX segments) is refused before it can. name: for logs.
 * NULL + errno (EINVAL: not ELF or refused). */
Elf *elf__begin_fd(int fd, const char *name);
Elf *elf__begin_mem(void *image, size_t size, const char *name);
/* 0 when the ELF header and the section/segment counts agree (a truncated
 * or doctored file does not), else -EINVAL. */
int elf__check_headers(Elf *elf);
/* The GNU build id from PT_NOTE segments, else SHT_NOTE sections, as lower
 * case hex into hex (NUL terminated). A note over ELF_NOTE_MAX bytes is
 * skipped and counted, never read. 0, -ENOENT, -ERANGE (hex too short).
 * name: for logs, may be NULL. */
int elf__read_build_id(Elf *elf, const char *name, char *hex, size_t hex_len);
/* Reads only the build id note of the ELF file at fd into hex (NUL
 * terminated). 0, or -ENOENT when there is none, or -errno; hex is ""
 * after any failure. */
int elf__build_id(int fd, char *hex, size_t hex_len);
/* The same, naming the file in logs. */
int elf__build_id_of(int fd, const char *name, char *hex, size_t hex_len);

#endif
