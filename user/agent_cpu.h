/* SPDX-License-Identifier: BSD-2-Clause */
/* CPU metrics from the profiles, for /metrics: the CPU seconds sampled per
 * service_name, namespace, pod and container (the label names and values
 * of the pushed profiles; service_name "unknown_service" where a set has
 * none, as pushed), and optionally per function: each interval, the
 * functions with the most self time (samples that end in them) of each
 * service get a series of their own, at most `functions` a service.
 *
 *   kiln_cpu_seconds_total{service_name,namespace,pod,container}
 *   kiln_cpu_function_seconds_total{service_name,function}
 *   kiln_cpu_function_other_seconds_total{service_name}
 *         self time of the functions outside a service's top, or past
 *         CPU_FUNCTION_SERIES_MAX series
 *   kiln_cpu_series_evicted_total{kind="series"|"function"}
 *
 * Bounds: at most max_series series of CPU seconds (and as many services
 * with function series); past it the least recently sampled one is
 * dropped, counted. At most CPU_FUNCTION_SERIES_MAX function series in
 * all and CPU_FUNCTION_WINDOW_MAX functions counted per interval; past
 * them a function's time goes to the remainder. A series dropped and seen
 * again starts from 0: Prometheus' rate() reads that as a counter reset.
 *
 * THREADING: cpu_metrics__add and cpu_metrics__interval on the loop
 * thread, cpu_metrics__write on the HTTP server's; one mutex. */
#ifndef KILN_AGENT_CPU_H
#define KILN_AGENT_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"
#include "core/labels.h"
#include "core/metrics.h"

#define CPU_FUNCTION_SERIES_MAX 8192
#define CPU_FUNCTION_WINDOW_MAX 65536

struct cpu_metrics;

/* max_series >= 1; functions per service (0: no function series);
 * period_ns: what a sample stands for. NULL + errno. */
struct cpu_metrics *cpu_metrics__new(size_t max_series, unsigned functions, uint64_t period_ns);
/* One sample as the pipeline's tap shows it. */
void cpu_metrics__add(struct cpu_metrics *m, const struct labels *labels,
		      const struct frame *frames, size_t n, uint64_t count);
/* At the end of an interval: credits each service's top functions of the
 * interval, the rest to its remainder. */
void cpu_metrics__interval(struct cpu_metrics *m);
/* The families above. 0 or metrics_buf's -errno. */
int cpu_metrics__write(struct cpu_metrics *m, struct metrics_buf *b);
void cpu_metrics__free(struct cpu_metrics *m);

#endif
