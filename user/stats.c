/* SPDX-License-Identifier: BSD-2-Clause */
/* The registry: every counter kiln keeps, once. Each row says where its
 * value lives in struct kiln_stats and where it is shown: its Prometheus
 * family (NULL: not in /metrics), its key in record's --stats JSON (NULL:
 * not there; "a.b": key b of object a), and optionally the phrase of
 * record's summary line. Rows of one family are consecutive. Existing
 * metric names and JSON keys are an interface (dashboards, tests/e2e,
 * tests/bench/analyze.py, tests/soak/check.py): add, never rename. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core/counters.h"
#include "sampler/sampler.h"
#include "stats.h"

#define T struct kiln_stats
/* The field's C type picks how it is read; another type does not compile. */
#define KIND(F) _Generic(((T *)0)->F, _Bool: COUNTER_BOOL, double: COUNTER_DOUBLE, \
			 unsigned long: COUNTER_U64, unsigned long long: COUNTER_U64)
/* ... : optional designators, e.g. .summary = "stacks missing". */
#define ROW(METRIC, TYPE, LABEL, VALUE, JSON, F, UNIT, HELP, ...) \
	{ .metric = METRIC, .type = TYPE, .label = LABEL, .label_value = VALUE, .json = JSON, \
	  .unit = UNIT, .help = HELP, .kind = KIND(F), .offset = offsetof(T, F), __VA_ARGS__ }
#define COUNTER(METRIC, JSON, F, UNIT, HELP, ...) \
	ROW(METRIC, METRICS_COUNTER, NULL, NULL, JSON, F, UNIT, HELP, __VA_ARGS__)
#define GAUGE(METRIC, JSON, F, UNIT, HELP, ...) \
	ROW(METRIC, METRICS_GAUGE, NULL, NULL, JSON, F, UNIT, HELP, __VA_ARGS__)
/* One labelled sample of a family (the family's first row gives its help). */
#define LABELED(METRIC, LABEL, VALUE, JSON, F, UNIT, HELP, ...) \
	ROW(METRIC, METRICS_COUNTER, LABEL, VALUE, JSON, F, UNIT, HELP, __VA_ARGS__)
/* A uint64_t of nanoseconds: seconds in /metrics, nanoseconds in JSON. */
#define NANOS(METRIC, TYPE, JSON, F, HELP, ...) \
	{ .metric = METRIC, .type = TYPE, .json = JSON, .unit = "seconds", .help = HELP, \
	  .kind = COUNTER_NS, .offset = offsetof(T, F) + 0 * sizeof(KIND(F)), __VA_ARGS__ }
/* A value only a function computes (a ratio). */
#define GETTER(METRIC, TYPE, FN, UNIT, HELP, ...) \
	{ .metric = METRIC, .type = TYPE, .unit = UNIT, .help = HELP, .kind = COUNTER_GET, \
	  .get = FN, __VA_ARGS__ }

static double one(const void *snap)
{
	return 1;
}

static double cache_hit_ratio(const void *snap)
{
	const struct kiln_stats *s = snap;
	uint64_t lookups = s->cache.hits + s->cache.misses;

	return lookups ? (double)s->cache.hits / (double)lookups : 0;
}

static double last_status(const void *snap)
{
	return (double)((const struct kiln_stats *)snap)->send.last_status;
}

static double otlp_last_status(const void *snap)
{
	return (double)((const struct kiln_stats *)snap)->otlp.last_status;
}

#define OUTCOME(I, NAME) \
	LABELED("kiln_bpf_outcomes_total", "outcome", NAME, "outcomes." NAME, t.outcomes[I], \
		"samples", "every BPF program run, by outcome (sampled, skipped or dropped)")
#define DROPPED(I, NAME) \
	LABELED("kiln_samples_dropped_total", "reason", NAME, NULL, t.outcomes[I], "samples", \
		"samples lost, by reason (BPF outcomes, label-set bound, memory)")

#define FILE_REFUSED(I, NAME) \
	LABELED("kiln_files_refused_total", "reason", NAME, "files_refused." NAME, \
		opens.refused[I], "files", \
		"files a process controls that kiln refused to open, by reason")
#define ELF_REFUSED(I, NAME) \
	LABELED("kiln_elf_refused_total", "reason", NAME, "elf_refused." NAME, \
		elf_refused[I], "refusals", \
		"ELF files, or parts of them, refused for exceeding a bound, by reason")

#define DEBUGINFOD_RESULT(I, NAME, PHRASE) \
	LABELED("kiln_debuginfod_results_total", "result", NAME, "debuginfod." NAME, \
		dbgi.results[I], "lookups", "debuginfod lookups ended, by result", .summary = PHRASE)
#define JIT_REFUSED(I, NAME) \
	LABELED("kiln_jit_refused_total", "reason", NAME, "jit_refused." NAME, jit.refused[I], \
		"refusals", "perf maps and jitdump files, or parts of them, refused, by reason", \
		.summary = "JIT symbol refusals (" NAME ")")

#define UNWIND_REFUSED(I, NAME) \
	LABELED("kiln_unwind_tables_refused_total", "reason", NAME, "unwind_refused." NAME, \
		unwind.refused[I], "tables", \
		"ELF files that got no unwind table (or lost their debug file's), by reason")
#define UNWIND_UNSUPPORTED(I, NAME) \
	LABELED("kiln_unwind_rows_unsupported_total", "reason", NAME, \
		"unwind_unsupported." NAME, unwind.unsupported[I], "rows", \
		"unwind rows made INVALID because the BPF walker cannot apply their CFI rule")
#define WALKER(I, METRIC, LABEL, VALUE, JSON, UNIT, HELP, ...) \
	ROW(METRIC, METRICS_COUNTER, LABEL, VALUE, JSON, walker[I], UNIT, HELP, __VA_ARGS__)
#define WALK_ERROR(I, NAME) \
	WALKER(I, "kiln_unwind_errors_total", "reason", NAME, "walker.errors." NAME, "stacks", \
	       "user stack walks stopped at a frame they could not unwind, by reason", \
	       .summary = "unwind stopped (" NAME ")")
#define FALLBACK(I, NAME) \
	LABELED("kiln_unwind_mappings_without_table_total", "reason", NAME, \
		"unwinder.without_table." NAME, unwinder.fallback[I], "mappings", \
		"executable mappings written for the BPF walker without a table (walked by frame pointers), by reason")
#define CACHE_REFUSED(I, NAME) \
	LABELED("kiln_unwind_cache_refused_total", "reason", NAME, \
		"unwinder.cache.refused." NAME, unwinder.cache.refused[I], "files", \
		"unwind cache files not used (deleted) or not written, or its directory not used, by reason")
/* Interpreter frames of language L (kiln/interp.h), LANG its metric and
 * JSON prefix, TITLE its name in help text. */
#define INTERP_WALK(L, LANG, TITLE, I, NAME) \
	LABELED("kiln_" LANG "_walk_errors_total", "reason", NAME, LANG ".walk_errors." NAME, \
		interp_walker[L][I], "samples", \
		TITLE " walks in BPF that ended early or were cut, by reason (native frames kept)", \
		.summary = TITLE " walks stopped (" NAME ")")
#define INTERP_REFUSED(L, LANG, TITLE, I, NAME) \
	LABELED("kiln_" LANG "_processes_refused_total", "reason", NAME, LANG ".refused." NAME, \
		interp[L].refused[I], "processes", \
		TITLE " processes given no " TITLE " frames, by reason (logged once per binary)", \
		.summary = TITLE " processes refused (" NAME ")")
#define INTERP_UNNAMED(L, LANG, TITLE, I, NAME) \
	LABELED("kiln_" LANG "_frames_unnamed_total", "reason", NAME, LANG ".unnamed." NAME, \
		names[L].failures[I], "frames", TITLE " frames left without a name, by reason", \
		.summary = TITLE " frames unnamed (" NAME ")")
#define INTERP_UNNAMED_ALL(L, LANG, TITLE) \
	INTERP_UNNAMED(L, LANG, TITLE, CODE_NAMES_GONE, "no_process"), \
	INTERP_UNNAMED(L, LANG, TITLE, CODE_NAMES_UNREADABLE, "unreadable"), \
	INTERP_UNNAMED(L, LANG, TITLE, CODE_NAMES_NOT_CODE, "not_code"), \
	INTERP_UNNAMED(L, LANG, TITLE, CODE_NAMES_REUSED, "reused"), \
	INTERP_UNNAMED(L, LANG, TITLE, CODE_NAMES_BAD_STRING, "bad_string")
#define INTERP_COMMON(L, LANG, TITLE) \
	COUNTER("kiln_" LANG "_walks_total", LANG ".walks", interp_walker[L][KILN_INTERP_WALKS], \
		"samples", "samples whose BPF walk met the " TITLE " eval loop"), \
	COUNTER("kiln_" LANG "_frames_walked_total", LANG ".frames", \
		interp_walker[L][KILN_INTERP_FRAMES], "frames", \
		TITLE " frames written by the BPF walk")
#define INTERP_NAMES(L, LANG, TITLE) \
	GAUGE("kiln_" LANG "_processes", LANG ".processes", interp[L].processes, "processes", \
	      TITLE " processes given " TITLE " frames now"), \
	COUNTER("kiln_" LANG "_processes_detected_total", LANG ".detected", interp[L].detected, \
		"processes", TITLE " processes recognized and checked"), \
	COUNTER("kiln_" LANG "_frames_total", LANG ".frames_symbolized", names[L].frames, "frames", \
		TITLE " frames symbolized (once per distinct stack and drain)"), \
	COUNTER("kiln_" LANG "_frames_named_total", LANG ".frames_named", names[L].named, \
		"frames", TITLE " frames named from their code objects"), \
	COUNTER("kiln_" LANG "_code_reads_total", LANG ".code_reads", names[L].reads, "reads", \
		"code objects read from " TITLE " processes"), \
	INTERP_UNNAMED_ALL(L, LANG, TITLE), \
	GAUGE("kiln_" LANG "_names_bytes", LANG ".names_bytes", names[L].bytes, "bytes", \
	      "bytes of " TITLE " names and line tables cached (at most 32 MiB)"), \
	COUNTER("kiln_" LANG "_names_flushes_total", LANG ".names_flushes", names[L].flushes, \
		"flushes", "times the " TITLE " name cache was full and started over", \
		.summary = TITLE " name cache flushes"), \
	COUNTER("kiln_" LANG "_line_tables_skipped_total", LANG ".line_tables_skipped", \
		names[L].no_lines, "code objects", \
		"code objects whose line table was over 64 KiB (their frames get the first line)")
#define OUTPUT_REFUSED(I, NAME) \
	LABELED("kiln_output_refused_total", "reason", NAME, "output_refused." NAME, \
		output_refused[I], "refusals", \
		"output files or directories refused because another user could redirect the write, by reason")

static const struct counter stats_rows[] = {
	/* record's run (JSON only) */
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "seconds", seconds, "seconds", "length of the run"),
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "frequency", frequency, "hertz", "--frequency"),
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "cpus", cpus, "cpus", "CPUs sampled"),
	GETTER("kiln_build_info", METRICS_GAUGE, one, "", "kiln's version, as a label",
	       .label = "version", .label_value = KILN_VERSION),
	/* samples, from the BPF program to the profiles */
	COUNTER("kiln_samples_total", "profiled", t.profiled, "samples",
		"samples added to profiles"),
	DROPPED(KILN_DROP_STACK_FULL, "stack_map_full"),
	DROPPED(KILN_DROP_COUNTS_FULL, "counts_map_full"),
	DROPPED(KILN_DROP_RING_FULL, "ring_full"),
	LABELED("kiln_samples_dropped_total", "reason", "label_sets_full", "label_sets_full",
		t.label_sets_full, "samples", NULL),
	LABELED("kiln_samples_dropped_total", "reason", "out_of_memory", "add_failures",
		t.add_failures, "samples", NULL),
	LABELED("kiln_samples_filtered_total", "reason", "idle", NULL, t.outcomes[KILN_SKIP_IDLE],
		"samples", "samples not profiled on purpose, by reason"),
	LABELED("kiln_samples_filtered_total", "reason", "excluded_namespace",
		"filtered_by.excluded_namespace", md.filtered[METADATA_EXCLUDED_NAMESPACE],
		"samples", NULL),
	LABELED("kiln_samples_filtered_total", "reason", "opted_out", "filtered_by.opted_out",
		md.filtered[METADATA_OPTED_OUT], "samples", NULL),
	LABELED("kiln_samples_filtered_total", "reason", "pods_not_synced",
		"filtered_by.pods_not_synced", md.filtered[METADATA_PODS_NOT_SYNCED], "samples",
		NULL),
	COUNTER("kiln_samples_drained_total", "drained", t.drained, "samples",
		"samples handed over by the sampler"),
	COUNTER("kiln_samples_filtered_by_labels_total", "filtered", t.filtered, "samples",
		"samples dropped by the metadata filters (namespace, opt-out)"),
	OUTCOME(KILN_SAMPLED, "sampled"),
	OUTCOME(KILN_SKIP_IDLE, "idle"),
	OUTCOME(KILN_SKIP_FILTERED, "filtered"),
	OUTCOME(KILN_SKIP_LATE, "after_window"),
	OUTCOME(KILN_DROP_STACK_FULL, "stack_map_full"),
	OUTCOME(KILN_DROP_COUNTS_FULL, "counts_map_full"),
	OUTCOME(KILN_DROP_RING_FULL, "ring_full"),
	LABELED("kiln_process_events_total", "result", "sent", "events_sent",
		events[KILN_EV_SENT], "events", "process lifecycle events from BPF, by result"),
	LABELED("kiln_process_events_total", "result", "dropped", "events_dropped",
		events[KILN_EV_DROPPED], "events", NULL),
	COUNTER("kiln_unloaded_process_wakeups_total", "unloaded_process_wakeups",
		events[KILN_EV_WAKE_UNLOADED], "wakeups",
		"wakeups of kiln by a process sampled 8 times before its unwind tables loaded"),
	COUNTER("kiln_interpreter_name_wakeups_total", "interpreter_name_wakeups",
		events[KILN_EV_WAKE_NAMES], "wakeups",
		"wakeups of kiln by a stack with an interpreter code object new to its CPU since the last drain, whose name is read from the living process (at most 10 a second)"),
	/* drains */
	COUNTER("kiln_drains_total", "drains", t.drains, "drains", "drains of the sampler's generations"),
	COUNTER("kiln_drain_conservation_failures_total", "invariant_failures",
		t.invariant_failures, "drains", "drains where drained != sampled"),
	COUNTER("kiln_drain_keys_total", "drain_keys", t.drain_keys, "keys",
		"distinct (process, stack) keys drained"),
	COUNTER("kiln_stacks_missing_total", "stacks_missing", t.stacks_missing, "keys",
		"drained keys whose stack the stack map no longer held", .summary = "stacks missing"),
	NANOS("kiln_drain_duration_seconds", METRICS_GAUGE, "drain_ns_last", t.drain_ns_last,
	      "duration of the last drain"),
	NANOS("kiln_drain_duration_seconds_max", METRICS_GAUGE, "drain_ns_max", t.drain_ns_max,
	      "longest drain so far"),
	NANOS("kiln_drain_duration_seconds_total", METRICS_COUNTER, "drain_ns_sum", t.drain_ns_sum,
	      "time spent draining"),
	/* the agent's exports (/metrics only) */
	COUNTER("kiln_intervals_total", NULL, intervals, "intervals", "intervals exported"),
	COUNTER("kiln_profiles_built_total", NULL, profiles_built, "profiles",
		"pprof profiles built"),
	COUNTER("kiln_profiles_sent_total", NULL, send.profiles_sent, "profiles",
		"profiles the server accepted"),
	COUNTER("kiln_push_requests_total", NULL, send.requests_sent, "requests",
		"requests the server accepted"),
	COUNTER("kiln_push_bytes_total", NULL, send.bytes_sent, "bytes",
		"request bytes the server accepted"),
	COUNTER("kiln_push_failures_total", NULL, send.attempts_failed, "attempts",
		"failed send attempts (retried or refused)"),
	COUNTER("kiln_push_retries_total", NULL, send.retries, "attempts",
		"send attempts that were retries"),
	GETTER("kiln_push_last_status", METRICS_GAUGE, last_status, "",
	       "HTTP status of the last send attempt (0: transport error or none yet)"),
	LABELED("kiln_profiles_dropped_total", "reason", "rejected", NULL,
		send.profiles_rejected, "profiles",
		"profiles that will never reach the server, by reason"),
	LABELED("kiln_profiles_dropped_total", "reason", "queue_full", NULL,
		send.profiles_dropped_full, "profiles", NULL),
	LABELED("kiln_profiles_dropped_total", "reason", "shutdown", NULL,
		send.profiles_dropped_shutdown, "profiles", NULL),
	LABELED("kiln_profiles_dropped_total", "reason", "encode_failed", NULL,
		encode_failures, "profiles", NULL),
	LABELED("kiln_profiles_dropped_total", "reason", "too_old", NULL,
		send.profiles_dropped_old, "profiles", NULL),
	LABELED("kiln_profiles_dropped_total", "reason", "too_large", NULL,
		profiles_too_large, "profiles", NULL),
	COUNTER("kiln_profiles_capped_total", NULL, profiles_capped, "profiles",
		"profiles for the server whose lightest stacks were folded into [other] to fit its limits"),
	COUNTER("kiln_samples_folded_total", NULL, samples_folded, "samples",
		"samples folded into [other] stacks"),
	GAUGE("kiln_queue_bytes", NULL, send.queue_bytes, "bytes", "bytes waiting to be sent"),
	GAUGE("kiln_queue_requests", NULL, send.queue_items, "requests",
	      "requests waiting to be sent"),
	GAUGE("kiln_queue_max_bytes", NULL, queue_max_bytes, "bytes", "--queue-max-bytes"),
	NANOS("kiln_last_push_timestamp_seconds", METRICS_GAUGE, NULL, send.last_success_unix_ns,
	      "unix time of the last accepted request (0: none yet)"),
	COUNTER("kiln_otlp_profiles_sent_total", NULL, otlp.profiles_sent, "profiles",
		"OTLP profiles the --otlp-endpoint accepted"),
	COUNTER("kiln_otlp_requests_total", NULL, otlp.requests_sent, "requests",
		"OTLP requests the --otlp-endpoint accepted (a partial success too)"),
	COUNTER("kiln_otlp_bytes_total", NULL, otlp.bytes_sent, "bytes",
		"OTLP request bytes the --otlp-endpoint accepted"),
	COUNTER("kiln_otlp_failures_total", NULL, otlp.attempts_failed, "attempts",
		"failed OTLP send attempts (retried or refused)"),
	COUNTER("kiln_otlp_retries_total", NULL, otlp.retries, "attempts",
		"OTLP send attempts that were retries"),
	GETTER("kiln_otlp_last_status", METRICS_GAUGE, otlp_last_status, "",
	       "HTTP status of the last OTLP send attempt (0: transport error or none yet)"),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "rejected", NULL,
		otlp.profiles_rejected, "profiles",
		"OTLP profiles that will never reach the --otlp-endpoint, by reason"),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "partial_success", NULL,
		otlp.profiles_partial, "profiles", NULL),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "queue_full", NULL,
		otlp.profiles_dropped_full, "profiles", NULL),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "shutdown", NULL,
		otlp.profiles_dropped_shutdown, "profiles", NULL),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "too_old", NULL,
		otlp.profiles_dropped_old, "profiles", NULL),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "encode_failed", NULL,
		otlp_encode_failures, "profiles", NULL),
	LABELED("kiln_otlp_profiles_dropped_total", "reason", "too_large", NULL,
		otlp_too_large, "profiles", NULL),
	COUNTER("kiln_otlp_profiles_capped_total", NULL, otlp_capped, "profiles",
		"OTLP profiles whose lightest stacks were folded into [other] to fit --otlp-max-stacks/--otlp-max-bytes"),
	COUNTER("kiln_otlp_samples_folded_total", NULL, otlp_samples_folded, "samples",
		"samples folded into [other] stacks of OTLP profiles"),
	GAUGE("kiln_otlp_queue_bytes", NULL, otlp.queue_bytes, "bytes",
	      "OTLP bytes waiting to be sent"),
	GAUGE("kiln_otlp_queue_requests", NULL, otlp.queue_items, "requests",
	      "OTLP requests waiting to be sent"),
	NANOS("kiln_otlp_last_export_timestamp_seconds", METRICS_GAUGE, NULL,
	      otlp.last_success_unix_ns, "unix time of the last accepted OTLP request (0: none yet)"),
	COUNTER("kiln_files_written_total", NULL, files.written, "files",
		"files written to --output-dir"),
	COUNTER("kiln_files_written_bytes_total", NULL, files.bytes_written, "bytes",
		"bytes written to --output-dir"),
	COUNTER("kiln_files_removed_total", NULL, files.removed, "files",
		"files removed by --output-max-bytes"),
	COUNTER("kiln_files_errors_total", NULL, files.errors, "errors",
		"file write or remove errors"),
	GAUGE("kiln_output_bytes", NULL, files.bytes_held, "bytes", "bytes held in --output-dir"),
	GAUGE("kiln_output_files", NULL, files.files_held, "files", "files held in --output-dir"),
	/* processes */
	GAUGE("kiln_processes_tracked", "processes_tracked", procs.live, "processes",
	      "process snapshots held"),
	GAUGE("kiln_binaries_tracked", "binaries_tracked", procs.binaries, "binaries",
	      "distinct executables and libraries the snapshots map"),
	COUNTER("kiln_process_snapshots_total", "processes", procs.snapshots, "snapshots",
		"process snapshots taken"),
	COUNTER("kiln_process_snapshot_failures_total", "snapshot_failures",
		procs.snapshot_failures, "snapshots",
		"processes whose /proc files could not be read (gone already)"),
	COUNTER("kiln_process_snapshot_refreshes_total", "snapshot_refreshes", procs.refreshes,
		"snapshots", "snapshots re-read (young processes, dlopen)"),
	COUNTER("kiln_processes_reaped_total", "processes_reaped", procs.reaped, "processes",
		"snapshots freed after their process exited and its samples were drained"),
	COUNTER("kiln_process_table_full_total", "process_table_full", procs.table_full,
		"processes", "processes not tracked: --max-processes reached"),
	COUNTER("kiln_process_snapshots_after_exec_total", "snapshots_after_exec",
		procs.read_after_exec, "snapshots",
		"snapshots read after the process exec'd, discarded (its samples keep the name BPF saw)"),
	LABELED("kiln_process_snapshots_forked_total", "source", "parent_snapshot",
		"snapshots_forked.parent_snapshot", procs.forked_copies, "snapshots",
		"snapshots of forked processes (no exec since) that took their parent's mappings, by where from",
		.summary = "forked processes given their parent's mappings"),
	LABELED("kiln_process_snapshots_forked_total", "source", "parent_proc",
		"snapshots_forked.parent_proc", procs.forked_reads, "snapshots", NULL,
		.summary = "forked processes read through their parent's /proc"),
	COUNTER("kiln_process_snapshots_from_sideband_total", "snapshots_from_sideband",
		procs.from_log, "snapshots",
		"snapshots of processes gone before their /proc files were read, from the side-band mappings"),
	COUNTER("kiln_process_snapshots_from_sideband_partial_total",
		"snapshots_from_sideband_partial", procs.from_log_partial, "snapshots",
		"of these, processes that exec'd before kiln started: their earlier mappings unknown"),
	COUNTER("kiln_process_snapshots_logged_total", "snapshots_logged", procs.logged_live,
		"snapshots",
		"snapshots of live processes whose mappings came from the side-band log, which held every one since their exec: /proc/PID/maps not read"),
	LABELED("kiln_process_snapshot_refreshes_logged_total", "mappings", "changed",
		"snapshot_refreshes_logged.changed", procs.logged_refreshes, "snapshots",
		"re-reads of such snapshots answered by the log: with mappings logged since, or none",
		.summary = "re-reads answered by the side-band log (mappings changed)"),
	LABELED("kiln_process_snapshot_refreshes_logged_total", "mappings", "unchanged",
		"snapshot_refreshes_logged.unchanged", procs.logged_unchanged, "snapshots", NULL,
		.summary = "re-reads answered by the side-band log (nothing new)"),
	COUNTER("kiln_process_mappings_replaced_total", "mappings_replaced",
		procs.mappings_replaced, "mappings",
		"executable mappings of known processes another file was mapped over (a library unloaded and another loaded in its range): the process read again once its samples so far were named"),
	COUNTER("kiln_process_mappings_replaced_not_queued_total", "mappings_replaced_not_queued",
		procs.replaced_not_queued, "mappings",
		"of these, those not queued for a re-read: 64 processes waiting already (a walk's miss still re-reads them)"),
	COUNTER("kiln_process_cgroup_texts_cached_total", "cgroup_texts.cached",
		procs.cgroup_texts_cached, "snapshots",
		"processes whose cgroup file was not read: a host of cgroup v2 alone, and their cgroup's read before"),
	LABELED("kiln_process_reads_inherited_total", "what", "root", "reads_inherited.root",
		procs.roots_inherited, "snapshots",
		"new processes' /proc reads not made: their root's identity and cgroup file were their parent's (the sampler's keys equal, no cgroup migration since), their executable's identity came from the side-band log",
		.summary = "roots taken from the parent's snapshot"),
	LABELED("kiln_process_reads_inherited_total", "what", "cgroup", "reads_inherited.cgroup",
		procs.cgroups_inherited, "snapshots", NULL,
		.summary = "cgroup texts taken from the parent's snapshot"),
	LABELED("kiln_process_reads_inherited_total", "what", "exe", "reads_inherited.exe",
		procs.exes_logged, "snapshots", NULL,
		.summary = "executables' identities taken from the side-band log"),
	COUNTER("kiln_process_cgroup_texts_evicted_total", "cgroup_texts.evicted",
		procs.cgroup_texts_evicted, "texts",
		"cgroup texts dropped from that cache to stay within its 1024"),
	COUNTER("kiln_sideband_records_total", "sideband.records", sideband.records, "records",
		"side-band perf records read (mappings, execs, exits)"),
	COUNTER("kiln_sideband_lost_total", "sideband.lost", sideband.lost, "records",
		"side-band records the kernel dropped: a CPU's ring was full"),
	COUNTER("kiln_sideband_malformed_total", "sideband.malformed", sideband.malformed,
		"records", "side-band records too short for their type, skipped"),
	COUNTER("kiln_sideband_unsorted_total", "sideband.unsorted", sideband.unsorted,
		"records", "side-band records handed on unsorted: a burst over one read's bound"),
	GAUGE("kiln_sideband_ring_bytes", "sideband.ring_bytes", sideband_bytes, "bytes",
	      "kernel memory of the side-band rings"),
	GAUGE("kiln_sideband_log_processes", "sideband.log_processes", procs.log.processes,
	      "processes", "processes with side-band mappings held"),
	GAUGE("kiln_sideband_log_mappings", "sideband.log_mappings", procs.log.mappings,
	      "mappings", "side-band mappings held (at most --max-mappings / 8)"),
	GAUGE("kiln_sideband_log_bytes", "sideband.log_bytes", procs.log.bytes, "bytes",
	      "memory of the side-band mappings held"),
	COUNTER("kiln_sideband_log_dropped_total", "sideband.log_dropped", procs.log.dropped,
		"mappings", "side-band mappings not held: over 512 in one process"),
	COUNTER("kiln_sideband_log_evicted_total", "sideband.log_evicted", procs.log.evicted,
		"processes", "processes' side-band mappings dropped to stay within the bound"),
	GAUGE("kiln_process_mappings", "process_mappings", procs.mappings, "mappings",
	      "executable mappings the snapshots hold (bounded by --max-mappings)"),
	LABELED("kiln_process_mappings_dropped_total", "reason", "process_cap",
		"mappings_dropped.process_cap", procs.maps_dropped_process, "mappings",
		"executable mappings not kept, by the cap that dropped them (per process, the whole table)",
		.summary = "mappings dropped (per-process cap)"),
	LABELED("kiln_process_mappings_dropped_total", "reason", "table_cap",
		"mappings_dropped.table_cap", procs.maps_dropped_table, "mappings", NULL,
		.summary = "mappings dropped (--max-mappings)"),
	COUNTER("kiln_process_snapshot_refreshes_skipped_total", "snapshot_refreshes_skipped",
		procs.refreshes_skipped, "snapshots",
		"re-reads skipped for snapshots that hit a mapping cap"),
	/* symbols */
	GAUGE("kiln_symbol_cache_bytes", "symbol_cache_bytes", cache.bytes, "bytes",
	      "ELF symbol cache size"),
	GAUGE("kiln_symbol_cache_max_bytes", "symbol_cache_max_bytes", cache.max_bytes, "bytes",
	      "--symbol-cache"),
	GAUGE("kiln_symbol_cache_entries", "symbol_cache_entries", cache.entries, "tables",
	      "symbol tables in the cache"),
	COUNTER("kiln_symbol_cache_hits_total", "symbol_cache_hits", cache.hits, "lookups",
		"symbol cache lookups that found the table"),
	COUNTER("kiln_symbol_cache_misses_total", "symbol_cache_misses", cache.misses, "lookups",
		"symbol cache lookups that had to load the table"),
	COUNTER("kiln_symbol_cache_evictions_total", "symbol_cache_evictions", cache.evictions,
		"tables", "symbol tables evicted to stay within --symbol-cache"),
	COUNTER("kiln_symbol_cache_expired_total", "symbol_cache_expired", cache.expired,
		"tables", "symbol tables freed after --symbol-cache-ttl unused"),
	GETTER("kiln_symbol_cache_hit_ratio", METRICS_GAUGE, cache_hit_ratio, "",
	       "symbol cache hits / lookups since start"),
	COUNTER("kiln_symbol_tables_loaded_total", "symtab_loads", sym.symtab_loads, "tables",
		"ELF symbol tables read"),
	COUNTER("kiln_symbol_tables_from_disk_total", "symtab_disk_hits", sym.symtab_disk_hits,
		"tables", "ELF symbol tables read from the --unwind-cache directory (of those loaded)"),
	COUNTER("kiln_symbol_tables_written_total", "symtab_disk_writes", sym.symtab_disk_writes,
		"tables", "ELF symbol tables written to the --unwind-cache directory"),
	COUNTER("kiln_symbol_table_failures_total", "symtab_failures", sym.symtab_failures,
		"tables", "binaries whose symbols could not be read",
		.summary = "symbol tables unreadable"),
	/* debug files from debuginfod servers */
	COUNTER("kiln_debuginfod_lookups_total", "debuginfod.lookups", dbgi.lookups, "lookups",
		"debug files looked up on the servers of DEBUGINFOD_URLS"),
	DEBUGINFOD_RESULT(DEBUGINFOD_FOUND, "found", "debug files fetched (debuginfod)"),
	DEBUGINFOD_RESULT(DEBUGINFOD_NOT_FOUND, "not_found", "debuginfod misses"),
	DEBUGINFOD_RESULT(DEBUGINFOD_TIMEOUT, "timeout", "debuginfod timeouts"),
	DEBUGINFOD_RESULT(DEBUGINFOD_TOO_LARGE, "too_large", "debuginfod files too large"),
	DEBUGINFOD_RESULT(DEBUGINFOD_ERROR, "error", "debuginfod errors"),
	DEBUGINFOD_RESULT(DEBUGINFOD_CANCELLED, "cancelled", "debuginfod lookups given up"),
	GAUGE("kiln_debuginfod_pending", "debuginfod.pending", dbgi.pending, "lookups",
	      "debuginfod lookups queued or under way"),
	COUNTER("kiln_debuginfod_remembered_misses_total", "debuginfod.remembered", dbgi.remembered,
		"requests", "lookups not made: the build id missed less than --debuginfod-miss-ttl ago"),
	LABELED("kiln_debuginfod_refused_total", "reason", "queue_full", "debuginfod.refused_queue_full",
		dbgi.refused_queue, "requests", "lookups not made, by the bound reached",
		.summary = "debuginfod lookups refused (queue full)"),
	LABELED("kiln_debuginfod_refused_total", "reason", "table_full", "debuginfod.refused_table_full",
		dbgi.refused_table, "requests", NULL,
		.summary = "debuginfod lookups refused (table full)"),
	COUNTER("kiln_debuginfod_bytes_total", "debuginfod.bytes", dbgi.bytes, "bytes",
		"bytes of the debug files fetched"),
	COUNTER("kiln_debuginfod_tables_reloaded_total", "debuginfod.reloads",
		sym.debuginfod_reloads, "tables",
		"symbol tables loaded again because their debug file arrived"),
	COUNTER("kiln_debuginfod_files_unusable_total", "debuginfod.unusable",
		sym.debuginfod_unusable, "files",
		"debug files fetched but refused by the safe opener or the ELF checks",
		.summary = "debuginfod files refused"),
	ROW(NULL, METRICS_COUNTER, NULL, NULL, "debuginfod.samples_waited", t.waited, "samples",
	    "samples held until the debug files their frames waited for arrived or were given up",
	    .summary = "samples held for debuginfod lookups"),
	ROW(NULL, METRICS_COUNTER, NULL, NULL, "debuginfod.samples_not_waited", t.wait_full,
	    "samples", "samples named at once: 16 MiB of samples waited already",
	    .summary = "samples not held for debuginfod or a perf map (bound)"),
	ROW(NULL, METRICS_COUNTER, NULL, NULL, "jit.samples_waited", t.jit_waited, "samples",
	    "samples held until the process whose perf map their JIT frames waited for (written as it exits) ended",
	    .summary = "samples held for a perf map written at exit"),
	COUNTER("kiln_files_opened_total", "files_opened", opens.opened, "files",
		"files opened on behalf of a process (its binaries, debug files)"),
	FILE_REFUSED(SAFE_OPEN_NOT_REGULAR, "not_regular"),
	FILE_REFUSED(SAFE_OPEN_TOO_LARGE, "too_large"),
	FILE_REFUSED(SAFE_OPEN_LINK, "link"),
	FILE_REFUSED(SAFE_OPEN_BAD_PATH, "bad_path"),
	ELF_REFUSED(ELF_REFUSED_HEADERS, "headers"),
	ELF_REFUSED(ELF_REFUSED_NOTE, "note"),
	ELF_REFUSED(ELF_REFUSED_SECTION, "section"),
	ELF_REFUSED(ELF_REFUSED_SYMBOLS, "symbols"),
	ELF_REFUSED(ELF_REFUSED_NAMES, "names"),
	ELF_REFUSED(ELF_REFUSED_NAME_LONG, "name_too_long"),
	ELF_REFUSED(ELF_REFUSED_DEMANGLE, "demangle"),
	ELF_REFUSED(ELF_REFUSED_TABLE, "table_too_large"),
	ELF_REFUSED(ELF_REFUSED_GOPCLNTAB, "gopclntab"),
	LABELED("kiln_jit_files_read_total", "kind", "perf_map", "jit.reads.perf_map",
		jit.reads[JIT_PERF_MAP], "files", "JIT symbol files parsed (changed since the last read), by kind"),
	LABELED("kiln_jit_files_read_total", "kind", "jitdump", "jit.reads.jitdump",
		jit.reads[JIT_DUMP], "files", NULL),
	GAUGE("kiln_jit_symbols", "jit.symbols", jit.symbols, "symbols",
	      "JIT code ranges named by the perf maps and jitdump files held"),
	GAUGE("kiln_jit_bytes", "jit.bytes", jit.bytes, "bytes", "JIT symbol tables' size"),
	GAUGE("kiln_jit_max_bytes", "jit.max_bytes", jit.max_bytes, "bytes", "--jit-memory"),
	GAUGE("kiln_jit_processes", "jit.processes", jit.processes, "processes",
	      "processes with JIT code (anonymous or memfd executable mappings), tracked"),
	COUNTER("kiln_jit_evictions_total", "jit.evictions", jit.evictions, "tables",
		"JIT symbol tables evicted to stay within --jit-memory (LRU)"),
	JIT_REFUSED(JIT_REFUSED_OWNER, "owner"),
	JIT_REFUSED(JIT_REFUSED_BAD_LINE, "bad_line"),
	JIT_REFUSED(JIT_REFUSED_BAD_HEADER, "bad_header"),
	JIT_REFUSED(JIT_REFUSED_BAD_RECORD, "bad_record"),
	JIT_REFUSED(JIT_REFUSED_NAME_LONG, "name_too_long"),
	JIT_REFUSED(JIT_REFUSED_TABLE, "table_too_large"),
	COUNTER("kiln_unwind_tables_built_total", "unwind.built", unwind.built, "tables",
		"unwind tables built from ELF files' CFI"),
	COUNTER("kiln_unwind_rows_total", "unwind.rows", unwind.rows, "rows",
		"rows of the unwind tables built"),
	COUNTER("kiln_unwind_table_bytes_total", "unwind.bytes", unwind.bytes, "bytes",
		"bytes of the unwind tables built (rows and rules)"),
	NANOS("kiln_unwind_build_seconds_total", METRICS_COUNTER, "unwind.build_ns",
	      unwind.build_ns, "time spent building unwind tables"),
	/* the BPF walker */
	WALKER(KILN_UW_WALKS, "kiln_user_stacks_total", "walk", "tables", "walker.walks",
	       "stacks", "user stacks taken, by how they were walked"),
	WALKER(KILN_UW_NO_PROC, "kiln_user_stacks_total", "walk", "frame_pointers",
	       "walker.frame_pointer_stacks", "stacks", NULL),
	WALKER(KILN_UW_EARLY, "kiln_unwind_early_walks_total", NULL, NULL, "walker.early",
	       "stacks", "of the user stacks walked with tables, those of processes kiln had not "
	       "read yet, their mappings from the kernel's mmap calls (kprobe on uprobe_mmap)",
	       .summary = "walked before kiln read their process"),
	WALKER(KILN_UW_EARLY_NO_ROOM, "kiln_unwind_early_left_out_total", "reason", "processes_full",
	       "walker.early_left_out.processes_full", "mappings",
	       "executable mappings early walks left out, by reason: no room for their process "
	       "(a quarter of --unwind-processes) or 16 of its mappings kept already; their "
	       "frames before kiln reads the process are walked by frame pointers",
	       .summary = "mappings left out of early walks (no room for their process)"),
	WALKER(KILN_UW_EARLY_MAPS_LEFT, "kiln_unwind_early_left_out_total", "reason", "mappings_full",
	       "walker.early_left_out.mappings_full", "mappings", NULL,
	       .summary = "mappings left out of early walks (16 of their process kept)"),
	WALKER(KILN_UW_ROOT, "kiln_unwind_root_total", NULL, NULL, "walker.root", "stacks",
	       "user stacks walked with tables that reached the thread's root"),
	WALKER(KILN_UW_TRUNCATED, "kiln_unwind_truncated_total", NULL, NULL, "walker.truncated",
	       "stacks", "user stacks cut by the depth or walk budget (marked [truncated])",
	       .summary = "stacks truncated"),
	WALKER(KILN_UW_FRAMES_TABLE, "kiln_unwind_frames_total", "by", "table",
	       "walker.frames_table", "frames", "user frames unwound in BPF, by method"),
	WALKER(KILN_UW_FRAMES_FP, "kiln_unwind_frames_total", "by", "frame_pointer",
	       "walker.frames_frame_pointer", "frames", NULL),
	WALKER(KILN_UW_ROW_MEMO, "kiln_unwind_row_memo_hits_total", NULL, NULL,
	       "walker.row_memo_hits", "frames",
	       "frames whose unwind row (a rule, or a command such as the root's stop) the "
	       "walker remembered from an earlier sample on the same CPU (256 rows a CPU): "
	       "no table search"),
	WALKER(KILN_UW_MAP_MEMO, "kiln_unwind_map_memo_hits_total", NULL, NULL,
	       "walker.map_memo_hits", "frames",
	       "frames whose mapping (file, table, load address) the walker remembered from an "
	       "earlier sample on the same CPU (32 a CPU): no search of the process's mappings"),
	WALKER(KILN_UW_PROC_MEMO, "kiln_unwind_process_memo_hits_total", NULL, NULL,
	       "walker.process_memo_hits", "samples",
	       "samples whose process (its loaded mappings' instance) the walker remembered from "
	       "an earlier sample on the same CPU (8 a CPU): no lookup of its mappings before the walk"),
	WALK_ERROR(KILN_UW_ERR_NO_MAPPING, "no_mapping"),
	WALK_ERROR(KILN_UW_ERR_BAD_FP, "bad_frame_pointer"),
	WALK_ERROR(KILN_UW_ERR_READ, "unreadable"),
	WALK_ERROR(KILN_UW_ERR_BAD_CFA, "bad_cfa"),
	WALK_ERROR(KILN_UW_ERR_NO_ROW, "no_row"),
	WALK_ERROR(KILN_UW_ERR_LR, "link_register"),
	GAUGE("kiln_unwind_tables_loaded", "unwinder.tables_loaded", unwinder.tables_loaded,
	      "tables", "files whose unwind table the BPF walker holds now"),
	GAUGE("kiln_unwind_rows_used", "unwinder.rows_used", unwinder.rows_used, "rows",
	      "unwind rows in the BPF maps now (4 bytes each, page indexes included)"),
	GAUGE("kiln_unwind_rows_capacity", "unwinder.rows_capacity", unwinder.rows_cap, "rows",
	      "unwind rows the BPF maps hold (--unwind-memory / 4)"),
	GAUGE("kiln_unwind_rules", "unwinder.rules", unwinder.rules, "rules",
	      "distinct unwind rules, all files (at most 16384)"),
	GAUGE("kiln_unwind_processes", "unwinder.processes", unwinder.processes, "processes",
	      "processes whose stacks the BPF walker walks with tables now"),
	GAUGE("kiln_unwind_maps_bytes", "unwinder.maps_bytes", unwinder.maps_bytes, "bytes",
	      "kernel memory of the unwind row, rule and table maps"),
	COUNTER("kiln_unwind_table_loads_total", "unwinder.loads", unwinder.loads, "tables",
		"unwind tables loaded into the BPF maps"),
	COUNTER("kiln_unwind_table_evictions_total", "unwinder.evictions", unwinder.evictions,
		"tables", "unwind tables of exited processes' files evicted, for room (LRU) or expired"),
	COUNTER("kiln_unwind_tables_expired_total", "unwinder.expired", unwinder.expired, "tables",
		"unwind tables freed because no process mapped their file for --unwind-table-ttl"),
	COUNTER("kiln_unwind_row_chunks_freed_total", "unwinder.chunks_dropped",
		unwinder.chunks_dropped, "chunks",
		"1 MiB chunks of unwind rows given back to the kernel, emptied by expired tables"),
	COUNTER("kiln_unwind_processes_full_total", "unwinder.processes_full",
		unwinder.processes_full, "processes",
		"processes left to frame pointers because --unwind-processes were walked already",
		.summary = "processes beyond --unwind-processes"),
	COUNTER("kiln_unwind_queue_full_total", "unwinder.queue_full", unwinder.queue_full,
		"processes", "processes not queued for their unwind tables (65536 waiting): frame pointers",
		.summary = "processes not queued for unwind tables"),
	COUNTER("kiln_unwind_mapping_rereads_total", "unwinder.miss_refreshes",
		unwinder.miss_refreshes, "reads",
		"mappings re-read because the walker met a pc outside them"),
	FALLBACK(UNWINDER_FB_NO_FILE, "no_file"),
	FALLBACK(UNWINDER_FB_NO_TABLE, "no_table"),
	FALLBACK(UNWINDER_FB_NO_ROOM, "no_room"),
	FALLBACK(UNWINDER_FB_NO_SLOT, "no_slot"),
	FALLBACK(UNWINDER_FB_RULES_FULL, "rules_full"),
	FALLBACK(UNWINDER_FB_SEGMENT, "segment"),
	FALLBACK(UNWINDER_FB_TOO_MANY, "too_many_mappings"),
	COUNTER("kiln_unwind_cache_hits_total", "unwinder.cache.hits", unwinder.cache.hits,
		"tables", "unwind tables loaded from the disk cache (--unwind-cache) instead of built"),
	COUNTER("kiln_unwind_cache_misses_total", "unwinder.cache.misses", unwinder.cache.misses,
		"tables", "unwind tables looked for in the disk cache and built instead"),
	COUNTER("kiln_unwind_cache_writes_total", "unwinder.cache.writes", unwinder.cache.writes,
		"tables", "unwind tables written to the disk cache"),
	COUNTER("kiln_unwind_cache_written_bytes_total", "unwinder.cache.write_bytes",
		unwinder.cache.write_bytes, "bytes", "bytes of unwind tables written to the disk cache"),
	COUNTER("kiln_unwind_cache_evictions_total", "unwinder.cache.evictions",
		unwinder.cache.evictions, "files",
		"disk cache files deleted to keep --unwind-cache-size (least recently used)"),
	GAUGE("kiln_unwind_cache_bytes", "unwinder.cache.bytes", unwinder.cache.bytes, "bytes",
	      "bytes of the disk cache's files (counted at the agent's start, at record's first write, and after each eviction pass)"),
	NANOS("kiln_unwind_cache_load_seconds_total", METRICS_COUNTER, "unwinder.cache.load_ns",
	      unwinder.cache_ns, "time spent loading unwind tables from the disk cache"),
	CACHE_REFUSED(TABLE_CACHE_DIR, "dir"),
	CACHE_REFUSED(TABLE_CACHE_NOT_OURS, "not_ours"),
	CACHE_REFUSED(TABLE_CACHE_CORRUPT, "corrupt"),
	CACHE_REFUSED(TABLE_CACHE_VERSION, "version"),
	CACHE_REFUSED(TABLE_CACHE_STALE, "stale"),
	CACHE_REFUSED(TABLE_CACHE_DEBUG_FILE, "debug_file"),
	CACHE_REFUSED(TABLE_CACHE_TOO_LARGE, "too_large"),
	CACHE_REFUSED(TABLE_CACHE_WRITE, "write_error"),
	UNWIND_REFUSED(UNWIND_REFUSED_NOT_ELF, "not_elf"),
	UNWIND_REFUSED(UNWIND_REFUSED_ARCH, "arch"),
	UNWIND_REFUSED(UNWIND_REFUSED_NO_CFI, "no_cfi"),
	UNWIND_REFUSED(UNWIND_REFUSED_CFI_BYTES, "cfi_bytes"),
	UNWIND_REFUSED(UNWIND_REFUSED_FDES, "fdes"),
	UNWIND_REFUSED(UNWIND_REFUSED_ROWS, "rows"),
	UNWIND_REFUSED(UNWIND_REFUSED_RULES, "rules"),
	UNWIND_REFUSED(UNWIND_REFUSED_WORK, "work"),
	UNWIND_REFUSED(UNWIND_REFUSED_DEBUG_FILE, "debug_file"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_CFA_REG, "cfa_register"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_CFA_EXPR, "cfa_expression"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_CFA_RANGE, "offset_range"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_FP_RULE, "fp_rule"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_RA_RULE, "ra_rule"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_CFI_ERROR, "cfi_error"),
	UNWIND_UNSUPPORTED(UNWIND_UNSUP_RANGE, "fde_range"),
	/* Python frames (docs/python.md) */
	INTERP_COMMON(KILN_LANG_PY, "python", "Python"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_ERR_KEY, "thread_state_key"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_ERR_TSD, "thread_specific_data"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_NO_STATE, "no_thread_state"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_ERR_FRAME, "frame_unreadable"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_ERR_CODE, "not_code"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_TRUNCATED, "frame_cap"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_LOOP_CAP, "walk_budget"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_CHAIN_SHORT, "chain_short"),
	INTERP_WALK(KILN_LANG_PY, "python", "Python", KILN_INTERP_LEFTOVER, "leftover_at_root"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_VERSION, "version"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_SYMBOLS, "symbols"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_OFFSETS, "offsets"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_TSD, "thread_state_key"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_UNREADABLE, "unreadable"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_NOT_READY, "not_initialized"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_FULL, "full"),
	INTERP_REFUSED(KILN_LANG_PY, "python", "Python", PY_REFUSED_WALKER, "walker"),
	INTERP_NAMES(KILN_LANG_PY, "python", "Python"),
	/* Ruby frames (docs/ruby.md) */
	INTERP_COMMON(KILN_LANG_RB, "ruby", "Ruby"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_ERR_KEY, "tls"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_ERR_TSD, "thread_pointer"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_NO_STATE, "no_execution_context"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_NOT_HOLDER, "not_gvl_holder"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_ERR_FRAME, "frame_unreadable"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_ERR_CODE, "not_iseq"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_TRUNCATED, "frame_cap"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_LOOP_CAP, "walk_budget"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_CHAIN_SHORT, "chain_short"),
	INTERP_WALK(KILN_LANG_RB, "ruby", "Ruby", KILN_INTERP_LEFTOVER, "leftover_at_root"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_VERSION, "version"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_SYMBOLS, "symbols"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_OFFSETS, "offsets"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_THREAD, "thread"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_UNREADABLE, "unreadable"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_NOT_READY, "not_initialized"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_FULL, "full"),
	INTERP_REFUSED(KILN_LANG_RB, "ruby", "Ruby", RB_REFUSED_WALKER, "walker"),
	INTERP_NAMES(KILN_LANG_RB, "ruby", "Ruby"),
	OUTPUT_REFUSED(FILE_REFUSED_DIR_OWNER, "dir_owner"),
	OUTPUT_REFUSED(FILE_REFUSED_DIR_MODE, "dir_mode"),
	OUTPUT_REFUSED(FILE_REFUSED_LINK, "link"),
	OUTPUT_REFUSED(FILE_REFUSED_NOT_REGULAR, "not_regular"),
	LABELED("kiln_frames_total", "kind", "kernel", "kernel_frames", sym.kernel_frames,
		"frames", "frames symbolized, by kind"),
	LABELED("kiln_frames_total", "kind", "user", "user_frames", sym.user_frames, "frames",
		NULL),
	LABELED("kiln_frames_resolved_total", "kind", "kernel", "kernel_resolved",
		sym.kernel_resolved, "frames", "frames given a name, by kind"),
	LABELED("kiln_frames_resolved_total", "kind", "user", "user_resolved", sym.user_resolved,
		"frames", NULL),
	COUNTER("kiln_jit_frames_total", "jit.frames", sym.jit_frames, "frames",
		"user frames in JIT code (anonymous or memfd executable mappings)"),
	COUNTER("kiln_jit_frames_named_total", "jit.frames_named", sym.jit_resolved, "frames",
		"user frames in JIT code named from a perf map or jitdump"),
	COUNTER("kiln_source_frames_total", "source_frames", sym.source_frames, "frames",
		"user frames given a source file and line (Go's function table)"),
	LABELED("kiln_inlined_frames_total", "outcome", "shown", "inlined_frames",
		sym.inlined_frames, "frames",
		"calls inlined into user frames: shown as frames, or left out past the per-stack bound"),
	LABELED("kiln_inlined_frames_total", "outcome", "dropped", "inlined_dropped",
		sym.inlined_dropped, "frames", NULL),
	LABELED("kiln_kernel_symbols_loads_total", "source", "cache", "kernel_symbols.cached",
		sym.kallsyms_cached, "loads",
		"kernel symbol tables loaded: from the cache directory, read from /proc/kallsyms, or the BPF programs' names listed through bpf() for what a cached table lacks"),
	LABELED("kiln_kernel_symbols_loads_total", "source", "kallsyms", "kernel_symbols.read",
		sym.kallsyms_read, "loads", NULL),
	LABELED("kiln_kernel_symbols_loads_total", "source", "bpf_programs",
		"kernel_symbols.bpf_programs", sym.kallsyms_bpf, "loads", NULL),
	COUNTER("kiln_bpf_programs_unnamed_total", "kernel_symbols.bpf_programs_skipped",
		sym.bpf_programs_skipped, "programs",
		"BPF programs left out of a listing of their names (over 4096): their frames are named from /proc/kallsyms"),
	COUNTER("kiln_kernel_symbols_cache_refused_total", "kernel_symbols.cache_refused",
		sym.kallsyms_cache_refused, "files",
		"cached kernel symbol tables refused (not kiln's own, corrupt) and rewritten"),
	LABELED("kiln_frame_memo_total", "outcome", "hit", "frame_memo.hits", sym.frame_memo_hits,
		"frames",
		"user frames looked up in the drain's memo of the frames it named: found, named then, or named without it as it was full"),
	LABELED("kiln_frame_memo_total", "outcome", "miss", "frame_memo.misses",
		sym.frame_memo_misses, "frames", NULL),
	LABELED("kiln_frame_memo_total", "outcome", "full", "frame_memo.full", sym.frame_memo_full,
		"frames", NULL),
	LABELED("kiln_user_stacks_incomplete_total", "reason", "unwind_left_mappings",
		"user_stacks_cut", sym.user_stacks_cut, "samples",
		"samples whose user stack is not whole, by reason"),
	LABELED("kiln_user_stacks_incomplete_total", "reason", "inside_execve",
		"exec_user_skipped", events[KILN_EV_EXEC_USER_SKIPPED], "samples", NULL),
	/* labels and metadata */
	GAUGE("kiln_cgroups_cached", "cgroups_cached", md.cgroups, "cgroups",
	      "cgroups in the metadata cache"),
	COUNTER("kiln_cgroup_cache_hits_total", "cgroup_hits", md.cgroup_hits, "lookups",
		"cgroup label cache lookups that found the entry"),
	COUNTER("kiln_cgroup_cache_misses_total", "cgroup_misses", md.cgroup_misses, "lookups",
		"cgroup label cache lookups that read the cgroup"),
	COUNTER("kiln_cgroup_cache_evictions_total", "cgroup_evictions", md.cgroup_evictions,
		"cgroups", "cgroups evicted to stay within --max-cgroups"),
	COUNTER("kiln_cgroups_unparsed_total", "cgroup_unparsed", md.cgroup_unparsed, "cgroups",
		"cgroup texts without one valid line", .summary = "cgroups unparsed"),
	LABELED("kiln_cgroup_ids_total", "result", "resolved", "cgroup_ids_resolved",
		md.cgroup_ids_resolved, "cgroups",
		"cgroups known only by id (no cgroup text), by whether the id gave a path"),
	LABELED("kiln_cgroup_ids_total", "result", "unresolved", "cgroup_ids_unresolved",
		md.cgroup_ids_unresolved, "cgroups", NULL),
	COUNTER("kiln_label_values_truncated_total", "label_values_truncated",
		md.label_values_truncated, "values",
		"label values cut to 2048 bytes or with invalid UTF-8 replaced",
		.summary = "label values truncated"),
	COUNTER("kiln_labels_dropped_total", "labels_dropped", md.labels_dropped, "labels",
		"labels beyond Pyroscope's 30 per series, dropped", .summary = "labels dropped"),
	COUNTER("kiln_pod_lookups_total", "pod_lookups", md.pod_lookups, "lookups",
		"pod index lookups"),
	GAUGE("kiln_kube_enabled", "kube_enabled", md.kube_enabled, "",
	      "1 when the pod watcher runs"),
	GAUGE("kiln_kube_pods", "kube_pods", md.pods, "pods", "pods known on this node"),
	GAUGE("kiln_kube_synced", "kube_synced", md.kube_synced, "",
	      "1 when the pod list has been read"),
	COUNTER("kiln_kube_lists_total", "kube_lists", md.kube_lists, "requests",
		"pod lists read from the Kubernetes API"),
	COUNTER("kiln_kube_watches_total", "kube_watches", md.kube_watches, "requests",
		"pod watches started"),
	COUNTER("kiln_kube_events_total", "kube_events", md.kube_events, "events",
		"pod watch events applied"),
	COUNTER("kiln_kube_errors_total", "kube_errors", md.kube_errors, "errors",
		"Kubernetes API errors"),
	COUNTER("kiln_kube_relists_total", "kube_relists", md.kube_relists, "requests",
		"pod relists (410 Gone)"),
	COUNTER("kiln_kube_list_pages_total", "kube_list_pages", md.kube_list_pages, "pages",
		"pod list pages read (limit/continue)"),
	COUNTER("kiln_kube_list_restarts_total", "kube_list_restarts", md.kube_list_restarts,
		"requests", "pod lists started over (continue token expired)"),
	COUNTER("kiln_kube_unknown_containers_total", "kube_unknown_containers",
		md.kube_unknown_containers, "containers",
		"container ids no pod status names"),
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "label_sets", label_sets, "label sets",
	    "distinct label sets seen"),
	/* the sampling programs, as they clock themselves */
	NANOS("kiln_bpf_run_seconds_total", METRICS_COUNTER, "bpf_run_ns", bpf_run_ns,
	      "time the sampling BPF programs ran, tail calls included (clocked by the programs)"),
	COUNTER("kiln_bpf_runs_total", "bpf_run_cnt", bpf_run_cnt, "runs",
		"sampling BPF program invocations (one a sample)"),
	ROW(NULL, METRICS_COUNTER, NULL, NULL, "bpf_kernel_run_ns", bpf_kernel_run_ns, "ns",
	    "the same programs' time by the kernel's run-time statistics, while someone keeps kernel.bpf_stats_enabled on (else 0)"),
	GAUGE("kiln_bpf_maps_bytes", "bpf_maps_bytes", bpf_maps_bytes, "bytes",
	      "kernel memory of the BPF maps (their fdinfo memlock; the side-band rings apart)"),
	LABELED("kiln_kernel_types_loads_total", "source", "cache", "kernel_types.cached",
		btf.hits, "loads",
		"loads of the BPF programs by where their CO-RE relocations read the kernel's types: the cut kept in the unwind cache directory, a cut made at this start, or all of /sys/kernel/btf/vmlinux"),
	LABELED("kiln_kernel_types_loads_total", "source", "cut", "kernel_types.cut", btf.built,
		"loads", NULL),
	LABELED("kiln_kernel_types_loads_total", "source", "kernel", "kernel_types.whole",
		btf.whole, "loads", NULL),
	COUNTER("kiln_kernel_types_refused_total", "kernel_types.refused", btf.refused, "files",
		"kept cuts of the kernel's types refused (not kiln's own, corrupt) and cut again"),
	COUNTER("kiln_kernel_types_fallbacks_total", "kernel_types.fallbacks", btf.fallbacks,
		"loads", "loads that failed with the cut of the kernel's types and were done with all of the kernel's BTF"),
	GAUGE("kiln_kernel_types", "kernel_types.types", btf.types, "types",
	      "kernel types in the cut the BPF programs were relocated against (0: none)"),
	/* record's own cost (JSON only) */
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "max_rss_kb", max_rss_kb, "KiB", "peak RSS"),
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "cpu_user_ms", cpu_user_ms, "ms", "user CPU time"),
	ROW(NULL, METRICS_GAUGE, NULL, NULL, "cpu_sys_ms", cpu_sys_ms, "ms", "system CPU time"),
};
#undef T

#define NROWS (sizeof(stats_rows) / sizeof(stats_rows[0]))

void stats__collect(struct kiln_stats *s, struct pipeline *p)
{
	struct sampler *smp = pipeline__sampler(p);
	struct kiln_counters c;

	s->t = *pipeline__totals(p);
	metadata__stats(pipeline__metadata(p), &s->md);
	proc_table__stats(pipeline__procs(p), &s->procs);
	symbolizer__stats(pipeline__symbolizer(p), &s->sym);
	symbolizer__cache_stats(pipeline__symbolizer(p), &s->cache);
	symbolizer__debuginfod_stats(pipeline__symbolizer(p), &s->dbgi);
	symbolizer__jit_stats(pipeline__symbolizer(p), &s->jit);
	sampler__counters(smp, &c);
	memcpy(s->events, c.events, sizeof(s->events));
	s->bpf_run_ns = c.run_ns;
	s->bpf_run_cnt = c.runs;
	s->bpf_kernel_run_ns = sampler__kernel_run_ns(smp);
	sampler__sideband_stats(smp, &s->sideband, &s->sideband_bytes);
	s->bpf_maps_bytes = sampler__maps_bytes(smp);
	sampler__btf_stats(smp, &s->btf);
	safe_open__stats(&s->opens);
	elf__refusal_stats(s->elf_refused);
	unwind_table__stats(&s->unwind);
	memcpy(s->walker, c.unwind, sizeof(s->walker));
	if (pipeline__unwinder(p))
		unwinder__stats(pipeline__unwinder(p), &s->unwinder);
	for (int i = 0; i < KILN_LANG_COUNT; i++) {
		memcpy(s->interp_walker[i], c.interp[i], sizeof(s->interp_walker[i]));
		interp_procs__stats(unwinder__interp(pipeline__unwinder(p), i), &s->interp[i]);
		symbolizer__interp_stats(pipeline__symbolizer(p), i, &s->names[i]);
	}
	file__refusal_stats(s->output_refused);
}

int stats__write_metrics(const struct kiln_stats *s, struct metrics_buf *b)
{
	return counters__write_metrics(stats_rows, NROWS, s, b);
}

int stats__write_json(const struct kiln_stats *s, const char *path)
{
	json_t *obj = json_object();
	int err = obj ? counters__add_json(stats_rows, NROWS, s, obj) : -ENOMEM;

	if (!err && json_dump_file(obj, path, JSON_INDENT(1) | JSON_REAL_PRECISION(10)))
		err = errno ? -errno : -EIO;
	json_decref(obj);
	return err;
}

void stats__summary(const struct kiln_stats *s, FILE *f)
{
	counters__summary(stats_rows, NROWS, s, "kiln: also", f);
}
