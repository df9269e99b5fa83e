/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's CPU metrics from profiles (agent_cpu.c): seconds per series,
 * the top functions of each service per interval, the remainder, and the
 * bounds, read back through the exposition. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "agent_cpu.h"

#define PERIOD_NS 10000000ull   /* 100 Hz: a sample is 0.01 s */

static void add(struct cpu_metrics *m, const char *svc, const char *pod, const char *leaf,
		uint64_t count)
{
	const char *names[] = { "service_name", "namespace", "pod", "node" };
	const char *values[] = { svc, "shop", pod, "n1" };
	struct frame f[2] = { { .kind = FRAME_ROOT, .name = "app" },
			      { .kind = FRAME_USER, .name = leaf } };
	struct labels l = { 0 };

	cr_assert_eq(labels__set_pairs(&l, names, values, svc ? 4 : 0), 0);
	cpu_metrics__add(m, &l, f, 2, count);
	labels__release(&l);
}

/* The exposition's value of the line starting with prefix, or -1. */
static double value(struct cpu_metrics *m, const char *prefix)
{
	struct metrics_buf *b = metrics_buf__new(0);
	const char *text, *line;
	double v = -1;

	cr_assert_eq(cpu_metrics__write(m, b), 0);
	text = metrics_buf__data(b, NULL);
	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, prefix, strlen(prefix))) {
			v = strtod(line + strlen(prefix), NULL);
			break;
		}
	metrics_buf__free(b);
	return v;
}

static size_t lines(struct cpu_metrics *m, const char *prefix)
{
	struct metrics_buf *b = metrics_buf__new(0);
	const char *line;
	size_t n = 0;

	cr_assert_eq(cpu_metrics__write(m, b), 0);
	for (line = metrics_buf__data(b, NULL); line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		n += !strncmp(line, prefix, strlen(prefix));
	metrics_buf__free(b);
	return n;
}

Test(agent_cpu, seconds_by_the_pushed_labels)
{
	struct cpu_metrics *m = cpu_metrics__new(16, 0, PERIOD_NS);

	cr_assert_not_null(m);
	add(m, "web", "web-a", "f", 150);
	add(m, "web", "web-a", "g", 50);
	add(m, "web", "web-b", "f", 7);
	add(m, NULL, NULL, "f", 3);     /* no labels: pushed as unknown_service */
	cr_assert_float_eq(value(m, "kiln_cpu_seconds_total{service_name=\"web\",namespace=\"shop\",pod=\"web-a\",container=\"\"} "),
			   2.0, 1e-9);
	cr_assert_float_eq(value(m, "kiln_cpu_seconds_total{service_name=\"web\",namespace=\"shop\",pod=\"web-b\",container=\"\"} "),
			   0.07, 1e-9);
	cr_assert_float_eq(value(m, "kiln_cpu_seconds_total{service_name=\"unknown_service\",namespace=\"\",pod=\"\",container=\"\"} "),
			   0.03, 1e-9);
	/* functions off: no function families */
	cr_assert_eq(lines(m, "kiln_cpu_function"), 0);
	cpu_metrics__free(m);
}

Test(agent_cpu, series_bound_evicts_the_least_recently_sampled)
{
	struct cpu_metrics *m = cpu_metrics__new(2, 0, PERIOD_NS);
	char pod[16];

	add(m, "web", "keep", "f", 1);
	for (int i = 0; i < 5; i++) {
		snprintf(pod, sizeof(pod), "p%d", i);
		add(m, "web", pod, "f", 1);
		add(m, "web", "keep", "f", 1);  /* sampled again: stays */
	}
	cr_assert_eq(lines(m, "kiln_cpu_seconds_total{"), 2);
	cr_assert_float_eq(value(m, "kiln_cpu_seconds_total{service_name=\"web\",namespace=\"shop\",pod=\"keep\",container=\"\"} "),
			   0.06, 1e-9);
	cr_assert_eq(value(m, "kiln_cpu_series_evicted_total{kind=\"series\"} "), 4);
	cpu_metrics__free(m);
}

Test(agent_cpu, top_functions_per_interval_and_the_remainder)
{
	struct cpu_metrics *m = cpu_metrics__new(16, 2, PERIOD_NS);

	add(m, "web", "a", "hot", 60);
	add(m, "web", "b", "warm", 30);
	add(m, "web", "a", "cold", 10);
	add(m, "db", "d", "scan", 5);
	/* nothing is credited before the interval ends */
	cr_assert_eq(lines(m, "kiln_cpu_function_seconds_total{"), 0);
	cpu_metrics__interval(m);
	cr_assert_float_eq(value(m, "kiln_cpu_function_seconds_total{service_name=\"web\",function=\"hot\"} "), 0.6, 1e-9);
	cr_assert_float_eq(value(m, "kiln_cpu_function_seconds_total{service_name=\"web\",function=\"warm\"} "), 0.3, 1e-9);
	cr_assert_float_eq(value(m, "kiln_cpu_function_other_seconds_total{service_name=\"web\"} "), 0.1, 1e-9);
	cr_assert_float_eq(value(m, "kiln_cpu_function_seconds_total{service_name=\"db\",function=\"scan\"} "), 0.05, 1e-9);
	/* next interval: cold leads; warm, not in the top, gives way */
	add(m, "web", "a", "cold", 80);
	add(m, "web", "a", "hot", 20);
	add(m, "web", "a", "warm", 1);
	cpu_metrics__interval(m);
	cr_assert_float_eq(value(m, "kiln_cpu_function_seconds_total{service_name=\"web\",function=\"hot\"} "), 0.8, 1e-9);
	cr_assert_float_eq(value(m, "kiln_cpu_function_seconds_total{service_name=\"web\",function=\"cold\"} "), 0.8, 1e-9);
	cr_assert_eq(value(m, "kiln_cpu_function_seconds_total{service_name=\"web\",function=\"warm\"} "), -1);
	cr_assert_float_eq(value(m, "kiln_cpu_function_other_seconds_total{service_name=\"web\"} "), 0.11, 1e-9);
	cr_assert_eq(value(m, "kiln_cpu_series_evicted_total{kind=\"function\"} "), 1);
	cr_assert_eq(lines(m, "kiln_cpu_function_seconds_total{service_name=\"web\""), 2);
	/* the CPU seconds are whole, whatever the top */
	cr_assert_float_eq(value(m, "kiln_cpu_seconds_total{service_name=\"web\",namespace=\"shop\",pod=\"a\",container=\"\"} "),
			   1.71, 1e-9);
	cpu_metrics__free(m);
}

Test(agent_cpu, names_not_utf8_are_shown_valid)
{
	struct cpu_metrics *m = cpu_metrics__new(4, 1, PERIOD_NS);

	add(m, "w\xffx", "p", "f\xfe", 1);
	cpu_metrics__interval(m);
	cr_assert_eq(lines(m, "kiln_cpu_seconds_total{service_name=\"w?x\""), 1);
	cr_assert_eq(lines(m, "kiln_cpu_function_seconds_total{service_name=\"w?x\",function=\"f?\"}"), 1);
	cpu_metrics__free(m);
}
