/* SPDX-License-Identifier: BSD-2-Clause */
/* The process table: one snapshot per process instance (a pid between two
 * execs), taken when the sampler first sees it, so its samples can be
 * symbolized after it has exited. Snapshots hold the executable mappings
 * and an open descriptor of every mapped file, shared through the binary
 * table by every process mapping the same file. */
#ifndef KILN_PROC_PROC_H
#define KILN_PROC_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kiln/sample.h"
#include "proc/mmap_log.h"

/* One mapped file. fd stays open while any snapshot maps it, so symbols
 * can be (re)loaded even after every process mapping it has exited. */
struct binary {
	uint64_t dev, ino;
	/* The root directory of the processes that share it (debug files are
	 * looked up inside it): one binary per file and root, so a debug file
	 * planted in a container cannot name or unwind another root's frames. */
	uint64_t root_id;
	/* Symbol cache key, what the opened file is (never what it claims):
	 * "f:<dev>:<ino>:<size>:<mtime>" from fstat, "i:<dev>:<ino>" from maps
	 * when it could not be opened (nothing is loaded then), ":r<root>"
	 * after it outside the host's root. */
	char key[96];
	char build_id[72];      /* hex, "" when the file has none */
	char *path;             /* as the first process mapping it sees it */
	char *root;             /* "/proc/<pid>/root" of that process */
	int fd;                 /* -1 when it could not be opened */
	bool unreadable;        /* opened, but not a symbol source: no retry */
	unsigned refs;
};

/* A binary's key from the fstat of the opened file. */
struct stat;
void binary__key(const struct stat *sb, char *key, size_t len);

struct proc_mapping {
	uint64_t start, end, pgoff;
	char *name;             /* path, "[vdso]", "[anon]", ... */
	struct binary *bin;     /* NULL when not a regular file */
};

struct proc_snapshot {
	uint32_t instance;
	pid_t pid;
	char comm[KILN_COMM_LEN];
	char sampled_comm[KILN_COMM_LEN]; /* the sampled thread's, from BPF */
	uint64_t cgroup_id;
	char *cgroup;           /* /proc/PID/cgroup text, NULL when unreadable */
	/* The event's keys (struct kiln_event); cgroup_keyed: the text is the
	 * one of cgroup_key's cgroups at cgroup_epoch (nothing moved between
	 * the event and the read). root_id: of the root its files were
	 * opened in, 0 before they were. */
	uint64_t root_key, root_id, cgroup_key, cgroup_epoch;
	bool cgroup_keyed;
	uint64_t starttime;     /* /proc/PID/stat field 22, for pid reuse checks */
	uint64_t exe_dev, exe_ino;
	bool exe_logged;        /* exe_* from the side-band log: the mapped
				 * file's device, which stat may not report */
	struct proc_mapping *maps; /* executable mappings, sorted by start */
	size_t nmaps;
	uint64_t taken_ns;      /* CLOCK_MONOTONIC of the last maps read */
	unsigned refreshes;
	bool capped;            /* mappings were dropped (a cap): never re-read */
	bool forked;            /* runs its parent's image: its mappings came
				 * through the parent (KILN_EVENT_F_FORKED) */
	/* Its mappings come from the side-band log, which held every one
	 * since its exec (version: which program and state of that log);
	 * /proc/PID/maps is read only once the log no longer does. */
	bool logged;
	struct mmap_log_version log_version;
	bool replaced;          /* another file was mapped over a mapping
				 * it lists: to be read again */
	bool ended;             /* exited or exec'd: frozen */
	uint64_t ended_drain;   /* drains completed when it ended */
	unsigned pins;          /* held samples refer to it: not reaped */
};

struct proc_stats {
	uint64_t snapshots, snapshot_failures, refreshes, table_full, reaped;
	/* Snapshots read after the process had exec'd: the next program's
	 * mappings, discarded. */
	uint64_t read_after_exec;
	/* Snapshots of forked processes (no exec since) that took their
	 * parent's mappings: copied from its snapshot, or read from its /proc
	 * files. */
	uint64_t forked_copies, forked_reads;
	/* Snapshots of processes gone before their read, from the side-band
	 * log; of these, logs that began after the program's exec (kiln
	 * started later): its earlier mappings unknown. */
	uint64_t from_log, from_log_partial;
	/* Snapshots of live processes taken from the side-band log (every
	 * mapping since their exec logged: /proc/PID/maps not read), and
	 * re-reads answered by it: mappings logged since, or none. */
	uint64_t logged_live, logged_refreshes, logged_unchanged;
	/* cgroup texts taken from the cache by cgroup id (cgroup v2 only),
	 * and dropped from it to stay within PROC_CGROUP_TEXTS */
	uint64_t cgroup_texts_cached, cgroup_texts_evicted;
	/* What a new process's /proc files were not read for: its root and
	 * cgroup text were its parent's (same keys, nothing moved since), its
	 * executable's identity came from the side-band log. */
	uint64_t roots_inherited, cgroups_inherited, exes_logged;
	struct mmap_log_stats log;
	/* Executable mappings not kept: beyond PROC_MAPS_PER_PROCESS in one
	 * process, or beyond the table's max_mappings; and the re-reads of
	 * such a snapshot skipped. */
	uint64_t maps_dropped_process, maps_dropped_table, refreshes_skipped;
	/* Executable mappings of live snapshots that the side-band saw
	 * another file mapped over, and of these the ones not queued for a
	 * re-read (PROC_REPLACED_MAX waiting already). */
	uint64_t mappings_replaced, replaced_not_queued;
	size_t live, binaries;
	size_t mappings;        /* executable mappings held, all snapshots */
};

/* Executable mappings kept per snapshot. A process with more (a JIT that
 * maps code page by page, or a process mapping one file 60 000 times to
 * cost kiln memory and CPU) keeps its first PROC_MAPS_PER_PROCESS by
 * address; the rest are counted, and its snapshot is never read again, so
 * it costs one bounded read per process, not one per refresh. */
#define PROC_MAPS_PER_PROCESS 4096
/* Processes waiting to be read again after a mapping of theirs was
 * replaced, and the least time between two such reads of one process. */
#define PROC_REPLACED_MAX 64
#define PROC_REPLACED_REREAD_NS (100ull * 1000000ull)
/* The side-band log holds at most max_mappings / PROC_LOG_SHARE. */
#define PROC_LOG_SHARE 8
/* cgroup texts cached by cgroup id (proc_table__cache_cgroups), each at
 * most PROC_CGROUP_TEXT_MAX bytes: under 1 MiB. */
#define PROC_CGROUP_TEXTS 1024
#define PROC_CGROUP_TEXT_MAX 1024

struct proc_table;

/* proc_root: "/proc" normally; tests may point elsewhere. max_processes
 * bounds the snapshots held, max_mappings the executable mappings they
 * hold together (a snapshot taken beyond it keeps what fits). */
struct proc_table *proc_table__new(const char *proc_root, size_t max_processes,
				   size_t max_mappings);
/* Told of every live snapshot whose mappings were read (taken or
 * refreshed), and of every snapshot that ends; from the caller's thread,
 * inside proc_table__on_event / proc_table__refresh. */
struct proc_observer {
	void (*mapped)(void *ctx, const struct proc_snapshot *s);
	void (*ended)(void *ctx, const struct proc_snapshot *s);
	void *ctx;
};
void proc_table__observe(struct proc_table *t, const struct proc_observer *o);
/* On a host of cgroup v2 alone (mounted at cgroup2_root), a process's
 * cgroup file is one line its cgroup's id determines: read once per id
 * (at most PROC_CGROUP_TEXTS, least recently used dropped first), not
 * once per process. NULL: every process's is read. */
void proc_table__cache_cgroups(struct proc_table *t, const char *cgroup2_root);
/* The sampler's count of cgroup migrations (kiln_event's cgroup_epoch):
 * with it a process takes its parent's cgroup text when the events say
 * both are in one set of cgroups and nothing moved since the parent's was
 * read. NULL: every process's own is read. */
void proc_table__use_cgroup_epoch(struct proc_table *t, const volatile uint64_t *epoch);
/* Applies one lifecycle event from the sampler. */
void proc_table__on_event(struct proc_table *t, const struct kiln_event *ev);
/* The snapshot of instance, or NULL. */
struct proc_snapshot *proc_table__get(struct proc_table *t, uint32_t instance);
/* Applies a side-band record (sampler/sideband.h) to the log that stands
 * in for the /proc files of processes gone before they were read. When
 * it maps a file over a mapping a live snapshot lists (a library unloaded
 * and another loaded in its range), the snapshot is queued to be read
 * again by proc_table__refresh_replaced, which the caller calls once the
 * samples taken so far are named with the mappings they ran in. */
void proc_table__on_sideband(struct proc_table *t, const struct sideband_record *r);
/* A queued snapshot is due: its last read is PROC_REPLACED_REREAD_NS old
 * (or it ended). */
bool proc_table__replaced_due(const struct proc_table *t);
/* Reads the due queued snapshots again. */
void proc_table__refresh_replaced(struct proc_table *t);
/* Snapshot taken at first sight may predate the dynamic loader's work:
 * re-reads young live snapshots (at about 50 ms, 250 ms and 1 s of age). */
void proc_table__refresh_young(struct proc_table *t);
/* Re-reads the mappings of a live snapshot (e.g. after dlopen). 0, or
 * -ESRCH when the process is gone or is another program now, or -E2BIG
 * (nothing read, counted) for a snapshot that hit a mapping cap. */
int proc_table__refresh(struct proc_table *t, struct proc_snapshot *snap);
/* The side-band log holds mappings of snap's program made since snap was
 * taken from it: a refresh would find them (and costs no /proc read). */
bool proc_table__log_moved(const struct proc_table *t, const struct proc_snapshot *snap);
/* Called after each drain: frees snapshots that ended before the previous
 * drain began (their samples are all drained) and are not pinned. */
void proc_table__drained(struct proc_table *t);
/* A caller holding samples of s past their drain keeps it from being
 * reaped until as many unpins. */
void proc_snapshot__pin(struct proc_snapshot *s);
void proc_snapshot__unpin(struct proc_snapshot *s);
void proc_table__stats(const struct proc_table *t, struct proc_stats *out);
/* The proc_root the table reads ("/proc" normally). */
const char *proc_table__root(const struct proc_table *t);
void proc_table__free(struct proc_table *t);

/* Parses /proc/PID/maps text; keeps executable mappings, at most
 * PROC_MAPS_PER_PROCESS. Exposed for tests. Returns the number of mappings
 * (*out malloc'd), or -errno. Names are malloc'd; free with
 * proc_mappings__free. */
int proc_maps__parse(const char *text, size_t len, struct proc_mapping **out,
		     uint64_t **devs, uint64_t **inos);
/* The same keeping at most max (0 allowed); *dropped: the executable
 * mappings beyond it (recognised by their permissions alone, not parsed:
 * what is not kept costs no allocation). */
int proc_maps__parse_max(const char *text, size_t len, size_t max, struct proc_mapping **out,
			 uint64_t **devs, uint64_t **inos, size_t *dropped);
/* The same from an open /proc/PID/maps through the PROCMAP_QUERY ioctl
 * (Linux 6.11): -ENOTTY on older kernels (and on a file not of procfs),
 * -ENAMETOOLONG for a name past PATH_MAX, -ESRCH for a process that is
 * gone. Names are those of the text (path, "[vdso]", or "[anon]" for
 * none), but for x86-64's [vsyscall], which the text alone lists. */
int proc_maps__query(int fd, size_t max, struct proc_mapping **out, uint64_t **devs,
		     uint64_t **inos, size_t *dropped);
void proc_mappings__free(struct proc_mapping *maps, size_t n);
/* The mapping containing addr, or NULL. */
const struct proc_mapping *proc_snapshot__find(const struct proc_snapshot *s,
					       uint64_t addr);

#endif
