/* SPDX-License-Identifier: BSD-2-Clause */
/* The path of a sample shared by `kiln record` and `kiln agent`: the BPF
 * sampler, the process table, the metadata stage and the symbolizer, feeding
 * the profiles of the current interval (one per label set, or per value of
 * one label, or one for everything). Single-threaded: every call comes from
 * the caller's loop thread. */
#ifndef KILN_PIPELINE_H
#define KILN_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "metadata/metadata.h"
#include "profile/profile_set.h"
#include "sampler/sampler.h"
#include "symbolize/debuginfod.h"
#include "unwind/unwinder.h"

struct pipeline_opts {
	struct sampler_opts sampler;    /* process_entries 0: max_processes */
	struct metadata_opts metadata;
	uint64_t max_processes;
	uint64_t max_mappings;          /* executable mappings, all processes */
	uint64_t unwind_bytes;          /* unwind table rows' memory; 0: frame pointers only */
	uint64_t unwind_table_ttl_ns;   /* a table no process maps this long goes; 0: never */
	const char *unwind_cache;       /* tables cached on disk: NULL default, "none" off */
	uint64_t unwind_cache_bytes;    /* its bound; 0: off */
	/* Its files counted (and kept within the bound) at its first write, not
	 * at start (record: a short run that only reads the cache never
	 * lists a directory of thousands of files) */
	bool count_cache_on_write;
	bool no_python;                 /* no Python frames (unwind/python.h) */
	bool no_ruby;                   /* no Ruby frames (unwind/ruby.h) */
	uint64_t cache_bytes;           /* ELF symbol cache */
	uint64_t cache_ttl_ns;          /* its tables unused this long go; 0: never */
	struct debuginfod_opts debuginfod; /* debug files from DEBUGINFOD_URLS' servers */
	/* Hold the samples whose frames wait for a debuginfod lookup until it
	 * ended (record: its one profile is written at the end); the agent
	 * names them at once, and later intervals with the file. */
	bool wait_for_names;
	uint64_t jit_bytes;             /* JIT symbols (perf maps, jitdump); 0: none read */
	size_t max_label_sets;          /* profiles per interval */
	/* How samples are split into profiles: NULL = by the whole label set
	 * (agent), "" = one profile (record), a label name = by its value. */
	const char *group_by;
	bool track_label_sets;          /* keep pipeline__label_sets_seen (record) */
	/* Each stack starts with its full label set (a FRAME_LABELS frame),
	 * so a profile of several sets keeps every sample's labels (record:
	 * its pprof carries them as sample labels). */
	bool label_frames;
	/* Sees every sample added to a profile, after it was named: its full
	 * label set, its frames (root first, without a label frame) and its
	 * count; on the loop thread, during a drain (NULL: none). The agent's
	 * pulls and CPU metrics read the samples here, so they share the one
	 * sampler with the exporters and change nothing they get. */
	void (*tap)(void *ctx, const struct labels *labels, const struct frame *frames, size_t n,
		    uint64_t count);
	void *tap_ctx;
};

/* Totals since start, for summaries and /metrics. */
struct pipeline_totals {
	uint64_t outcomes[KILN_OUTCOME_COUNT];
	uint64_t drained;               /* samples handed over by the sampler */
	uint64_t profiled;              /* added to a profile */
	uint64_t filtered;              /* dropped by metadata filters */
	uint64_t label_sets_full;       /* samples beyond max_label_sets */
	uint64_t add_failures;          /* samples lost to out-of-memory */
	/* wait_for_names: samples held for a debug file's lookup, for the
	 * perf map a process writes as it exits, and named at once because
	 * the holding bound (PIPELINE_WAIT_BYTES) was reached */
	uint64_t waited, jit_waited, wait_full;
	uint64_t drain_keys;            /* distinct keys drained */
	uint64_t stacks_missing;        /* stack ids whose stack the map no longer held */
	uint64_t drains, invariant_failures;
	uint64_t drain_ns_last, drain_ns_max, drain_ns_sum;
};

struct pipeline;

/* Opens the sampler and every stage; logs why and returns NULL + errno on
 * failure: ENOMEM when kiln ran out of memory, ENODEV when the sampler
 * could not be set up on this host, EINVAL for a bad metadata option. */
struct pipeline *pipeline__open(const struct pipeline_opts *opts);
/* Every stage but the sampler, the process table reading proc_root: for
 * feeding samples without BPF (unit tests). Only pipeline__add_sample,
 * pipeline__account_drain, pipeline__take and the getters apply (the
 * sampler's functions and pipeline__drain need pipeline__open's). */
struct pipeline *pipeline__new(const struct pipeline_opts *opts, const char *proc_root);
/* What a drain does with each sample the sampler hands over: labels
 * (filtered or routed to its label set's profile), symbols, added; each
 * count lands in exactly one of profiled, filtered, label_sets_full and
 * add_failures. */
void pipeline__add_sample(struct pipeline *p, const struct drained_sample *d);
/* What a drain does after its samples: adds the sampler's stats to the
 * totals, checks drained == sampled, lets the process table reap. */
void pipeline__account_drain(struct pipeline *p, const struct drain_stats *st, int err);
/* For record -p / COMMAND: profile only these pids. */
int pipeline__filter_add(struct pipeline *p, pid_t pid, uint8_t flags);
/* Opens the perf events; sampling starts. 0 or -errno (logged). */
int pipeline__attach(struct pipeline *p);
/* Handles lifecycle events for up to timeout_ms, re-reads young process
 * snapshots. 0 or -errno. */
int pipeline__poll(struct pipeline *p, int timeout_ms);

/* The first drain comes early, 2 s after start: it names what ran since
 * start-up, loading the kernel's and the running programs' symbol tables
 * (one-time work, done before the periodic drains), while the processes
 * seen at start are still there to open their files through; the agent's
 * /ready waits for it. */
#define PIPELINE_FIRST_DRAIN_NS 2000000000ull

/* The loop of every command: polls process events (waking at least every
 * second, see pipeline.c), drains every drain_every_ns, hands over each interval's profiles
 * every interval_ns, until stop says so or the deadline passes; then stops
 * sampling and drains once more, so the last profiles hold every sample. */
struct pipeline_loop {
	uint64_t start_ns;      /* CLOCK_MONOTONIC the window began; 0: now */
	uint64_t deadline_ns;   /* CLOCK_MONOTONIC end of the window; 0: none */
	uint64_t drain_every_ns;
	uint64_t first_drain_ns; /* after start_ns; 0: drain_every_ns */
	/* 0: one interval, which the caller takes with pipeline__take after
	 * the run; else interval() every interval_ns and for the last,
	 * partial one. */
	uint64_t interval_ns;
	/* After each poll; true ends the loop (a signal, a child's exit). */
	bool (*stop)(void *ctx, uint64_t now_ns);
	/* After each drain (NULL: nothing). */
	void (*drained)(void *ctx);
	/* When a drain is due ahead of drain_every_ns (CLOCK_MONOTONIC; 0:
	 * now, UINT64_MAX: none): the loop wakes then. NULL: never. Another
	 * thread that makes one due calls pipeline__wake. */
	uint64_t (*drain_at)(void *ctx);
	/* An interval's profiles over [wall_start_ns, wall_end_ns) of
	 * CLOCK_REALTIME; the callee owns set. */
	void (*interval)(void *ctx, struct profile_set *set, uint64_t wall_start_ns,
			 uint64_t wall_end_ns);
	void *ctx;
	uint64_t stopped_ns;    /* out: when sampling stopped, at most the deadline */
};
/* Runs the loop until it ends. 0, or the -errno of a failed poll (the loop
 * still stopped and drained). */
int pipeline__run(struct pipeline *p, struct pipeline_loop *l);
/* Ends the loop's wait at once (any thread). */
void pipeline__wake(struct pipeline *p);
/* Frees the symbol tables unused for cache_ttl_ns and, when tables were
 * freed or loaded since the last drain, hands the heap's free pages back to
 * the system; then drains the sampler into the current profiles. 0 or
 * -errno. */
int pipeline__drain(struct pipeline *p);
/* Waits at most timeout_ns for the debuginfod lookups queued or under
 * way; returns how many still are. */
size_t pipeline__wait_lookups(struct pipeline *p, uint64_t timeout_ns);
/* Names and adds the samples held for lookups (wait_for_names), with the
 * debug files that arrived: the lookups still under way are given up. */
void pipeline__name_held(struct pipeline *p);
/* Stops sampling (the next drain is the last with samples). */
void pipeline__stop(struct pipeline *p);
/* Hands over the current profiles (the samples held for lookups named
 * and added first) and starts an empty set; the caller frees the returned
 * set. NULL on out of memory (current set kept). */
struct profile_set *pipeline__take(struct pipeline *p);
/* The current profiles (still being filled). */
struct profile_set *pipeline__current(struct pipeline *p);

struct sampler *pipeline__sampler(struct pipeline *p);
/* NULL when user stacks are walked by frame pointers only. */
struct unwinder *pipeline__unwinder(struct pipeline *p);
struct proc_table *pipeline__procs(struct pipeline *p);
struct symbolizer *pipeline__symbolizer(struct pipeline *p);
struct metadata *pipeline__metadata(struct pipeline *p);
const struct pipeline_totals *pipeline__totals(const struct pipeline *p);
/* With track_label_sets: the distinct full label sets seen since start
 * (at most 1000), samples in entry->samples, profiles empty; for record's
 * summary. NULL otherwise. */
struct profile_set *pipeline__label_sets_seen(struct pipeline *p);
void pipeline__free(struct pipeline *p);

#endif
