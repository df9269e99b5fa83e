/* SPDX-License-Identifier: BSD-2-Clause */
/* Unwind tables cached on disk, so a second `kiln record` or an agent's
 * restart loads a file's table instead of building it again (python3.11:
 * ~90 ms of CPU, libLLVM: seconds). docs/unwinding.md ("Cached on disk")
 * describes it.
 *
 * One file a table in a directory of kiln's own (created 0700, owned by
 * kiln's effective uid, refused otherwise), named by a hash of its key:
 * what the opened file is (device, inode, size, mtime in ns), plus the
 * build id it claims when it has one; never the build id alone, so one
 * container's file cannot stand for another's. The key is stored in the
 * cache file and compared. Files are written by kiln only (a temporary
 * file created O_EXCL, renamed over the name, mode 0600) and still read as
 * hostile: opened O_NOFOLLOW, a regular file of kiln's uid under a size
 * cap; magic, format and builder version, sizes, every count against its
 * bound before anything is allocated, a CRC-32 over the whole file, and
 * the rows themselves (sorted, rule indices in range, known commands,
 * ending INVALID). A file that fails is deleted and counted by reason,
 * never used.
 *
 * A table built with a separate debug file is not cached (it depends on a
 * second file, found in a process's root); one built after looking for a
 * debug file and finding none is used only while none is found.
 *
 * The directory is kept under its size bound by deleting the least
 * recently used files (kiln sets a file's atime when it loads it).
 *
 * The same directory, under the same bound, keeps the symbolizer's symbol
 * tables (table_cache__read_symbols: their own format and checks, in
 * symbolize/elf_symtab.c).
 *
 * The unwind tables are read and written on the unwinder's builder thread,
 * the symbol tables on the loop thread: each file is written whole under a
 * temporary name and renamed, the counters are atomic, and two eviction
 * passes at once delete no more than one would. */
#ifndef KILN_UNWIND_TABLE_CACHE_H
#define KILN_UNWIND_TABLE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "unwind/unwind_table.h"

#define TABLE_CACHE_BYTES_DEFAULT (256ull << 20)
#define TABLE_CACHE_FILES_MAX 65536u /* files looked at when evicting */
#define TABLE_CACHE_KEY_MAX 256u /* bytes of a key */
/* The largest cache file read: a table of the most rows and rules a build
 * keeps (unwind_table.h), its header and key. */
#define TABLE_CACHE_FILE_MAX                                          \
	(4096u + TABLE_CACHE_KEY_MAX +                                \
	 (uint64_t)UNWIND_ROWS_MAX * sizeof(struct kiln_unwind_row) + \
	 (uint64_t)UNWIND_RULES_MAX * sizeof(struct kiln_unwind_rule))

/* Why a cache file was not used or not written, or the directory not
 * used. Label values: table_cache_refusal_names. */
enum table_cache_refusal {
	TABLE_CACHE_DIR = 0, /* the directory: not creatable, not kiln's, or open to others */
	TABLE_CACHE_NOT_OURS, /* a cache file not regular, a link, another uid's, over the cap */
	TABLE_CACHE_CORRUPT, /* bad magic, size, counts, checksum or rows: deleted */
	TABLE_CACHE_VERSION, /* written by another format or table builder: deleted */
	TABLE_CACHE_STALE, /* a debug file appeared since it was built: deleted */
	TABLE_CACHE_DEBUG_FILE, /* not written: built with a separate debug file */
	TABLE_CACHE_TOO_LARGE, /* not written: over a quarter of the directory's bound */
	TABLE_CACHE_WRITE, /* not written: an I/O error (full disk, read-only) */
	TABLE_CACHE_REFUSAL_COUNT
};
extern const char *const table_cache_refusal_names[TABLE_CACHE_REFUSAL_COUNT];

struct table_cache_stats {
	uint64_t hits, misses; /* lookups: a table loaded, or none usable */
	uint64_t writes, write_bytes; /* tables written */
	uint64_t evictions; /* files deleted to keep the bound */
	uint64_t bytes; /* the directory's cache files now (as last counted) */
	bool counted; /* the directory was scanned: bytes counts it all */
	uint64_t refused[TABLE_CACHE_REFUSAL_COUNT];
};

struct table_cache;

/* Where tables are cached unless told: /var/cache/kiln for root, else
 * $XDG_CACHE_HOME/kiln or $HOME/.cache/kiln. 0 or -ENOENT (no home). */
int table_cache__default_dir(char *buf, size_t len);
/* The cache in dir (created when missing, its parent too, mode 0700;
 * owned by kiln's user, closed to others, on a trusted path), at most
 * max_bytes of cache files. NULL when dir is NULL, "" or "none" (no cache)
 * or out of memory. A directory that cannot be used gives a cache that
 * finds and stores nothing, counted as "dir" and logged at warn (at debug
 * when quiet: a default location that may not exist). The directory's
 * files are counted (the least recently used evicted while over the
 * bound, stale temporary files removed) now with count, else at the first
 * write: a run that only reads the cache never lists it. */
struct table_cache *table_cache__open(const char *dir, uint64_t max_bytes, bool quiet, bool count);
/* The table of the ELF file open at fd (root and path: its debug-file
 * lookup, as unwind_table__build), or NULL: not cached, or refused
 * (counted, the file deleted). A table whose rows or rules exceed lim is
 * a miss. */
struct unwind_table *table_cache__get(struct table_cache *c, int fd, const char *root,
				      const char *path, const struct unwind_limits *lim);
/* Stores t, the table just built from the file at fd; then deletes the
 * least recently used files while the directory is over its bound. */
void table_cache__put(struct table_cache *c, int fd, const struct unwind_table *t);
/* A symbol table's cache file (named by a hash of key): its bytes, read as
 * a cache file of kiln's own under max bytes, into a malloc'd *buf. 0,
 * -ENOENT (none, or no usable directory), -EPERM (not kiln's own: the
 * caller refuses it, below), -ENOMEM. */
int table_cache__read_symbols(struct table_cache *c, const char *key, uint64_t max,
			      uint8_t **buf, size_t *len);
/* The symbol table file of key, refused with err by its reader (-EPERM,
 * -EBADMSG, -ESTALE): counted as table_cache__get's refusals and deleted;
 * any other err: nothing done (a miss). path: for the log. */
void table_cache__refuse_symbols(struct table_cache *c, const char *key, const char *path,
				 int err);
/* Stores a symbol table's cache file under key, len bytes that fill
 * writes to its FILE (0 or -errno); then evicts as table_cache__put. 0 or
 * -errno (counted: too_large, write_error). */
int table_cache__write_symbols(struct table_cache *c, const char *key, size_t len,
			       int (*fill)(FILE *f, void *ctx), void *ctx);
void table_cache__stats(const struct table_cache *c, struct table_cache_stats *out);
/* The directory, or NULL when it could not be used. */
const char *table_cache__dir(const struct table_cache *c);
/* The directory's fd, owned by c; -1: none. */
int table_cache__dirfd(const struct table_cache *c);
void table_cache__close(struct table_cache *c);

/* The cache file format, for the tests and the fuzz target. The key of
 * the file at fd into key (0, or -errno from fstat). */
int table_cache__key(int fd, char *key, size_t len);
/* The bytes of t's cache file under key, malloc'd into *buf, *len. 0 or
 * -ENOMEM. */
int table_cache__encode(const struct unwind_table *t, const char *key, uint8_t **buf, size_t *len);
/* The table in buf[0, len) if it is a valid cache file of key within lim:
 * 0, or -ENOENT (another key: a hash collision, not corruption),
 * -ESTALE (another format or builder version), -EBADMSG (anything else
 * wrong), -E2BIG (more rows or rules than lim), -ENOMEM. */
int table_cache__decode(const uint8_t *buf, size_t len, const char *key,
			const struct unwind_limits *lim, struct unwind_table **out);

#endif
