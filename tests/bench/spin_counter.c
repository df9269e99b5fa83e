// SPDX-License-Identifier: BSD-2-Clause
/* Throughput probe for the benchmark: argv[2] threads (default: one per
 * online CPU) spin for argv[1] seconds (default 10) and count loop
 * iterations. On exit prints one line:
 *   iterations=N cpu_s=X wall_s=Y
 * A profiler that steals CPU (or pollutes caches) lowers N for the same
 * wall time; cpu_s is this process's own user+sys time. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 16)	/* iterations between clock checks, ~30 us */
#define MAX_THREADS 256

static double end_time;
static uint64_t counts[MAX_THREADS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *count(void *arg)
{
	uint64_t n = 0, x = 0;

	while (now() < end_time) {
		for (uint32_t i = 0; i < CHUNK; i++) {
			x += i;
			__asm__ volatile("" : "+r"(x));	/* keep the loop */
		}
		n += CHUNK;
	}
	counts[(uintptr_t)arg] = n;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10.0, start = now();
	long n = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t[MAX_THREADS];
	struct rusage ru;
	uint64_t total = 0;

	if (n < 1)
		n = 1;
	if (n > MAX_THREADS)
		n = MAX_THREADS;
	end_time = start + secs;
	for (long i = 1; i < n; i++)
		pthread_create(&t[i], NULL, count, (void *)(uintptr_t)i);
	count((void *)0);
	for (long i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	for (long i = 0; i < n; i++)
		total += counts[i];
	getrusage(RUSAGE_SELF, &ru);
	printf("iterations=%llu cpu_s=%.3f wall_s=%.3f\n",
	       (unsigned long long)total,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	       now() - start);
	return 0;
}
