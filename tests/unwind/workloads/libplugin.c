// SPDX-License-Identifier: BSD-2-Clause
// libplugin_a.so and libplugin_b.so (tests/unwind, the swap check): one
// source built twice, the second with PLUGIN_B, so both libraries have
// the same segments and sizes and the dynamic loader maps the second over
// the range the first left when it was unloaded. Their code differs where
// a walk and a name depend on it: A's plugin_run reaches plugin_a_spin
// through one helper, and plugin_a_spin keeps a 256-byte frame; B's
// reaches plugin_b_spin through two helpers, and plugin_b_spin has no
// frame of its own. A profiler that still reads B's code with A's table or
// A's symbols gets B's callers and names wrong. gcc -O2
// -fomit-frame-pointer, as distributions build: no frame pointers.
#include <stdint.h>

#define HELPER __attribute__((noinline, noclone, visibility("hidden")))
/* A helper calling the next: the work after the call keeps it a call. */
#define CALLS(name, next, shift)                                               \
	HELPER uint64_t name(uint64_t x, long n)                               \
	{                                                                      \
		uint64_t r = next(x, n);                                       \
		return r ^ (r >> (shift));                                     \
	}

#ifndef PLUGIN_B
HELPER uint64_t plugin_a_spin(uint64_t x, long n)
{
	volatile uint64_t frame[32];

	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
	}
	frame[x & 31] = x;
	return x + frame[(x >> 5) & 31];
}

CALLS(plugin_a_outer, plugin_a_spin, 7)
#define OUTER plugin_a_outer
#else
HELPER uint64_t plugin_b_spin(uint64_t x, long n)
{
	for (long i = 0; i < n; i++) {
		x = x * 2862933555777941757ULL + 3037000493ULL;
		x ^= x >> 31;
	}
	return x;
}

CALLS(plugin_b_middle, plugin_b_spin, 9)
CALLS(plugin_b_outer, plugin_b_middle, 11)
#define OUTER plugin_b_outer
#endif

uint64_t plugin_run(uint64_t x, long n)
{
	return OUTER(x, n) + 1;
}
