// SPDX-License-Identifier: BSD-2-Clause
/* A tiny JIT: copies a counting loop of machine code into an anonymous
 * executable mapping and runs it for argv[1] seconds (default 3). With
 * argv[2] "map" (the default) it first appends "START SIZE fake_jit_spin"
 * to /tmp/perf-<pid>.map, <pid> as its own pid namespace numbers it, as a
 * JIT does; with "-XX:+DumpPerfMapAtExit" it writes it only as it exits,
 * as a JVM given that flag does; with "none" it writes nothing (the tests
 * plant the file). The
 * code sits 0x100 bytes into its page, so the mapping's start is not the
 * symbol's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* spin(n): count n down to 0, return. */
#if defined(__x86_64__)
static const uint8_t spin_code[] = {
	0x48, 0xff, 0xcf, /* dec %rdi */
	0x75, 0xfb, /* jnz -5 */
	0xc3, /* ret */
};
#elif defined(__aarch64__)
static const uint32_t spin_code[] = {
	0xf1000400, /* subs x0, x0, #1 */
	0x54ffffe1, /* b.ne -4 */
	0xd65f03c0, /* ret */
};
#else
#error "fake_jit: no machine code for this architecture"
#endif

#define CODE_OFFSET 0x100

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends the code's line to /tmp/perf-<pid>.map; 0, or 1 said on stderr. */
static int write_map(const void *code)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "a");
	if (!f || fprintf(f, "%lx %zx fake_jit_spin\n", (unsigned long)(uintptr_t)code,
			  sizeof(spin_code)) < 0 ||
	    fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3);
	const char *mode = argc > 2 ? argv[2] : "map";
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	void (*spin)(unsigned long);

	if (mem == MAP_FAILED) {
		perror("fake_jit: mmap");
		return 1;
	}
	memcpy(mem + CODE_OFFSET, spin_code, sizeof(spin_code));
	__builtin___clear_cache((char *)mem + CODE_OFFSET,
				(char *)mem + CODE_OFFSET + sizeof(spin_code));
	if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC)) {
		perror("fake_jit: mprotect");
		return 1;
	}
	if (strcmp(mode, "map") == 0 && write_map(mem + CODE_OFFSET))
		return 1;
	spin = (void (*)(unsigned long))(uintptr_t)(mem + CODE_OFFSET);
	while (now() < end)
		spin(10000000);
	return strcmp(mode, "-XX:+DumpPerfMapAtExit") == 0 && write_map(mem + CODE_OFFSET);
}
