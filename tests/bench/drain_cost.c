// SPDX-License-Identifier: BSD-2-Clause
/* The CPU cost of one drain's user side: STACKS distinct user stacks of
 * DEPTH return addresses in the real executable mappings of two live
 * processes (this one, with libc, libelf, libcurl and the rest, and
 * Debian's python3 sleeping), named by the symbolizer from the real files
 * and added to their profiles, as pipeline__add_sample does for each key a
 * drain hands over; no BPF. The first round loads the symbol tables and is
 * left out; prints the median of the others in ms of process CPU time and
 * ns per frame. The addresses come from a seeded generator over the
 * mappings' offsets, so two builds see the same work, and under
 * `valgrind --tool=callgrind` the instruction counts compare exactly.
 * Usage: drain_cost [STACKS] [DEPTH] [ROUNDS] [FOLDED]: FOLDED, a file to
 * write the last round's profiles to (folded stacks). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "pipeline.h"
#include "proc/proc.h"
#include "profile/profile.h"
#include "profile/profile_set.h"
#include "symbolize/symbolizer.h"
#include "cpu_ms.h"

#define MAX_TEXTS 256
#define MAX_ROUNDS 31

struct text {
	uint64_t start, len;
};

/* The file-backed executable mappings of pid, in the order maps lists them. */
static size_t texts_of(pid_t pid, struct text *t)
{
	char path[64], line[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (n < MAX_TEXTS && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8];
		int name = 0;

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &name) == 3 &&
		    perms[2] == 'x' && name && line[name] == '/')
			t[n++] = (struct text){ lo, hi - lo };
	}
	fclose(f);
	return n;
}

/* An address in mapping *at of t: the caller's mapping, kept for three
 * frames in four as callers mostly are in real stacks, else any. */
static uint64_t pick(const struct text *t, size_t n, size_t *at)
{
	if (rand() % 4 == 0)
		*at = (size_t)rand() % n;
	return t[*at].start + 16 + (uint64_t)rand() % (t[*at].len - 32);
}

/* The last round's profiles as folded text, to compare two builds' names. */
static void write_folded(struct profile_set *set, const char *path)
{
	FILE *f = fopen(path, "we");

	for (size_t i = 0; f && i < profile_set__count(set); i++)
		folded__write(profile_set__entry(set, i)->profile, false, f);
	if (!f || fclose(f))
		fprintf(stderr, "drain_cost: cannot write %s\n", path);
}

int main(int argc, char **argv)
{
	unsigned stacks = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	unsigned depth = argc > 2 ? (unsigned)atoi(argv[2]) : 16;
	unsigned rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 7;
	struct pipeline_opts o = {
		.metadata = { .node_name = "bench", .kube_disabled = true },
		.max_processes = 64, .max_mappings = 1 << 16, .cache_bytes = 256u << 20,
		.max_label_sets = 16,
	};
	static struct text texts[2][MAX_TEXTS];
	size_t ntexts[2];
	pid_t pids[2] = { getpid(), 0 };
	double took[MAX_ROUNDS];
	struct symbolizer_stats ss;
	const char *folded = argc > 4 ? argv[4] : NULL;
	struct profile_set *set;
	int ready[2];
	char c;
	uint64_t *ips;
	struct pipeline *p;

	if (!stacks || depth < 2 || depth > KILN_MAX_STACK_DEPTH || rounds < 2 || rounds > MAX_ROUNDS)
		return 2;
	if (pipe(ready))
		return 1;
	pids[1] = fork();
	if (pids[1] == 0) {
		/* says so once it runs (every library mapped), then sleeps */
		dup2(ready[1], 1);
		execl("/usr/bin/python3", "python3", "-c",
		      "import sys, time; sys.stdout.write('.'); sys.stdout.flush(); time.sleep(600)",
		      (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	ntexts[1] = read(ready[0], &c, 1) == 1 ? texts_of(pids[1], texts[1]) : 0;
	ntexts[0] = texts_of(pids[0], texts[0]);
	p = pipeline__new(&o, "/proc");
	ips = calloc((size_t)stacks * depth, sizeof(*ips));
	if (!p || !ips || ntexts[0] < 2 || ntexts[1] < 2) {
		fprintf(stderr, "drain_cost: cannot set up (python3 at /usr/bin/python3?)\n");
		kill(pids[1], SIGKILL);
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct kiln_event ev = { .type = KILN_EVENT_NEW, .pid = (uint32_t)pids[i],
					 .instance = (uint32_t)pids[i] };

		proc_table__on_event(pipeline__procs(p), &ev);
	}
	/* Stacks innermost first, built from the root: the root half shared
	 * by many stacks (few entry points, many call sites). */
	srand(42);
	for (unsigned s = 0; s < stacks; s++) {
		int w = s % 2;
		uint64_t *st = ips + (size_t)s * depth;
		size_t at = 0;  /* the root in the executable */

		for (unsigned d = depth; d-- > 0;) {
			if (d >= depth / 2 && s >= 2 * 16)
				st[d] = ips[(size_t)(s % (2 * 16)) * depth + d];
			else
				st[d] = pick(texts[w], ntexts[w], &at);
		}
	}
	for (unsigned r = 0; r < rounds; r++) {
		struct drain_stats ds = { .keys = stacks };
		double t0 = cpu_ms();

		/* a drain begins so (what a drain remembers is forgotten) */
		symbolizer__age(pipeline__symbolizer(p), monotonic_ns());
		for (unsigned s = 0; s < stacks; s++) {
			struct kiln_sample_key key = { .pid = (uint32_t)pids[s % 2],
						       .instance = (uint32_t)pids[s % 2] };
			struct drained_sample d = { .key = &key, .count = 1 + s % 3,
						    .uips = ips + (size_t)s * depth, .un = depth };

			memcpy(key.comm, s % 2 ? "python3" : "drain_cost", s % 2 ? 8 : 11);
			pipeline__add_sample(p, &d);
			ds.drained += d.count;
		}
		ds.outcomes[KILN_SAMPLED] = ds.drained;
		pipeline__account_drain(p, &ds, 0);
		set = pipeline__take(p);
		took[r] = cpu_ms() - t0;
		if (folded && r == rounds - 1)
			write_folded(set, folded);
		profile_set__free(set);
	}
	kill(pids[1], SIGKILL);
	waitpid(pids[1], NULL, 0);
	symbolizer__stats(pipeline__symbolizer(p), &ss);
	qsort(took + 1, rounds - 1, sizeof(took[0]), cmp_double);
	printf("{\"stacks\": %u, \"depth\": %u, \"first_round_ms\": %.1f, \"drain_cpu_ms_median\": %.2f, "
	       "\"ns_per_frame\": %.0f, \"profiled\": %llu, \"symbol_tables_loaded\": %llu, "
	       "\"frames_named\": %llu, \"frames\": %llu, \"frame_memo_hits\": %llu, "
	       "\"frame_memo_misses\": %llu, \"frame_memo_full\": %llu}\n",
	       stacks, depth, took[0], took[1 + (rounds - 1) / 2],
	       took[1 + (rounds - 1) / 2] * 1e6 / ((double)stacks * depth),
	       (unsigned long long)pipeline__totals(p)->profiled, (unsigned long long)ss.symtab_loads,
	       (unsigned long long)ss.user_resolved, (unsigned long long)ss.user_frames,
	       (unsigned long long)ss.frame_memo_hits, (unsigned long long)ss.frame_memo_misses,
	       (unsigned long long)ss.frame_memo_full);
	pipeline__free(p);
	free(ips);
	return 0;
}
