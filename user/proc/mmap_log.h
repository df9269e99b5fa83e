/* SPDX-License-Identifier: BSD-2-Clause */
/* The executable mappings each process made since its last exec, as the
 * kernel's side-band records told them (sampler/sideband.h): what the
 * process table falls back on when /proc/PID/maps is gone, for a process
 * that lived a few milliseconds. Kept until the process's /proc files
 * were read (then no longer needed, until its next exec), or a few
 * seconds past its exit; at most max_mappings in all (the oldest
 * process's log goes first) and MMAP_LOG_PER_PROCESS a process. */
#ifndef KILN_PROC_MMAP_LOG_H
#define KILN_PROC_MMAP_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/sideband.h"

#define MMAP_LOG_PER_PROCESS 512
/* A log outlives its process this long: its first sample's event may
 * still be on its way. */
#define MMAP_LOG_GRACE_NS (10ull * 1000000000ull)

struct logged_mapping {
	uint64_t start, end, pgoff, dev, ino;
	char *name; /* a path, "[vdso]", or "[anon]" (no file: JIT code) */
};

struct mmap_log_stats {
	uint64_t recorded; /* mappings logged */
	uint64_t dropped; /* beyond MMAP_LOG_PER_PROCESS in one process */
	uint64_t evicted; /* logs of processes dropped to stay within max_mappings */
	size_t processes, mappings, bytes; /* held now */
};

struct mmap_log;

struct mmap_log *mmap_log__new(size_t max_mappings);
/* Applies one side-band record: a mapping joins its process's log (what
 * it overlaps is cut away, as the kernel replaced it), an exec starts a
 * new log, an exit starts the grace period, lost records leave every log
 * begun before them incomplete. */
void mmap_log__record(struct mmap_log *l, const struct sideband_record *r);
/* pid's mappings, sorted by start, not overlapping (valid until the next
 * call that changes l); 0 when none are logged. *since_exec: the log
 * began at the exec of the program that runs now (else it holds only what
 * was mapped after kiln started). */
size_t mmap_log__get(const struct mmap_log *l, uint32_t pid, const struct logged_mapping **maps,
		     int *since_exec);
/* Which program's log (its exec's time) and which state of it (gen
 * changes with every mapping logged); the program's file, the first file
 * execve mapped (its text comes before the dynamic loader's); whether its
 * exit was logged. */
struct mmap_log_version {
	uint64_t exec_ns, gen;
	uint64_t exe_dev, exe_ino;
	bool exited;
};
/* pid's mappings when the log holds every executable mapping of the
 * program that ran at at_ns: its exec was logged, at or before at_ns, and
 * no mapping since was dropped (a bound, memory, a LOST record); else 0.
 * *v says which program and state they are (valid as mmap_log__get's). */
size_t mmap_log__complete(const struct mmap_log *l, uint32_t pid, uint64_t at_ns,
			  const struct logged_mapping **maps, struct mmap_log_version *v);
/* When pid last exec'd, as the log saw it (kept after mmap_log__done);
 * 0 when it saw none. */
uint64_t mmap_log__exec_ns(const struct mmap_log *l, uint32_t pid);
/* pid's /proc files were read: its log is not needed until its next exec. */
void mmap_log__done(struct mmap_log *l, uint32_t pid);
/* Frees the logs of processes that exited more than MMAP_LOG_GRACE_NS
 * before now (CLOCK_MONOTONIC ns). */
void mmap_log__expire(struct mmap_log *l, uint64_t now_ns);
void mmap_log__stats(const struct mmap_log *l, struct mmap_log_stats *out);
void mmap_log__free(struct mmap_log *l);

#endif
