/* SPDX-License-Identifier: BSD-2-Clause */
/* The counter registry: every --stats key and /metrics family that tests,
 * benchmarks and users read is still there, with the value of its field. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/metrics.h"
#include "stats.h"

static struct kiln_stats sample_stats(void)
{
	struct kiln_stats s = { 0 };

	for (int i = 0; i < KILN_OUTCOME_COUNT; i++)
		s.t.outcomes[i] = 100 + i;
	s.t.drained = 7;
	s.t.profiled = 5;
	s.t.stacks_missing = 3;
	s.t.drain_ns_max = 2000000000ull;
	s.procs.snapshots = 11;
	s.sym.symtab_failures = 2;
	s.md.cgroup_unparsed = 4;
	s.md.kube_lists = 6;
	s.cache.bytes = 4096;
	s.seconds = 1.5;
	s.bpf_run_cnt = 9;
	return s;
}

Test(stats, json_keeps_every_key_and_adds_the_new_counters)
{
	static const char *const keys[] = {
		"seconds", "frequency", "cpus", "drains", "drained", "profiled", "filtered",
		"label_sets_full", "add_failures", "invariant_failures", "events_sent",
		"events_dropped", "processes", "snapshot_failures", "process_table_full",
		"snapshots_after_exec", "snapshot_refreshes", "kernel_frames", "kernel_resolved",
		"user_frames", "user_resolved", "user_stacks_cut", "exec_user_skipped",
		"symbol_cache_bytes", "drain_ns_max", "drain_ns_sum", "label_sets", "bpf_run_cnt",
		"bpf_run_ns", "bpf_kernel_run_ns", "max_rss_kb", "cpu_user_ms", "cpu_sys_ms",
		/* collected before, shown since the registry */
		"stacks_missing", "symtab_loads", "symtab_failures", "label_values_truncated",
		"labels_dropped", "cgroup_unparsed", "kube_lists", "kube_watches",
	};
	struct kiln_stats s = sample_stats();
	char path[] = "/tmp/kiln-stats-XXXXXX";
	json_t *root, *outcomes;
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(stats__write_json(&s, path), 0);
	root = json_load_file(path, 0, NULL);
	unlink(path);
	cr_assert_not_null(root);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_expect_not_null(json_object_get(root, keys[i]), "no key %s", keys[i]);
	outcomes = json_object_get(root, "outcomes");
	for (int i = 0; i < KILN_OUTCOME_COUNT; i++)
		cr_expect_eq(json_integer_value(json_object_get(outcomes, kiln_outcome_names[i])),
			     100 + i, "outcome %s", kiln_outcome_names[i]);
	cr_expect_eq(json_integer_value(json_object_get(root, "processes")), 11);
	cr_expect_eq(json_integer_value(json_object_get(root, "stacks_missing")), 3);
	cr_expect_eq(json_integer_value(json_object_get(root, "drain_ns_max")), 2000000000);
	cr_expect_eq(json_integer_value(json_object_get(root, "symbol_cache_bytes")), 4096);
	cr_expect_eq(json_real_value(json_object_get(root, "seconds")), 1.5);
	json_decref(root);
}

Test(stats, metrics_keep_every_family_and_label)
{
	static const char *const lines[] = {
		"kiln_samples_total 5\n",
		"kiln_samples_dropped_total{reason=\"stack_map_full\"} 104\n",
		"kiln_samples_dropped_total{reason=\"out_of_memory\"} 0\n",
		"kiln_samples_filtered_total{reason=\"idle\"} 101\n",
		"kiln_samples_filtered_total{reason=\"excluded_namespace\"} 0\n",
		"kiln_drain_duration_seconds_max 2\n",
		"kiln_process_snapshots_total 11\n",
		"kiln_symbol_cache_bytes 4096\n",
		"kiln_stacks_missing_total 3\n",
		"kiln_symbol_table_failures_total 2\n",
		"kiln_cgroups_unparsed_total 4\n",
		"kiln_kube_lists_total 6\n",
		"kiln_bpf_runs_total 9\n",
		"# TYPE kiln_symbol_cache_hit_ratio gauge\n",
		"# TYPE kiln_profiles_dropped_total counter\n",
		"kiln_profiles_dropped_total{reason=\"queue_full\"} 0\n",
		"kiln_last_push_timestamp_seconds 0\n",
		"kiln_user_stacks_incomplete_total{reason=\"inside_execve\"} 0\n",
	};
	struct kiln_stats s = sample_stats();
	struct metrics_buf *b = metrics_buf__new(0);
	const char *text;

	cr_assert_eq(stats__write_metrics(&s, b), 0);
	text = metrics_buf__data(b, NULL);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		cr_expect_not_null(strstr(text, lines[i]), "no line %s", lines[i]);
	/* JSON-only rows stay out of /metrics. */
	cr_expect_null(strstr(text, "seconds 1.5"));
	metrics_buf__free(b);
}
