// SPDX-License-Identifier: BSD-2-Clause
// truth_shares SECONDS: spends 60 %, 30 % and 10 % of its CPU time in
// libtruth.so's truth_alpha, truth_beta and truth_gamma, each reached by
// its own chain of callers, until the process has used SECONDS of CPU:
//
//   main > alpha_outer > alpha_inner > truth_alpha > truth_alpha_spin
//   main > beta_only > truth_beta > truth_beta_spin
//   main > gamma_outer > gamma_middle > gamma_inner > truth_gamma > truth_gamma_spin
//
// The shares are the iteration counts (6:3:1 of the same loop); the time
// outside the library (the loop below, one clock read per round of 0.5-1.5
// x 10^6 iterations) is far below 0.1 %. Each round's length is drawn at
// random (the three calls keep 6:3:1): rounds of one length, about 2 ms,
// beside a sampler of a fixed 1.001 ms period could see the same phases of
// the round over and over. Built, like the library, with gcc -O2
// -fomit-frame-pointer; the callers are global and never inlined or
// cloned, so both the names and the chain are what the source says.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t truth_alpha(uint64_t seed, long n);
uint64_t truth_beta(uint64_t seed, long n);
uint64_t truth_gamma(uint64_t seed, long n);

#define CALLER __attribute__((noinline, noclone))
#define UNIT 100000L

// Each caller does work after its call, so none becomes a sibling call.
CALLER uint64_t alpha_inner(uint64_t s, long u) { return truth_alpha(s, 6 * u) + 1; }
CALLER uint64_t alpha_outer(uint64_t s, long u) { return alpha_inner(s, u) * 3; }
CALLER uint64_t beta_only(uint64_t s, long u) { return truth_beta(s, 3 * u) + 5; }
CALLER uint64_t gamma_inner(uint64_t s, long u) { return truth_gamma(s, 1 * u) ^ 1; }
CALLER uint64_t gamma_middle(uint64_t s, long u) { return gamma_inner(s, u) + 7; }
CALLER uint64_t gamma_outer(uint64_t s, long u) { return gamma_middle(s, u) * 5; }

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 5, start = cpu_seconds();
	uint64_t s = 1;
	unsigned int seed = 1;

	while (cpu_seconds() - start < limit) {
		long u = UNIT / 2 + rand_r(&seed) % UNIT;

		s = alpha_outer(s, u);
		s = beta_only(s, u);
		s = gamma_outer(s, u);
	}
	printf("%llu\n", (unsigned long long)(s % 1000));
	return 0;
}
