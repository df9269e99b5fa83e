/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef KILN_CORE_CLOCK_H
#define KILN_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A time in nanoseconds of a clock (monotonic_ns' for a condition
 * variable set to CLOCK_MONOTONIC) as the timespec pthread_cond_timedwait
 * takes. */
static inline struct timespec timespec_at(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* CLOCK_REALTIME in nanoseconds since the epoch. */
static inline uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
