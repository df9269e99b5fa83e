// SPDX-License-Identifier: BSD-2-Clause
// libtruth.so: three exported functions whose cost is exactly proportional
// to their argument n (one dependent multiply-add-shift-xor chain per
// iteration, the same instructions in all three), each spinning in its own
// hidden helper (a leaf using the red zone), so a walk from the helper has
// to step through two frames of this library. Built with gcc -O2
// -fomit-frame-pointer (tests/unwind, make test-unwind): no frame pointers.
#include <stdint.h>

#define HELPER __attribute__((noinline, noclone, visibility("hidden")))

#define SPIN(name, mul, inc, shift)                                            \
	HELPER uint64_t name(uint64_t x, long n)                               \
	{                                                                      \
		volatile uint64_t frame[8];                                    \
		for (long i = 0; i < n; i++) {                                 \
			x = x * (mul) + (inc);                                 \
			x ^= x >> (shift);                                     \
		}                                                              \
		frame[x & 7] = x;                                              \
		return x + frame[(x >> 3) & 7];                                \
	}

SPIN(truth_alpha_spin, 6364136223846793005ULL, 1442695040888963407ULL, 29)
SPIN(truth_beta_spin, 2862933555777941757ULL, 3037000493ULL, 31)
SPIN(truth_gamma_spin, 3202034522624059733ULL, 7046029254386353131ULL, 27)

// Work after each call keeps the calls from becoming jumps (sibling calls),
// so every function keeps its own frame.
uint64_t truth_alpha(uint64_t seed, long n)
{
	uint64_t r = truth_alpha_spin(seed, n);
	return r ^ (r >> 7);
}

uint64_t truth_beta(uint64_t seed, long n)
{
	uint64_t r = truth_beta_spin(seed, n);
	return r ^ (r >> 9);
}

uint64_t truth_gamma(uint64_t seed, long n)
{
	uint64_t r = truth_gamma_spin(seed, n);
	return r ^ (r >> 11);
}
