/* SPDX-License-Identifier: BSD-2-Clause */
/* Loads unwind tables into the BPF walker's maps and keeps them in step
 * with the processes kiln sees: a process's snapshot (taken or re-read)
 * gets a table for each executable file it maps, built once per file (by
 * what the opened file is: device, inode, size, mtime) and shared, plus
 * the vDSO's; its executable mappings go to proc_maps. When the process
 * ends its entry goes; tables no live process maps stay cached until the
 * row budget needs their room (least recently used first). A file that
 * does not fit even then is walked by frame pointers, logged once and
 * counted. docs/unwinding.md describes the whole path. */
#ifndef KILN_UNWIND_UNWINDER_H
#define KILN_UNWIND_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>

#include "proc/proc.h"
#include "sampler/sampler.h"
#include "unwind/table_cache.h"
#include "unwind/python.h"
#include "unwind/ruby.h"

/* Why an executable mapping was left to frame pointers. Label values:
 * unwinder_fallback_names. */
enum unwinder_fallback {
	UNWINDER_FB_NO_FILE = 0,        /* anonymous or JIT code, unreadable file */
	UNWINDER_FB_NO_TABLE,           /* the file has no usable CFI (or was refused) */
	UNWINDER_FB_NO_ROOM,            /* the row budget (--unwind-memory) is full */
	UNWINDER_FB_NO_SLOT,            /* KILN_UNWIND_SLOTS files loaded */
	UNWINDER_FB_RULES_FULL,         /* KILN_UNWIND_RULES distinct rules */
	UNWINDER_FB_SEGMENT,            /* mapped from outside every executable segment */
	UNWINDER_FB_TOO_MANY,           /* beyond KILN_PROC_MAPS_MAX in one process */
	UNWINDER_FB_COUNT
};
extern const char *const unwinder_fallback_names[UNWINDER_FB_COUNT];

struct unwinder_stats {
	uint64_t tables_loaded;         /* files with a table in the maps now */
	uint64_t rows_used, rows_cap;
	uint64_t loads, evictions;      /* since start */
	uint64_t expired;               /* of the evictions: unmapped for --unwind-table-ttl */
	uint64_t chunks_dropped;        /* rows' chunks given back, emptied by expiry */
	uint64_t processes;             /* processes walked with tables now */
	uint64_t processes_full;        /* processes left to frame pointers: proc_maps full */
	uint64_t miss_refreshes;
	uint64_t queue_full;            /* snapshots not queued for tables (queue full) */
	uint64_t rules;                 /* distinct rules in unwind_rules */
	uint64_t build_ns;              /* spent building tables, since start */
	uint64_t cached, cache_ns;      /* tables loaded from the disk cache, the time it took */
	struct table_cache_stats cache;
	const char *cache_dir;          /* NULL: no disk cache (valid while its cache is) */
	uint64_t fallback[UNWINDER_FB_COUNT]; /* mappings, as written */
	uint64_t maps_bytes;            /* kernel memory of the walker's maps */
};

struct unwinder;

struct unwinder_opts {
	/* Tables cached on disk (table_cache.h), borrowed: it outlives the
	 * unwinder; NULL: no disk cache. */
	struct table_cache *cache;
	bool python;            /* Python processes get Python frames (--no-python) */
	bool ruby;              /* Ruby processes get Ruby frames (--no-ruby) */
	/* A table no live process has mapped this long is freed, and the
	 * rows' chunks left empty (--unwind-table-ttl); 0: only for room. */
	uint64_t table_ttl_ns;
};

/* NULL (nothing to do) when the sampler was opened without unwind rows.
 * o NULL: no disk cache. */
struct unwinder *unwinder__new(struct sampler *s, const struct unwinder_opts *o);
/* Queues the tables nearly every process needs (the C library, the
 * dynamic loader, the vDSO: kiln's own), so a new process's first samples
 * wait for its own files only. */
void unwinder__prewarm(struct unwinder *u);
/* s was taken or re-read: queues it; unwinder__tick loads its files'
 * tables and writes its mappings. */
void unwinder__mapped(struct unwinder *u, const struct proc_snapshot *s);
/* s exited or exec'd: its entry goes, its tables lose a user. */
void unwinder__ended(struct unwinder *u, const struct proc_snapshot *s);
/* The walker met a pc outside the known mappings of instance: re-read its
 * mappings (at most once a second per process). */
void unwinder__miss(struct unwinder *u, struct proc_table *procs, uint32_t instance);
/* From the loop, after process events: writes queued processes' mappings
 * (a new file's table is queued for a thread of the unwinder's, which
 * builds them one at a time; the walker uses each as soon as it is
 * loaded), loads the tables built since, and re-reads what unwinder__miss
 * put off. */
void unwinder__tick(struct unwinder *u, struct proc_table *procs);
/* How long the loop may wait for events (given timeout_ms): 0 when
 * processes are queued, a few ms while tables are being built or an
 * interpreter is to be tried again. */
int unwinder__poll_ms(const struct unwinder *u, int timeout_ms);
void unwinder__stats(const struct unwinder *u, struct unwinder_stats *out);
/* The processes of language lang of u's walks (unwind/python.h,
 * unwind/ruby.h); NULL when u is, or with that language off at
 * unwinder__new. */
struct interp_procs *unwinder__interp(const struct unwinder *u, enum kiln_interp_lang lang);
void unwinder__free(struct unwinder *u);

#endif
