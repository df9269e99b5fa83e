// SPDX-License-Identifier: BSD-2-Clause
/* Burns CPU in two functions, 3:1: each round calls hot_three() with
 * probability 3/4 (argv[2] percent, when given), else hot_one(), both
 * doing the same work. The choice is
 * random so the rounds cannot alias with the sampling period. One thread
 * per online CPU, so a profile of a few seconds has enough samples for a
 * tight share estimate, each burning argv[1] seconds (default 5) of its
 * own CPU time: on a loaded host it runs longer and still gets as many
 * samples. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* CPU seconds of the calling thread. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void hot_three(void)
{
	spin(200000);
}

__attribute__((noinline)) void hot_one(void)
{
	spin(200000);
}

static double seconds;
static unsigned percent_three = 75;

static void *burn(void *arg)
{
	uint64_t x = ((uint64_t)time(NULL) + (uintptr_t)arg) * 2654435761u | 1;

	while (cpu_now() < seconds) {
		for (int i = 0; i < 16; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (x % 100 < percent_three)
				hot_three();
			else
				hot_one();
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t[256];

	seconds = argc > 1 ? atof(argv[1]) : 5.0;
	if (argc > 2)
		percent_three = (unsigned)atoi(argv[2]);
	if (n < 1 || n > 256)
		n = n < 1 ? 1 : 256;
	for (long i = 1; i < n; i++)
		pthread_create(&t[i], NULL, burn, (void *)i);
	burn(NULL);
	for (long i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
