// SPDX-License-Identifier: BSD-2-Clause
// swap_plugins DIR SECONDS_A SECONDS_B: a program that replaces a plugin
// while it runs, as a server reloading a module does. It loads
// DIR/libplugin_a.so, spends SECONDS_A of CPU time in it, unloads it, loads
// DIR/libplugin_b.so, which the dynamic loader maps over the range A left
// (the same size: the kernel hands out the same gap), and spends
// SECONDS_B in it. Both are reached by main > spend > run_plugin > plugin_run
// (libplugin.c has the rest of each chain). Exits 2, saying so, when B did
// not land where A was: then nothing was replaced in place. Built with gcc
// -O2 -fomit-frame-pointer.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef uint64_t (*plugin_fn)(uint64_t, long);

#define CALLER __attribute__((noinline, noclone))
#define UNIT 100000L

// Work after the call keeps it a call, not a jump.
CALLER uint64_t run_plugin(plugin_fn run, uint64_t s)
{
	return run(s, UNIT) * 3;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Loads DIR/NAME: its handle, plugin_run and load address, or exits.
static void *load(const char *dir, const char *name, plugin_fn *run, uintptr_t *base)
{
	char path[4096];
	struct link_map *lm;
	void *h;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
		fprintf(stderr, "swap_plugins: %s\n", dlerror());
		exit(1);
	}
	*run = (plugin_fn)dlsym(h, "plugin_run");
	if (!*run) {
		fprintf(stderr, "swap_plugins: %s: no plugin_run\n", path);
		exit(1);
	}
	*base = lm->l_addr;
	return h;
}

CALLER uint64_t spend(plugin_fn run, double seconds, uint64_t s)
{
	double start = cpu_seconds();

	while (cpu_seconds() - start < seconds)
		s = run_plugin(run, s);
	return s;
}

int main(int argc, char **argv)
{
	uintptr_t base_a, base_b;
	plugin_fn run;
	uint64_t s = 1;
	void *h;

	if (argc != 4) {
		fprintf(stderr, "usage: swap_plugins DIR SECONDS_A SECONDS_B\n");
		return 1;
	}
	h = load(argv[1], "libplugin_a.so", &run, &base_a);
	s = spend(run, atof(argv[2]), s);
	dlclose(h);
	h = load(argv[1], "libplugin_b.so", &run, &base_b);
	if (base_b != base_a) {
		fprintf(stderr, "swap_plugins: libplugin_b.so loaded at %#lx, not at %#lx where "
			"libplugin_a.so was: nothing replaced in place\n", (unsigned long)base_b,
			(unsigned long)base_a);
		return 2;
	}
	s = spend(run, atof(argv[3]), s);
	dlclose(h);
	printf("plugins at %#lx: %llu\n", (unsigned long)base_a, (unsigned long long)(s % 1000));
	return 0;
}
