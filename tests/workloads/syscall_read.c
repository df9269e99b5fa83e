// SPDX-License-Identifier: BSD-2-Clause
/* Spends its time in the kernel: read(2) of /dev/zero in 1 MiB blocks from
 * read_zeros(), for argv[1] seconds (default 5) of its own CPU time (user
 * and system), however loaded the host. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void read_zeros(int fd)
{
	for (int i = 0; i < 64; i++)
		if (read(fd, buf, sizeof(buf)) < 0)
			exit(1);
}

int main(int argc, char **argv)
{
	double end = argc > 1 ? atof(argv[1]) : 5.0;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	while (cpu_now() < end)
		read_zeros(fd);
	return 0;
}
