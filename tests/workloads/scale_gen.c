// SPDX-License-Identifier: BSD-2-Clause
/* The scale benchmark's load (tests/bench/scale.sh): N distinct call
 * chains spread over M processes, for SECONDS.
 *
 *   scale_gen N M SECONDS
 *
 * Chain c (0 <= c < N) is c's base-4 digits, most significant first, all
 * chains padded to one depth D (the digits of N - 1): chain() calls
 * d<digit 0>, which calls d<digit 1>, ... D levels deep, and the last calls
 * leaf(). Each d<k> calls the next level from one of four call sites, so
 * the return addresses, and the symbolized frames, spell the digits: N
 * chains are N distinct stacks, user and symbolized. Process p (of M,
 * forked from one parent, so all share one address layout) runs chains p,
 * p + M, p + 2M, ... round-robin, about 20 us each, so samples fall
 * evenly over the chains. The parent waits for its children. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 16                    /* 4^16 chains, far beyond N */
#define LEAF_SPIN 2000                  /* ~20 us of work at the leaf */

static volatile unsigned long sink;
static unsigned char digits[MAX_DEPTH];
static int depth;

__attribute__((noinline)) void leaf(void)
{
	for (unsigned long i = 0; i < LEAF_SPIN; i++)
		sink += i;
}

void d0(int level);
void d1(int level);
void d2(int level);
void d3(int level);

/* The call at level: one call site per digit. */
#define NEXT(level)                                \
	do {                                       \
		if ((level) == depth) {            \
			leaf();                    \
			break;                     \
		}                                  \
		switch (digits[level]) {           \
		case 0: d0((level) + 1); break;    \
		case 1: d1((level) + 1); break;    \
		case 2: d2((level) + 1); break;    \
		default: d3((level) + 1); break;   \
		}                                  \
	} while (0)

__attribute__((noinline)) void d0(int level) { NEXT(level); sink++; }
__attribute__((noinline)) void d1(int level) { NEXT(level); sink++; }
__attribute__((noinline)) void d2(int level) { NEXT(level); sink++; }
__attribute__((noinline)) void d3(int level) { NEXT(level); sink++; }

__attribute__((noinline)) void chain(unsigned long c)
{
	for (int i = depth - 1; i >= 0; i--, c /= 4)
		digits[i] = (unsigned char)(c % 4);
	NEXT(0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(unsigned long n, unsigned long m, unsigned long p, double end)
{
	while (now() < end)
		for (unsigned long c = p; c < n && now() < end; c += m)
			chain(c);
}

int main(int argc, char **argv)
{
	unsigned long n, m, forked = 0;
	double seconds, end;
	int status = 0, ws;

	if (argc != 4 || (n = strtoul(argv[1], NULL, 10)) == 0 ||
	    (m = strtoul(argv[2], NULL, 10)) == 0 || m > 100000 ||
	    (seconds = strtod(argv[3], NULL)) <= 0) {
		fprintf(stderr, "usage: scale_gen N M SECONDS (N chains over M processes)\n");
		return 2;
	}
	for (unsigned long v = n - 1; v; v /= 4)
		depth++;
	if (!depth)
		depth = 1;
	if (depth > MAX_DEPTH) {
		fprintf(stderr, "scale_gen: N too large (at most 4^%d)\n", MAX_DEPTH);
		return 2;
	}
	end = now() + seconds;
	for (unsigned long p = 0; p < m; p++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "scale_gen: fork %lu of %lu: %s\n", p + 1, m, strerror(errno));
			status = 1;
			break;
		}
		if (pid == 0) {
			run(n, m, p, end);
			_exit(0);
		}
		forked++;
	}
	for (; forked; forked--)
		if (wait(&ws) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws))
			status = 1;
	return status;
}
