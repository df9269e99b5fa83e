/* SPDX-License-Identifier: BSD-2-Clause */
/* kiln's counters: one snapshot struct of every stage's stats and one
 * registry (user/stats.c) that turns it into the agent's /metrics, record's
 * --stats JSON and record's summary. A new counter is one row in
 * stats_rows[] (plus the line that increments it in its stage). */
#ifndef KILN_STATS_H
#define KILN_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/elf.h"
#include "core/file.h"
#include "core/metrics.h"
#include "core/safe_open.h"
#include "export/files.h"
#include "export/sender.h"
#include "pipeline.h"
#include "proc/proc.h"
#include "symbolize/symbolizer.h"
#include "symbolize/symcache.h"
#include "unwind/unwind_table.h"
#include "unwind/unwinder.h"

struct kiln_stats {
	/* The pipeline's stages: stats__collect. */
	struct pipeline_totals t;
	struct metadata_stats md;
	struct proc_stats procs;
	struct symbolizer_stats sym;
	struct symcache_stats cache;
	struct debuginfod_stats dbgi;
	struct jit_stats jit;
	uint64_t events[KILN_EV_STAT_COUNT];
	uint64_t bpf_run_ns, bpf_run_cnt, bpf_kernel_run_ns;
	struct sideband_stats sideband; /* zero when the side-band is off */
	uint64_t sideband_bytes;
	uint64_t bpf_maps_bytes;        /* kernel memory of the BPF maps */
	struct core_btf_stats btf;      /* the kernel's types for CO-RE */
	/* Hostile-input refusals, process-wide (core/safe_open, core/elf). */
	struct safe_open_stats opens;
	uint64_t elf_refused[ELF_REFUSAL_COUNT];
	/* Unwind tables built, process-wide (unwind/unwind_table). */
	struct unwind_stats unwind;
	/* The BPF walker and the tables loaded for it (zero without). */
	uint64_t walker[KILN_UW_STAT_COUNT];
	struct unwinder_stats unwinder;
	/* Interpreter frames, per language (kiln/interp.h): the BPF walk, the
	 * processes, the names. */
	uint64_t interp_walker[KILN_LANG_COUNT][KILN_INTERP_STAT_COUNT];
	struct interp_stats interp[KILN_LANG_COUNT];
	struct code_names_stats names[KILN_LANG_COUNT];
	uint64_t output_refused[FILE_REFUSAL_COUNT]; /* core/file */
	/* The agent's exporters. */
	struct files_stats files;
	struct sender_stats send;
	uint64_t intervals, profiles_built, encode_failures;
	uint64_t profiles_capped, samples_folded, profiles_too_large;
	uint64_t queue_max_bytes;       /* 0 without a server */
	/* --otlp-endpoint's sender and the requests made for it */
	struct sender_stats otlp;
	uint64_t otlp_encode_failures, otlp_capped, otlp_samples_folded, otlp_too_large;
	/* The record run. */
	double seconds, cpu_user_ms, cpu_sys_ms;
	uint64_t frequency, cpus, label_sets, max_rss_kb;
};

/* Fills the pipeline's part of s (the rest is left as it is). */
void stats__collect(struct kiln_stats *s, struct pipeline *p);
/* /metrics: kiln_build_info and every registry row with a metric name.
 * 0 or metrics_buf's error. */
int stats__write_metrics(const struct kiln_stats *s, struct metrics_buf *b);
/* record --stats: every row with a JSON key, one object, into path. 0 or
 * -errno (the caller logs). */
int stats__write_json(const struct kiln_stats *s, const char *path);
/* record's summary: one "kiln: also ..." line of the non-zero counters no
 * other summary line shows. */
void stats__summary(const struct kiln_stats *s, FILE *f);

#endif
