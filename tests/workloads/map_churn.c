// SPDX-License-Identifier: BSD-2-Clause
/* Mapping churn for the kernel matrix's restarts check: for argv[1]
 * seconds, maps its own executable file with PROT_EXEC as a dynamic loader
 * maps a library's code, maps anonymous memory, changes both protections
 * (mprotect) and unmaps them, as fast as it can. Every call goes through
 * the kernel's mmap paths that kiln's early-walk probe hooks, so a probe
 * armed or disarmed while other CPUs run those paths is exercised many
 * times a second. On exit prints: rounds=N */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1, end = now() + seconds;
	long page = sysconf(_SC_PAGESIZE), rounds = 0;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror("map_churn: /proc/self/exe");
		return 1;
	}
	while (now() < end) {
		char *code = mmap(NULL, 2 * page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		char *anon = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (code == MAP_FAILED || anon == MAP_FAILED) {
			perror("map_churn: mmap");
			return 1;
		}
		/* each splits its mapping in two, as a loader's RELRO does */
		mprotect(code, page, PROT_READ);
		mprotect(anon, page, PROT_READ | PROT_WRITE);
		anon[0] = code[0];
		munmap(code, 2 * page);
		munmap(anon, 2 * page);
		rounds++;
	}
	printf("rounds=%ld\n", rounds);
	return 0;
}
