// SPDX-License-Identifier: BSD-2-Clause
/* Built as distributions build their packages (gcc -O2, no frame
 * pointers): a fixed chain main -> level_one -> level_two -> level_three
 * -> spin_nofp, each level with a stack frame of its own, so only an
 * unwinder that reads the CFI finds the callers. With a second argument
 * N, the chain first recurses N times through recurse(), for stacks deeper
 * than the walk's budget. Runs argv[1] seconds (default 3) of its own CPU
 * time from main on (its exec and dynamic loading come on top: 75-250 ms
 * under an emulated CPU), however loaded the host. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static double end_time;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Each level keeps a buffer live across its call, so it has a frame (its
 * CFA moves) and the call is not a tail call. */
#define LEVEL(NAME, NEXT)                                               \
	__attribute__((noinline)) void NAME(unsigned long n)           \
	{                                                               \
		volatile char buf[64];                                  \
		memset((char *)buf, (int)n, sizeof(buf));              \
		NEXT(n + buf[3]);                                       \
		sink += buf[5];                                         \
	}

__attribute__((noinline)) void spin_nofp(unsigned long n)
{
	for (unsigned long i = 0; i < 100000 + (n & 1); i++)
		sink += i;
}

LEVEL(level_three, spin_nofp)
LEVEL(level_two, level_three)
LEVEL(level_one, level_two)

__attribute__((noinline)) void recurse(int depth)
{
	volatile char buf[32];

	memset((char *)buf, depth, sizeof(buf));
	if (depth > 0)
		recurse(depth - 1);
	else
		level_one(buf[1]);
	sink += buf[2];
}

int main(int argc, char **argv)
{
	int depth = argc > 2 ? atoi(argv[2]) : 0;

	end_time = now() + (argc > 1 ? atof(argv[1]) : 3);
	/* the CPU clock is a system call: read it every 64 chains, so that
	 * nearly every sample is in spin_nofp */
	while (now() < end_time) {
		for (int i = 0; i < 64; i++) {
			if (depth)
				recurse(depth);
			else
				level_one(1);
		}
	}
	return 0;
}
