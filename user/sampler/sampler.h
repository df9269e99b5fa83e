/* SPDX-License-Identifier: BSD-2-Clause */
/* The BPF sampler: loads the skeleton, opens one cpu-clock perf event per
 * online CPU, flips and drains the two generations of counts and stacks,
 * and reads the outcome counters. */
#ifndef KILN_SAMPLER_SAMPLER_H
#define KILN_SAMPLER_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kiln/counters.h"
#include "kiln/sample.h"
#include "kiln/python.h"
#include "kiln/ruby.h"
#include "kiln/unwind.h"
#include "sampler/core_btf.h"
#include "sampler/sample_table.h"
#include "sampler/sideband.h"

/* The oldest kernel kiln runs on (the kernel matrix's oldest): it has
 * every feature sampler__probe asks for. */
#define KILN_MIN_KERNEL "5.10"

/* 16 pages (64 KiB) a CPU: about 400 mappings between two reads. */
#define SIDEBAND_PAGES 16

/* The longest the commands let samples gather between drains. Each drain
 * names every distinct stack it holds: a stack that recurs is named once
 * a drain, so fewer drains cost less. The tables' default bounds hold
 * twice this. */
#define SAMPLER_DRAIN_NS (10ull * 1000000000ull)

/* Without wake_on_new, a process sampled this many times before its
 * unwind tables loaded wakes user space to load them (once a process
 * image, at most every 50 ms on the host): at 97 Hz, one that has run
 * about 80 ms. Most short-lived processes end sooner and wake nothing:
 * at 4, one in seven of make bench's 20 ms processes drew 4 samples and
 * woke the loop for tables it no longer needed (2.5 wakeups a second,
 * 13-15 % of record's steady CPU on a VM whose exits cost 8 us). */
#define SAMPLER_UNLOADED_WAKE 8
/* Processes whose executable mappings early walks keep at once: this
 * share of --unwind-processes (1024 of the default 4096) */
#define SAMPLER_EARLY_SHARE 4

struct sampler_opts {
	unsigned frequency;             /* Hz per CPU */
	bool include_idle;
	bool filter;                    /* only pids given to sampler__filter_add */
	uint32_t counts_entries;        /* 0: default from CPUs x Hz */
	uint32_t stack_entries;         /* per generation, 0: default */
	uint32_t process_entries;       /* tracked processes */
	uint32_t unwind_rows;           /* elements of unwind_rows (two rows each);
					 * 0: no table walks */
	uint32_t unwind_processes;      /* processes walked with tables */
	bool no_bpf_loop;               /* the unrolled walker even with bpf_loop */
	bool wake_on_new;               /* a new process's first sample wakes user
					 * space (always with filter) */
};

/* The walker's maps, for user/unwind/ to fill (include/kiln/unwind.h).
 * rules and tables are the maps' memory, shared with BPF; the rows' chunks
 * (sampler__rows_chunk) are mmap()ed a range at a time (BPF_F_MMAPABLE). */
struct sampler_unwind_maps {
	uint32_t rows_cap;              /* slots (rows and page index entries) */
	uint8_t *rules;                 /* KILN_UNWIND_RULES entries, rule_stride apart */
	size_t rule_stride;
	struct kiln_exe_table *tables;  /* KILN_UNWIND_SLOTS */
	volatile uint32_t *tables_gen; /* counted up when a loaded table goes */
	volatile uint32_t *maps_gen;   /* counted up when a live image's proc_maps entry changes */
	int proc_maps_fd;
	int files_fd;                   /* file_tables; -1: no early walks */
	int py_procs_fd;                /* include/kiln/python.h */
	int rb_procs_fd;                /* include/kiln/ruby.h */
	uint32_t procs_max;             /* entries of each */
	size_t bytes;                   /* kernel memory of these maps but the rows' chunks */
};

typedef void (*event_fn)(const struct kiln_event *ev, void *ctx);

struct sampler;

/* Probes every kernel feature the sampler uses (kernel BTF at
 * /sys/kernel/btf/vmlinux, program and map types, helpers). 0, or
 * -1 after logging one line naming the first one missing and the Linux
 * release that added it. sampler__open runs it before loading anything. */
int sampler__probe(void);

/* Whether perf event programs may use hash maps that are not preallocated
 * (Linux 6.1; before, the sampler preallocates them: their bound's worth
 * of memory from the start, docs/kernels.md). */
bool sampler__lazy_hash_maps(void);
/* Whether the kernel has perf's kprobe PMU, through which libbpf attaches
 * kprobes: absent where the kernel is built without kprobe events (some
 * microVM kernels). */
bool sampler__kprobes(void);
/* Opens and loads the BPF object sized from opts; its CO-RE relocations
 * read the kernel's types cut and kept in the cache directory cache_dirfd
 * (core_btf.h; -1: none, all of the kernel's BTF read). NULL and *err
 * (-errno) on failure, after logging one sentence saying why. */
struct sampler *sampler__open(const struct sampler_opts *opts, int cache_dirfd, int *err);
/* Profile pid (and, with KILN_FILTER_CHILDREN, what it forks from now). */
int sampler__filter_add(struct sampler *s, pid_t pid, uint8_t flags);
/* What the sampler hands up as it reads its rings (ctx to each). */
struct sampler_hooks {
	event_fn on_event;       /* lifecycle events */
	sideband_fn on_sideband; /* side-band records (sideband.h); NULL: not read */
	sample_fn on_new_key;    /* a generation's first sample of a key, with
				  * its stacks (NULL: none) */
	void *ctx;
};

/* Opens the perf events and attaches every program; with on_sideband
 * also the side-band records, or logs why not and goes on without.
 * 0 or -errno. */
int sampler__attach(struct sampler *s, const struct sampler_hooks *hooks);
/* Waits up to timeout_ms for lifecycle events and hands them to on_event,
 * after the side-band records read so far to on_sideband. Returns the
 * number of events handled, or -errno. */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Ends a sampler__poll under way, or the next one, at once. Any thread. */
void sampler__wake(struct sampler *s);
/* The caller read the ring now and reads it again within 100 ms: the
 * programs need not wake it for a new interpreter stack until then
 * (bpf key_wakeup). */
void sampler__reading_soon(struct sampler *s);
/* Flips the generation, waits for programs still writing the old one, and
 * hands every sample of it to fn, then clears it. */
int sampler__drain(struct sampler *s, sample_fn fn, void *ctx,
		   struct drain_stats *st);
/* Samples after mono_ns (CLOCK_MONOTONIC, as bpf_ktime_get_ns) are not
 * counted (outcome KILN_SKIP_LATE); 0 counts them again. */
void sampler__set_window_end(struct sampler *s, uint64_t mono_ns);
/* Stops sampling (closes the perf events); a drain after it is final. */
void sampler__stop(struct sampler *s);
/* The programs' counters summed over CPUs, cumulative (the outcomes too:
 * sampler__drain reports each generation's part). */
void sampler__counters(struct sampler *s, struct kiln_counters *out);
/* The walker's maps; false when opts->unwind_rows was 0 (no walks). */
bool sampler__unwind_maps(struct sampler *s, struct sampler_unwind_maps *out);
/* Loads interpreter walker i (KILN_PROG_PY, KILN_PROG_RB) on first use
 * (a few ms of the kernel's verifier, which a start without such
 * processes saves), then 0 at once. -errno when there are no walks or the
 * kernel refused it (said once, not tried again). */
int sampler__load_walker(struct sampler *s, unsigned i);
unsigned sampler__cpus(const struct sampler *s);
/* The count of cgroup migrations the BPF side keeps (events carry it). */
const volatile uint64_t *sampler__cgroup_epoch(const struct sampler *s);
/* The side-band records' counters and ring bytes; false when off. */
bool sampler__sideband_stats(const struct sampler *s, struct sideband_stats *out, uint64_t *bytes);
/* Kernel memory of all the object's maps now (their fdinfo "memlock";
 * those allocated whole at load read once), the unwind rows' chunks
 * included; the side-band rings are apart (sampler__sideband_stats). */
uint64_t sampler__maps_bytes(struct sampler *s);
/* The fd of chunk c of unwind_rows (include/kiln/unwind.h), created and
 * put in the map on first use: the rows' kernel memory grows with the
 * tables, KILN_ROWS_CHUNK elements at a time, up to --unwind-memory.
 * -errno: c is past the budget (-ERANGE), or the kernel refused the
 * memory. */
int sampler__rows_chunk(struct sampler *s, uint32_t c);
/* Gives chunk c back to the kernel (not chunk 0, libbpf's inner map);
 * the caller holds no rows in it. False: it was not held. */
bool sampler__rows_chunk_drop(struct sampler *s, uint32_t c);
/* Kernel memory of the chunks held now. */
uint64_t sampler__rows_bytes(const struct sampler *s);
/* The sampling program's run time by the kernel's run-time statistics
 * while someone else keeps them on (kernel.bpf_stats_enabled), else 0:
 * the bench's and the tests' check of the programs' own clock
 * (kiln_counters.run_ns). kiln never turns them on, which would cost
 * every BPF program of the host. */
uint64_t sampler__kernel_run_ns(struct sampler *s);
/* How the BPF object's CO-RE relocations found the kernel's types
 * (core_btf.h). */
void sampler__btf_stats(const struct sampler *s, struct core_btf_stats *out);
void sampler__destroy(struct sampler *s);

extern const char *const kiln_outcome_names[KILN_OUTCOME_COUNT];

#endif
