// SPDX-License-Identifier: BSD-2-Clause
/* One short-lived process of the benchmark's churn (see churn.c): burns
 * argv[1] milliseconds (default 20) of its own CPU time in
 * short_lived_work(), then exits. CPU time, not wall time, so every process
 * gives the profilers the same number of samples however busy the host is.
 * With a second argument, appends to that file the CPU time the process took
 * in all (exec, the loader's start-up and the work), in microseconds: what
 * the kernel matrix judges a slow guest's samples against. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void short_lived_work(double seconds)
{
	double end = cpu_now() + seconds;

	while (cpu_now() < end)
		for (unsigned long i = 0; i < 250000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	short_lived_work((argc > 1 ? atof(argv[1]) : 20.0) / 1000.0);
	if (argc > 2) {
		int fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

		if (fd < 0)
			return 1;
		/* one short write to an O_APPEND file: lines of concurrent
		 * processes do not mix */
		dprintf(fd, "%.0f\n", cpu_now() * 1e6);
		close(fd);
	}
	return 0;
}
