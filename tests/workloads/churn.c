// SPDX-License-Identifier: BSD-2-Clause
/* Churn of short-lived processes for the benchmark: for argv[1] seconds,
 * argv[2] times a second, forks and execs the short_lived program next to
 * this binary, which burns argv[3] ms of CPU and exits. Each process is
 * reaped with wait4, and one line per process goes to the log file argv[4]:
 *   pid start_ns end_ns cpu_ns
 * (CLOCK_MONOTONIC at fork and at reaping; user+sys CPU from its rusage):
 * the ground truth a profiler's samples of those processes are held to.
 * On exit prints: spawned=N reaped=N failed=N skipped=N cpu_s=X self_cpu_s=Y
 * (skipped: spawns left out while MAX_LIVE children were still alive; cpu_s:
 * the children's, self_cpu_s: churn's own). */
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIVE 1024	/* children alive at once; beyond that, no spawn */

struct child {
	pid_t pid;
	uint64_t start_ns;
};

static struct child live[MAX_LIVE];
static unsigned nlive;
static unsigned long spawned, reaped, failed, skipped;
static uint64_t cpu_ns_total;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000u + tv.tv_usec * 1000u;
}

/* Reaps finished children; with block set, waits for at least one. */
static void reap(FILE *log, int block)
{
	struct rusage ru;
	int status;
	pid_t pid;

	while (nlive && (pid = wait4(-1, &status, block ? 0 : WNOHANG, &ru)) > 0) {
		uint64_t end = now_ns(), cpu = tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime);

		for (unsigned i = 0; i < nlive; i++) {
			if (live[i].pid != pid)
				continue;
			fprintf(log, "%d %llu %llu %llu\n", pid,
				(unsigned long long)live[i].start_ns,
				(unsigned long long)end, (unsigned long long)cpu);
			live[i] = live[--nlive];
			break;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
		reaped++;
		cpu_ns_total += cpu;
	}
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], prog[PATH_MAX + 16];
	ssize_t n;
	FILE *log;

	if (argc != 5) {
		fprintf(stderr, "usage: churn SECONDS PER_SECOND BURN_MS LOG\n");
		return 2;
	}
	double secs = atof(argv[1]), rate = atof(argv[2]);
	const char *burn_ms = argv[3];

	if (rate <= 0 || secs <= 0) {
		fprintf(stderr, "churn: SECONDS and PER_SECOND must be > 0\n");
		return 2;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		perror("churn: /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	snprintf(prog, sizeof(prog), "%s/short_lived", dirname(self));
	log = fopen(argv[4], "w");
	if (!log) {
		fprintf(stderr, "churn: %s: %s\n", argv[4], strerror(errno));
		return 1;
	}

	uint64_t period = (uint64_t)(1e9 / rate), next = now_ns();
	uint64_t end = next + (uint64_t)(secs * 1e9);

	while (now_ns() < end) {
		reap(log, 0);
		if (now_ns() >= next) {
			next += period;
			if (nlive == MAX_LIVE) {
				skipped++;
				continue;
			}
			uint64_t start = now_ns();
			pid_t pid = fork();

			if (pid == 0) {
				execl(prog, "short_lived", burn_ms, (char *)NULL);
				_exit(127);
			}
			if (pid < 0) {
				failed++;
				continue;
			}
			live[nlive++] = (struct child){ pid, start };
			spawned++;
		}
		/* a short nap: reaping late only blurs the end stamps */
		struct timespec nap = { 0, 5000000 };

		nanosleep(&nap, NULL);
	}
	while (nlive)
		reap(log, 1);
	fclose(log);
	struct rusage own;

	getrusage(RUSAGE_SELF, &own);
	printf("spawned=%lu reaped=%lu failed=%lu skipped=%lu cpu_s=%.3f self_cpu_s=%.3f\n",
	       spawned, reaped, failed, skipped, cpu_ns_total / 1e9,
	       (tv_ns(own.ru_utime) + tv_ns(own.ru_stime)) / 1e9);
	return failed ? 1 : 0;
}
