// SPDX-License-Identifier: BSD-2-Clause
/* stamp_exec FILE COMMAND [ARGS...]: writes "PID MONOTONIC_NS" to FILE,
 * then execs COMMAND in this same process. The benchmark measures a
 * profiler's time to first sample from this stamp, and finds the
 * profiler's BPF programs under this pid; being a tiny C program, it adds
 * nothing measurable to the profiler's CPU figures. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: stamp_exec FILE COMMAND [ARGS...]\n");
		return 2;
	}
	f = fopen(argv[1], "w");
	if (!f) {
		fprintf(stderr, "stamp_exec: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(f, "%d %lld\n", (int)getpid(),
		(long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	if (fclose(f) != 0) {
		fprintf(stderr, "stamp_exec: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "stamp_exec: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
