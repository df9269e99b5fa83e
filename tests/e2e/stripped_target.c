// SPDX-License-Identifier: BSD-2-Clause
/* The program tests/e2e/symbols.sh strips: built there with -g, its debug
 * file split off into a folder that only a local debuginfod server
 * serves, then stripped of every symbol and of its debuglink. Burns the
 * CPU seconds given (default 3; its own CPU time, so a loaded host still
 * gets as many samples) in two functions of known names: stripped_outer
 * calls stripped_spin. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t stripped_spin(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + (i | 1);
	return x;
}

__attribute__((noinline)) static void stripped_outer(void)
{
	sink = stripped_spin(1000000);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	struct timespec start, now;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
	do {
		stripped_outer();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
		 seconds);
	return 0;
}
