// SPDX-License-Identifier: BSD-2-Clause
/* vm_exit: prints the mean cost, in microseconds, of one CPUID instruction,
 * which a hypervisor always intercepts: what one exit to the hypervisor
 * costs on this host (about 0.1 us on bare metal, 1-2 us in a VM, 10 us
 * nested). Every wakeup, timer re-arm and self-IPI of a profiler costs
 * one or more such exits, so the benchmark's figures are read against it.
 * x86-64 only: elsewhere prints nothing. */
#include <stdio.h>
#include <time.h>

int main(void)
{
#if defined(__x86_64__)
	enum { N = 20000 };
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N; i++) {
		unsigned a = 0, b, c = 0, d;

		/* volatile: run every time, not hoisted as loop-invariant */
		__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.2f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / N / 1e3);
#endif
	return 0;
}
