/* SPDX-License-Identifier: BSD-2-Clause */
/* Function symbols of one ELF file, read with libelf. */
#ifndef KILN_SYMBOLIZE_ELF_SYMTAB_H
#define KILN_SYMBOLIZE_ELF_SYMTAB_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct symtab;

/* Bytes of a name kept, NUL included: longer names are cut (the
 * symbolizer shows no more). */
#define SYMTAB_NAME_MAX 1024
/* The table bound of symtab__load_fd and symtab__load_mem: a quarter of
 * the default 64 MiB symbol cache. */
#define SYMTAB_DEFAULT_MAX_BYTES (16u << 20)

struct sym {
	uint64_t start;         /* ELF virtual address */
	uint64_t size;          /* 0: extends to the next symbol */
	const char *name;       /* demangled */
};

/* Builds the symbol table of the ELF file open at fd (fd is only read,
 * never closed). Sources, best first: .symtab of the file; a separate debug
 * file found by build id (/usr/lib/debug/.build-id/xx/rest.debug inside
 * root, then on the host) or by .gnu_debuglink (next to `path`, in its
 * .debug/ subfolder, and under /usr/lib/debug, inside root); a Go
 * binary's function table (.gopclntab, core/gopclntab.h) merged with
 * .dynsym; MiniDebugInfo (.gnu_debugdata, xz) merged with .dynsym;
 * .dynsym alone.
 * root: the owning process's root ("/proc/PID/root", or "" for the host):
 * debug files are opened only through the safe opener, inside it.
 * path: the file's path as the process sees it, may be NULL.
 * max_bytes bounds the table (symtab__bytes) and, through it, what a load
 * may allocate: a file whose table would exceed it is refused (-EFBIG).
 * A file with no symbols gives an empty table, not an error.
 * NULL + errno when fd is not a readable ELF file or is over a bound; each
 * refusal counted in elf__refusal_stats (core/elf.h). */
struct symtab *symtab__load(int fd, const char *root, const char *path, size_t max_bytes);
/* symtab__load with one more source, after MiniDebugInfo: fetched, the
 * path on the host of a debug file a debuginfod client downloaded (NULL:
 * none), taken only when it has the file's build id; opened and read as
 * the local debug files are. */
struct symtab *symtab__load_with(int fd, const char *root, const char *path, size_t max_bytes,
				 const char *fetched);
/* symtab__load with SYMTAB_DEFAULT_MAX_BYTES. */
struct symtab *symtab__load_fd(int fd, const char *root, const char *path);
/* The same for an ELF image in memory (the vDSO). */
struct symtab *symtab__load_mem(const void *image, size_t size);

/* Translates a file offset of a mapped address (addr - map_start +
 * map_pgoff) into the ELF virtual address through the PT_LOAD segments and
 * fills *out with the function containing it and returns out, or NULL.
 * out->name stays valid until the next lookup in st (a large table keeps
 * its names deflated, sym_names.h) or st's free. When vaddr is not NULL,
 * *vaddr gets the virtual address whenever the offset lies in a PT_LOAD
 * segment (even if no function contains it) and is left alone otherwise.
 * A symbol with a size contains [start, start + size); a sizeless one
 * extends to the next symbol. Several symbols at one address resolve to
 * one: global before weak before local, then fewer leading underscores,
 * then the smaller name. */
const struct sym *symtab__lookup(const struct symtab *st, uint64_t file_offset,
				 uint64_t *vaddr, struct sym *out);
/* One source frame at an address: a function and its file and line. */
struct src_frame {
	const char *name;
	const char *file;       /* NULL unknown */
	uint32_t line;          /* 0 unknown */
};

/* The source frames at virtual address vaddr (as symtab__lookup gives it),
 * innermost first: the calls inlined there, then the function holding
 * them, at most max; 0 when the table knows no source positions (only Go
 * binaries' tables do, from their function table). Strings stay valid
 * while st does. */
size_t symtab__source_frames(const struct symtab *st, uint64_t vaddr, struct src_frame *out,
			     size_t max);
size_t symtab__count(const struct symtab *st);
/* Heap bytes held, for the cache bound. */
size_t symtab__bytes(const struct symtab *st);
/* Lower-case hex build id, "" when the file has none. */
const char *symtab__build_id(const struct symtab *st);

/* Symbol tables cached on disk (symbolize/symbolizer.c keeps them in the
 * unwind table cache's directory, unwind/table_cache.h), so the next run
 * does not read, demangle and sort a file's symbols again.
 *
 * What a table depends on beyond the file open at fd: its separate debug
 * file as symtab__load finds it (through the safe opener, inside root),
 * into id as "dev:inode:size:mtime", or "-" when there is none. 0 or
 * -errno (not ELF: no table to cache either). */
int symtab__debug_file_id(int fd, const char *root, const char *path, char *id, size_t len);
/* The bytes of st's cache file under key (at most 512 bytes), malloc'd.
 * -EINVAL for a table that is not cached: a Go binary's (its source
 * positions), one from a debuginfod download or from memory; 0 or
 * -ENOMEM. */
int symtab__encode(const struct symtab *st, const char *key, uint8_t **buf, size_t *len);
/* The same bytes written to f as they are made (a large table's
 * megabytes never copied), and their count beforehand: 0, -EINVAL (not
 * cached), -EIO. */
int symtab__cache_size(const struct symtab *st, const char *key, size_t *len);
int symtab__cache_write(const struct symtab *st, const char *key, FILE *f);
/* The table in buf[0, len) when it is a valid cache file of key within
 * max_bytes (as symtab__load's bound): 0, -ENOENT (another key),
 * -ESTALE (another format or loader), -EFBIG (over max_bytes), -EBADMSG
 * (anything else wrong), -ENOMEM. Every count is checked against
 * max_bytes and len before anything is allocated, then the table as
 * symtab__lookup reads it. */
int symtab__decode(const uint8_t *buf, size_t len, const char *key, size_t max_bytes,
		   struct symtab **out);
/* symtab__decode of a malloc'd buf it takes (freed, or kept as the names'
 * arena): the table's names are not copied. */
int symtab__adopt(uint8_t *buf, size_t len, const char *key, size_t max_bytes,
		  struct symtab **out);
/* Where the symbols came from: "symtab", "debug-file", "gopclntab",
 * "minidebuginfo", "debuginfod", "dynsym" or "none". */
const char *symtab__source(const struct symtab *st);
void symtab__free(struct symtab *st);

#endif
