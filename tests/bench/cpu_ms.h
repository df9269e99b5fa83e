/* SPDX-License-Identifier: BSD-2-Clause */
/* What the in-process benchmarks (export_cost, drain_cost) time with: the
 * process's CPU time in ms, and an order for qsort to take medians. */
#ifndef KILN_BENCH_CPU_MS_H
#define KILN_BENCH_CPU_MS_H

#include <time.h>

static inline double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
