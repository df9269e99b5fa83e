// SPDX-License-Identifier: BSD-2-Clause
/* The side-band mmap log (proc/mmap_log.h): what it keeps of each
 * process's executable mappings, and its bounds. */
#include <criterion/criterion.h>
#include <string.h>

#include "proc/mmap_log.h"

static void map(struct mmap_log *l, uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
		const char *name)
{
	struct sideband_record r = { .type = SIDEBAND_MMAP,
				     .pid = pid,
				     .start = start,
				     .end = end,
				     .pgoff = pgoff,
				     .dev = 2049,
				     .ino = 7,
				     .name = name };

	mmap_log__record(l, &r);
}

static void event(struct mmap_log *l, enum sideband_type type, uint32_t pid, uint64_t time)
{
	struct sideband_record r = { .type = type, .pid = pid, .time_ns = time };

	mmap_log__record(l, &r);
}

static size_t get(struct mmap_log *l, uint32_t pid, const struct logged_mapping **m)
{
	int since_exec;

	return mmap_log__get(l, pid, m, &since_exec);
}

Test(mmap_log, keeps_files_the_vdso_and_anonymous_code_sorted)
{
	struct mmap_log *l = mmap_log__new(1024);
	const struct logged_mapping *m;
	int since_exec = -1;

	event(l, SIDEBAND_EXEC, 10, 1);
	map(l, 10, 0x7f0000000000, 0x7f0000020000, 0x1000, "/lib/libc.so.6");
	map(l, 10, 0x400000, 0x401000, 0x1000, "/usr/bin/app");
	map(l, 10, 0x7ffd00000000, 0x7ffd00002000, 0, "[vdso]");
	map(l, 10, 0x500000, 0x501000, 0, "//anon"); /* a JIT's code */
	map(l, 10, 0x600000, 0x601000, 0, "[heap]"); /* no code a pc is named in */
	cr_assert_eq(mmap_log__get(l, 10, &m, &since_exec), 4);
	cr_assert_eq(since_exec, 1);
	cr_assert_str_eq(m[0].name, "/usr/bin/app");
	cr_assert_str_eq(m[1].name, "[anon]");
	cr_assert_str_eq(m[2].name, "/lib/libc.so.6");
	cr_assert_eq(m[2].pgoff, 0x1000);
	cr_assert_str_eq(m[3].name, "[vdso]");
	cr_assert_eq(get(l, 11, &m), 0);
	/* mapped before kiln saw its exec: kept, but said so */
	map(l, 11, 0x1000, 0x2000, 0, "/bin/sh");
	cr_assert_eq(mmap_log__get(l, 11, &m, &since_exec), 1);
	cr_assert_eq(since_exec, 0);
	mmap_log__free(l);
}

/* A mapping replaces what it overlaps, as the kernel did: inside one it
 * splits it (the tail's file offset moved on), over an end it cuts it,
 * over the whole it removes it. */
Test(mmap_log, overlaps_cut_split_and_replace)
{
	struct mmap_log *l = mmap_log__new(1024);
	const struct logged_mapping *m;

	map(l, 5, 0x10000, 0x20000, 0x3000, "/a");
	map(l, 5, 0x14000, 0x16000, 0, "/b");
	cr_assert_eq(get(l, 5, &m), 3);
	cr_assert_eq(m[0].end, 0x14000);
	cr_assert_str_eq(m[1].name, "/b");
	cr_assert_eq(m[2].start, 0x16000);
	cr_assert_eq(m[2].pgoff, 0x3000 + 0x6000);
	cr_assert_str_eq(m[2].name, "/a");
	map(l, 5, 0x1e000, 0x22000, 0, "/c");
	cr_assert_eq(get(l, 5, &m), 4);
	cr_assert_eq(m[2].end, 0x1e000);
	map(l, 5, 0x8000, 0x40000, 0, "/d");
	cr_assert_eq(get(l, 5, &m), 1);
	cr_assert_str_eq(m[0].name, "/d");
	mmap_log__free(l);
}

/* An exec starts over; /proc read: nothing kept until the next exec; an
 * exit: kept for the grace period, then freed. */
Test(mmap_log, exec_done_and_exit)
{
	struct mmap_log *l = mmap_log__new(1024);
	const struct logged_mapping *m;
	struct mmap_log_stats st;

	map(l, 5, 0x1000, 0x2000, 0, "/old");
	event(l, SIDEBAND_EXEC, 5, 10);
	map(l, 5, 0x3000, 0x4000, 0, "/new");
	cr_assert_eq(get(l, 5, &m), 1);
	cr_assert_str_eq(m[0].name, "/new");
	mmap_log__done(l, 5);
	map(l, 5, 0x5000, 0x6000, 0, "/dlopened");
	cr_assert_eq(get(l, 5, &m), 0);
	event(l, SIDEBAND_EXEC, 5, 20);
	map(l, 5, 0x7000, 0x8000, 0, "/next");
	event(l, SIDEBAND_EXIT, 5, 30);
	mmap_log__expire(l, 30 + MMAP_LOG_GRACE_NS);
	cr_assert_eq(get(l, 5, &m), 1);
	mmap_log__expire(l, 31 + 2 * MMAP_LOG_GRACE_NS);
	cr_assert_eq(get(l, 5, &m), 0);
	mmap_log__stats(l, &st);
	cr_assert_eq(st.processes, 0);
	cr_assert_eq(st.mappings, 0);
	cr_assert_lt(st.bytes, 4096); /* the pid index's slots alone */
	mmap_log__free(l);
}

/* Expiry frees exactly the logs whose exit is older than the grace
 * period, in whatever order the processes started; a pid that runs a
 * program again (reused, or the exit was not the last word) is kept; a
 * log evicted for the bound after its exit is not freed twice. */
Test(mmap_log, expiry_by_exit_time)
{
	struct mmap_log *l = mmap_log__new(1024);
	const struct logged_mapping *m;
	const uint64_t G = MMAP_LOG_GRACE_NS;
	struct mmap_log_stats st;

	for (uint32_t pid = 1; pid <= 6; pid++) {
		event(l, SIDEBAND_EXEC, pid, pid);
		map(l, pid, 0x1000, 0x2000, 0, "/p");
	}
	/* exits in another order than the starts */
	event(l, SIDEBAND_EXIT, 4, 100);
	event(l, SIDEBAND_EXIT, 2, 200);
	event(l, SIDEBAND_EXIT, 6, 300);
	event(l, SIDEBAND_EXIT, 1, 400);
	event(l, SIDEBAND_EXEC, 6, 350); /* pid 6 runs again */
	map(l, 6, 0x1000, 0x2000, 0, "/q");
	mmap_log__expire(l, 250 + G);
	cr_assert_eq(get(l, 4, &m), 0);
	cr_assert_eq(get(l, 2, &m), 0);
	cr_assert_eq(get(l, 1, &m), 1);
	cr_assert_eq(get(l, 3, &m), 1);
	mmap_log__expire(l, 250 + G + 500000000); /* within a second: not looked at */
	cr_assert_eq(get(l, 1, &m), 1);
	mmap_log__expire(l, 10 * G);
	cr_assert_eq(get(l, 1, &m), 0);
	cr_assert_eq(get(l, 6, &m), 1);
	cr_assert_str_eq(m[0].name, "/q");
	cr_assert_eq(get(l, 3, &m), 1);
	cr_assert_eq(get(l, 5, &m), 1);
	mmap_log__stats(l, &st);
	cr_assert_eq(st.processes, 3);
	/* exited, then dropped for the bound: gone from the exit order too */
	event(l, SIDEBAND_EXIT, 3, 10 * G);
	mmap_log__free(l);
	l = mmap_log__new(4);
	event(l, SIDEBAND_EXEC, 1, 1);
	map(l, 1, 0x1000, 0x2000, 0, "/a");
	event(l, SIDEBAND_EXIT, 1, 2);
	event(l, SIDEBAND_EXEC, 2, 3);
	map(l, 2, 0x1000, 0x2000, 0, "/b");
	map(l, 2, 0x3000, 0x4000, 0, "/c"); /* over the bound: pid 1 goes */
	cr_assert_eq(get(l, 1, &m), 0);
	mmap_log__expire(l, 5 * G);
	cr_assert_eq(get(l, 2, &m), 2);
	mmap_log__free(l);
}

/* Bounds: MMAP_LOG_PER_PROCESS a process (the rest counted), and the
 * whole log (a process counts one, each mapping one), the oldest process
 * dropped first. */
Test(mmap_log, bounded)
{
	struct mmap_log *l = mmap_log__new(20);
	const struct logged_mapping *m;
	struct mmap_log_stats st;

	for (uint64_t i = 0; i < MMAP_LOG_PER_PROCESS + 10; i++)
		map(l, 1, 0x1000 * (i + 1), 0x1000 * (i + 1) + 0x800, 0, "/x");
	mmap_log__stats(l, &st);
	cr_assert_eq(st.dropped, 11);
	cr_assert_eq(get(l, 1, &m), MMAP_LOG_PER_PROCESS - 1);
	/* a newer process evicts it whole */
	for (uint32_t pid = 2; pid < 7; pid++) {
		event(l, SIDEBAND_EXEC, pid, pid);
		map(l, pid, 0x1000, 0x2000, 0, "/y");
		map(l, pid, 0x3000, 0x4000, 0, "/z");
	}
	mmap_log__stats(l, &st);
	cr_assert_eq(get(l, 1, &m), 0);
	cr_assert_eq(st.evicted, 1);
	cr_assert_eq(st.processes, 5);
	cr_assert_eq(st.mappings, 10);
	for (uint32_t pid = 7; pid < 12; pid++) {
		event(l, SIDEBAND_EXEC, pid, pid);
		map(l, pid, 0x1000, 0x2000, 0, "/y");
	}
	mmap_log__stats(l, &st);
	cr_assert_leq(st.processes + st.mappings, 20);
	cr_assert_eq(get(l, 2, &m), 0);
	cr_assert_eq(get(l, 11, &m), 1);
	mmap_log__free(l);
}

/* A log is whole from its exec on, until one of its mappings is not kept
 * (the per-process bound) or the kernel lost records; its version says
 * which exec and changes with every mapping. */
Test(mmap_log, complete_only_from_the_exec_and_while_nothing_was_lost)
{
	struct mmap_log *l = mmap_log__new(4096);
	const struct logged_mapping *m;
	struct mmap_log_version v, w;

	map(l, 10, 0x400000, 0x401000, 0, "/usr/bin/app");      /* before kiln saw an exec */
	cr_assert_eq(mmap_log__complete(l, 10, 1000, &m, &v), 0);
	event(l, SIDEBAND_EXEC, 10, 50);
	map(l, 10, 0x400000, 0x401000, 0, "/usr/bin/app");
	cr_assert_eq(mmap_log__complete(l, 10, 49, &m, &v), 0);  /* the program before */
	cr_assert_eq(mmap_log__complete(l, 10, 50, &m, &v), 1);
	cr_assert_eq(v.exec_ns, 50);
	map(l, 10, 0x500000, 0x501000, 0, "/lib/libc.so.6");
	cr_assert_eq(mmap_log__complete(l, 10, 1000, &m, &w), 2);
	cr_assert_eq(w.exec_ns, 50);
	cr_assert_neq(w.gen, v.gen);

	event(l, SIDEBAND_EXEC, 11, 60);
	for (uint64_t i = 0; i < MMAP_LOG_PER_PROCESS; i++)
		map(l, 11, 0x10000000 + i * 0x2000, 0x10001000 + i * 0x2000, 0, "/lib/many.so");
	cr_assert_eq(mmap_log__complete(l, 11, 1000, &m, &v), 0);

	event(l, SIDEBAND_LOST, 0, 70);
	cr_assert_eq(mmap_log__complete(l, 10, 1000, &m, &v), 0);
	event(l, SIDEBAND_EXEC, 10, 80);                /* a log begun after the loss */
	map(l, 10, 0x400000, 0x401000, 0, "/usr/bin/app");
	cr_assert_eq(mmap_log__complete(l, 10, 1000, &m, &v), 1);
	mmap_log__done(l, 10);
	cr_assert_eq(mmap_log__complete(l, 10, 1000, &m, &v), 0);
	mmap_log__free(l);
}
