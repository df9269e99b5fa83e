// SPDX-License-Identifier: BSD-2-Clause
/* Process table on a fake /proc tree, maps parsing, the u64 map and flag
 * value parsing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/parse.h"
#include "proc/proc.h"
#include "unit_helpers.h"

static const char maps_text[] =
	"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/app\n"
	"55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234 /usr/bin/app\n"
	"this line is junk\n"
	"7f00000a0000-7f00000b0000 r-xp 00002000 08:01 99 /tmp/lib with space.so (deleted)\n"
	"7ffd1c9f0000-7ffd1c9f2000 r-xp 00000000 00:00 0 [vdso]\n"
	"7f0000200000-7f0000100000 r-xp 00000000 00:00 0 [backwards]\n"
	"7f0000300000-7f0000301000 rwxp 00000000 00:00 0 \n";

Test(proc_maps, keeps_executable_mappings_and_skips_junk)
{
	struct proc_mapping *maps;
	uint64_t *devs, *inos;
	int n = proc_maps__parse(maps_text, sizeof(maps_text) - 1, &maps, &devs, &inos);

	cr_assert_eq(n, 4);
	cr_assert_eq(maps[0].start, 0x55d0c0a01000ull);
	cr_assert_eq(maps[0].pgoff, 0x1000);
	cr_assert_str_eq(maps[0].name, "/usr/bin/app");
	cr_assert_eq(inos[0], 1234);
	cr_assert_eq(devs[0], (8ull << 8) | 1);
	cr_assert_str_eq(maps[1].name, "/tmp/lib with space.so (deleted)");
	cr_assert_str_eq(maps[2].name, "[vdso]");
	cr_assert_str_eq(maps[3].name, "[anon]");
	proc_mappings__free(maps, (size_t)n);
	free(devs);
	free(inos);
}

Test(proc_maps, empty_and_garbage_input)
{
	struct proc_mapping *maps = NULL;
	char garbage[512];

	cr_assert_eq(proc_maps__parse("", 0, &maps, NULL, NULL), 0);
	free(maps);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)(i * 7919 % 251);
	maps = NULL;
	cr_assert_eq(proc_maps__parse(garbage, sizeof(garbage), &maps, NULL, NULL), 0);
	free(maps);
}

static char root[64];

static void write_file(const char *pid, const char *name, const char *text)
{
	write_under(root, pid, name, text);
}

/* /proc/<pid> of a process running the app: its maps, comm, cgroup, and
 * the stat line given. */
static void fake_process(const char *pid, const char *stat)
{
	write_file(pid, "maps", maps_text);
	write_file(pid, "comm", "app-main\n");
	write_file(pid, "cgroup", "0::/system.slice/app.service\n");
	write_file(pid, "stat", stat);
}

static void fake_proc(void)
{
	strcpy(root, "/tmp/kiln-proc.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	fake_process("4242",
		     "4242 (odd) name) R 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 777 1000 10\n");
}

static void remove_proc(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

static struct kiln_event event(uint32_t type, uint32_t pid, uint32_t instance)
{
	struct kiln_event ev = { .type = type, .pid = pid, .instance = instance };

	strcpy(ev.comm, "thread-7");
	return ev;
}

/* The snapshot a NEW event of pid takes; asserts there is one. */
static struct proc_snapshot *take(struct proc_table *t, uint32_t pid, uint32_t instance)
{
	struct kiln_event ev = event(KILN_EVENT_NEW, pid, instance);
	struct proc_snapshot *s;

	proc_table__on_event(t, &ev);
	s = proc_table__get(t, instance);
	cr_assert_not_null(s);
	return s;
}

Test(proc_table, snapshot_survives_exit_until_drained, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct proc_snapshot *s = take(t, 4242, 7);
	struct kiln_event ev;
	struct proc_stats st;

	cr_assert_str_eq(s->comm, "app-main");     /* process name, not thread */
	cr_assert_eq(s->starttime, 777);          /* parsed past "(odd) name)" */
	cr_assert_str_eq(s->cgroup, "0::/system.slice/app.service\n");
	cr_assert_eq(s->nmaps, 4);
	cr_assert_str_eq(proc_snapshot__find(s, 0x55d0c0a01234)->name, "/usr/bin/app");
	cr_assert_null(proc_snapshot__find(s, 0x55d0c0a00fff));
	/* The files do not exist here: no descriptor, but a cache key. */
	cr_assert_eq(s->maps[0].bin->fd, -1);
	cr_assert_str_eq(s->maps[0].bin->key, "i:2049:1234:r0");
	cr_assert_str_eq(s->maps[1].bin->path, "/tmp/lib with space.so");

	ev = event(KILN_EVENT_EXIT, 4242, 7);
	proc_table__on_event(t, &ev);
	remove_proc();
	proc_table__drained(t);        /* the drain that holds its last samples */
	cr_assert_not_null(proc_table__get(t, 7));
	proc_table__drained(t);
	cr_assert_null(proc_table__get(t, 7));
	proc_table__stats(t, &st);
	cr_assert_eq(st.snapshots, 1);
	cr_assert_eq(st.reaped, 1);
	cr_assert_eq(st.binaries, 0);
	proc_table__free(t);
}

/* A process whose first sample came just before its exec, read from /proc
 * after it: the mappings and name are the next program's, so they go; a
 * snapshot read before the exec keeps them. */
Test(proc_table, snapshot_read_after_exec_is_discarded, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct kiln_event ev = event(KILN_EVENT_NEW, 4242, 7);
	struct proc_snapshot *s;
	struct proc_stats st;

	proc_table__on_event(t, &ev);
	ev = event(KILN_EVENT_NEW, 4242, 8);
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 7);
	cr_assert_eq(s->nmaps, 4);
	cr_assert_str_eq(s->comm, "app-main");

	ev = event(KILN_EVENT_EXEC, 4242, 7);
	ev.time_ns = s->taken_ns - 1;
	proc_table__on_event(t, &ev);
	cr_assert(s->ended);
	cr_assert_eq(s->nmaps, 0);
	cr_assert_null(proc_snapshot__find(s, 0x55d0c0a01234));
	cr_assert_str_eq(s->comm, "thread-7");

	s = proc_table__get(t, 8);
	ev = event(KILN_EVENT_EXEC, 4242, 8);
	ev.time_ns = s->taken_ns + 1;
	proc_table__on_event(t, &ev);
	cr_assert(s->ended);
	cr_assert_eq(s->nmaps, 4);
	cr_assert_str_eq(s->comm, "app-main");
	proc_table__stats(t, &st);
	cr_assert_eq(st.read_after_exec, 1);
	proc_table__free(t);
}

/* The first process to map a file could not open it (gone, or the file
 * not there yet): the next process of that root mapping the same file
 * opens it for all of them, instead of leaving the shared binary
 * unnamed. */
Test(proc_table, binary_opened_by_a_later_process, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct kiln_event ev = event(KILN_EVENT_NEW, 4242, 7);
	struct proc_snapshot *s;
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/rootfs && ln -s %s/rootfs %s/4242/root", root, root,
		 root);
	cr_assert_eq(system(cmd), 0);
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 7);
	cr_assert_eq(s->maps[0].bin->fd, -1);
	cr_assert_eq(strncmp(s->maps[0].bin->key, "i:2049:1234:r", 13), 0, "%s", s->maps[0].bin->key);

	fake_process("4243",
		     "4243 (app) R 1 4243 4243 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 778 1000 10\n");
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/rootfs/usr/bin && echo app > %s/rootfs/usr/bin/app && "
		 "ln -s %s/rootfs %s/4243/root", root, root, root, root);
	cr_assert_eq(system(cmd), 0);
	ev = event(KILN_EVENT_NEW, 4243, 8);
	proc_table__on_event(t, &ev);
	/* one shared binary, now open, keyed by what the opened file is */
	cr_assert_eq(proc_table__get(t, 8)->maps[0].bin, s->maps[0].bin);
	cr_assert_geq(s->maps[0].bin->fd, 0);
	cr_assert_eq(strncmp(s->maps[0].bin->key, "f:", 2), 0, "key %s", s->maps[0].bin->key);
	proc_table__free(t);
}

Test(proc_table, vanished_process_and_full_table, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct proc_stats st;

	for (uint32_t i = 0; i < 20; i++) {
		struct kiln_event ev = event(KILN_EVENT_NEW, i == 0 ? 4242 : 90000 + i, 100 + i);

		proc_table__on_event(t, &ev);
	}
	proc_table__stats(t, &st);
	cr_assert_eq(st.snapshots, 1);
	cr_assert_eq(st.snapshot_failures, 15);   /* no such /proc entry */
	cr_assert_eq(st.table_full, 4);
	/* A vanished process keeps the name its event carried. */
	cr_assert_str_eq(proc_table__get(t, 101)->comm, "thread-7");
	cr_assert(proc_table__get(t, 101)->ended);
	proc_table__free(t);
}

/* A forked process (no exec since) runs its parent's image: it gets the
 * mappings of its parent's snapshot, sharing their binaries, without a
 * /proc file of its own (here it has none: gone already), the parent's
 * cgroup when its own is gone and the ids match, and an exec read after
 * does not take them away. */
Test(proc_table, forked_process_takes_its_parents_mappings, .init = fake_proc,
     .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct kiln_event ev = event(KILN_EVENT_NEW, 4242, 7);
	struct proc_snapshot *parent, *child;
	struct proc_stats st;

	ev.cgroup_id = 55;
	proc_table__on_event(t, &ev);
	parent = proc_table__get(t, 7);
	ev = event(KILN_EVENT_NEW, 5000, 9);
	ev.flags = KILN_EVENT_F_FORKED;
	ev.ppid = 4242;
	ev.cgroup_id = 55;
	ev.start_boottime_ns = 1;
	proc_table__on_event(t, &ev);
	child = proc_table__get(t, 9);
	cr_assert_not_null(child);
	cr_assert_not(child->ended);
	cr_assert(child->forked);
	cr_assert_eq(child->nmaps, parent->nmaps);
	cr_assert_eq(proc_snapshot__find(child, 0x55d0c0a01234)->bin,
		     proc_snapshot__find(parent, 0x55d0c0a01234)->bin);
	cr_assert_str_eq(child->cgroup, parent->cgroup);

	ev = event(KILN_EVENT_EXEC, 5000, 9);
	ev.time_ns = child->taken_ns - 1;
	proc_table__on_event(t, &ev);
	cr_assert(child->ended);
	cr_assert_eq(child->nmaps, 4);
	proc_table__stats(t, &st);
	cr_assert_eq(st.forked_copies, 1);
	cr_assert_eq(st.read_after_exec, 0);
	cr_assert_eq(st.snapshot_failures, 0);
	cr_assert_eq(st.mappings, 8);

	/* The parent gone from the table (exited): its /proc files, which
	 * are still there, stand for the child's. A process not forked, or
	 * another cgroup, gets nothing of the parent's. */
	ev = event(KILN_EVENT_EXIT, 4242, 7);
	proc_table__on_event(t, &ev);
	ev = event(KILN_EVENT_NEW, 5001, 10);
	ev.flags = KILN_EVENT_F_FORKED;
	ev.ppid = 4242;
	ev.start_boottime_ns = 1;
	proc_table__on_event(t, &ev);
	child = proc_table__get(t, 10);
	cr_assert(child->forked);
	cr_assert_eq(child->nmaps, 4);
	cr_assert_null(child->cgroup);
	ev = event(KILN_EVENT_NEW, 5002, 11);
	ev.ppid = 4242;
	ev.start_boottime_ns = 1;
	proc_table__on_event(t, &ev);
	cr_assert(proc_table__get(t, 11)->ended);
	proc_table__stats(t, &st);
	cr_assert_eq(st.forked_reads, 1);
	cr_assert_eq(st.snapshot_failures, 1);
	proc_table__free(t);
}

/* A process gone before its NEW event was handled: no /proc files, but
 * the side-band logged its mappings. Its snapshot has them; its files are
 * opened on the host only when they are the very inode mapped. */
Test(proc_table, gone_process_from_the_sideband_log, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct sideband_record r = { .type = SIDEBAND_EXEC, .pid = 6000, .time_ns = 1 };
	char file[128];
	struct kiln_event ev;
	struct proc_snapshot *s;
	struct proc_stats st;
	struct stat sb;

	snprintf(file, sizeof(file), "%s/files/app", root);
	write_under(root, "files", "app", "not an ELF file, still a file");
	cr_assert_eq(stat(file, &sb), 0);
	proc_table__on_sideband(t, &r);
	r = (struct sideband_record){ .type = SIDEBAND_MMAP, .pid = 6000, .time_ns = 2,
				      .start = 0x400000, .end = 0x401000, .pgoff = 0x1000,
				      .dev = sb.st_dev, .ino = sb.st_ino, .name = file };
	proc_table__on_sideband(t, &r);
	r.start = 0x500000;
	r.end = 0x501000;
	r.ino = sb.st_ino + 1;  /* the path now names another inode */
	proc_table__on_sideband(t, &r);

	ev = event(KILN_EVENT_NEW, 6000, 12);
	ev.start_boottime_ns = 1;
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 12);
	cr_assert_not_null(s);
	cr_assert(s->ended);
	cr_assert_eq(s->nmaps, 2);
	cr_assert_str_eq(proc_snapshot__find(s, 0x400800)->name, file);
	cr_assert_eq(proc_snapshot__find(s, 0x400800)->pgoff, 0x1000);
	cr_assert_geq(proc_snapshot__find(s, 0x400800)->bin->fd, 0);
	cr_assert_eq(proc_snapshot__find(s, 0x500800)->bin->fd, -1);
	proc_table__stats(t, &st);
	cr_assert_eq(st.from_log, 1);
	cr_assert_eq(st.from_log_partial, 0);
	cr_assert_eq(st.snapshot_failures, 0);

	/* a process read from /proc needs no log: what it held goes */
	r = (struct sideband_record){ .type = SIDEBAND_MMAP, .pid = 4242, .time_ns = 3,
				      .start = 0x1000, .end = 0x2000, .dev = 1, .ino = 2,
				      .name = "/x" };
	proc_table__on_sideband(t, &r);
	take(t, 4242, 13);
	proc_table__stats(t, &st);
	cr_assert_eq(st.log.processes, 2);
	cr_assert_eq(st.log.mappings, 2);
	proc_table__free(t);
}

/* A live process whose exec the side-band logged, and every executable
 * mapping since: its snapshot is the log's (its maps file, which would say
 * otherwise here, is not read), re-reads answer from the log, and once the
 * log no longer holds every mapping (a LOST record) /proc is read again. A
 * first sample before the logged exec is of the program before: /proc. */
static void logged(struct proc_table *t, enum sideband_type type, uint64_t time, uint64_t start)
{
	struct sideband_record r = { .type = type, .pid = 4242, .time_ns = time,
				     .start = start, .end = start + 0x1000, .dev = 2049,
				     .ino = 1234, .name = "/usr/bin/app" };

	proc_table__on_sideband(t, &r);
}

static unsigned mapped_calls;

static void count_mapped(void *ctx, const struct proc_snapshot *s)
{
	(void)ctx;
	(void)s;
	mapped_calls++;
}

/* A file mapped over a mapping a live snapshot lists (a library unloaded
 * and another loaded in its range) queues the snapshot for a re-read; its
 * own file mapped again at the same place, or a file mapped elsewhere,
 * does not. */
Test(proc_table, replaced_mapping_queues_a_reread, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct proc_snapshot *s;
	struct sideband_record same = { .type = SIDEBAND_MMAP, .pid = 4242, .time_ns = 1,
					.start = 0x55d0c0a02000, .end = 0x55d0c0a03000,
					.pgoff = 0x2000, .dev = makedev(8, 1), .ino = 1234,
					.name = "/usr/bin/app" };
	struct sideband_record other = same, elsewhere = same;
	struct proc_stats st;

	write_file("4242", "exe", "the program");
	s = take(t, 4242, 7);
	other.ino = 4321;
	other.name = "/usr/lib/plugin_b.so";
	elsewhere.start = 0x7e0000000000;
	elsewhere.end = 0x7e0000001000;
	elsewhere.ino = 4321;
	proc_table__on_sideband(t, &same);
	proc_table__on_sideband(t, &elsewhere);
	cr_assert_not(s->replaced);
	proc_table__on_sideband(t, &other);
	proc_table__on_sideband(t, &other);     /* queued once */
	cr_assert(s->replaced);
	proc_table__stats(t, &st);
	cr_assert_eq(st.mappings_replaced, 1);
	cr_assert_eq(st.refreshes, 0);

	/* due once its last read is PROC_REPLACED_REREAD_NS old */
	s->taken_ns -= PROC_REPLACED_REREAD_NS;
	cr_assert(proc_table__replaced_due(t));
	proc_table__refresh_replaced(t);
	cr_assert_not(s->replaced);
	cr_assert_not(proc_table__replaced_due(t));
	proc_table__stats(t, &st);
	cr_assert_eq(st.refreshes, 1);

	/* after an exec, the next program's mappings replace nothing: its
	 * EXEC event ends the snapshot */
	other.type = SIDEBAND_EXEC;
	other.time_ns = s->taken_ns + 1;
	proc_table__on_sideband(t, &other);
	other.type = SIDEBAND_MMAP;
	other.time_ns = s->taken_ns + 2;
	proc_table__on_sideband(t, &other);
	cr_assert_not(s->replaced);
	proc_table__free(t);
}

Test(proc_table, live_process_from_the_sideband_log, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct kiln_event ev = event(KILN_EVENT_NEW, 4242, 7);
	struct proc_snapshot *s;
	struct proc_stats st;
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/4242/root", root);
	cr_assert_eq(mkdir(dir, 0755), 0);
	write_file("4242", "exe", "the program");
	proc_table__observe(t, &(struct proc_observer){ count_mapped, NULL, NULL });
	logged(t, SIDEBAND_EXEC, 100, 0);
	logged(t, SIDEBAND_MMAP, 101, 0x400000);

	ev.time_ns = 99;                /* sampled before that exec: /proc */
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 7);
	cr_assert_eq(s->nmaps, 4);
	cr_assert_not(s->logged);

	logged(t, SIDEBAND_EXEC, 110, 0);       /* and that log is not kept */
	logged(t, SIDEBAND_MMAP, 111, 0x400000);
	logged(t, SIDEBAND_MMAP, 112, 0x7f0000000000);

	ev = event(KILN_EVENT_NEW, 4242, 8);
	ev.time_ns = 200;
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 8);
	cr_assert(s->logged);
	cr_assert_eq(s->nmaps, 2);
	cr_assert_str_eq(proc_snapshot__find(s, 0x400800)->name, "/usr/bin/app");
	cr_assert_str_eq(s->cgroup, "0::/system.slice/app.service\n");
	mapped_calls = 0;

	cr_assert_not(proc_table__log_moved(t, s));
	cr_assert_eq(proc_table__refresh(t, s), 0);     /* nothing new: told anyway */
	cr_assert_eq(mapped_calls, 1);
	logged(t, SIDEBAND_MMAP, 300, 0x500000);
	cr_assert(proc_table__log_moved(t, s));         /* a library mapped since */
	cr_assert_eq(proc_table__refresh(t, s), 0);
	cr_assert_eq(s->nmaps, 3);
	cr_assert(s->logged);
	cr_assert_not(proc_table__log_moved(t, s));
	proc_table__stats(t, &st);
	cr_assert_eq(st.logged_live, 1);
	cr_assert_eq(st.logged_unchanged, 1);
	cr_assert_eq(st.logged_refreshes, 1);
	cr_assert_eq(st.refreshes, 0);

	/* its exec ends it; the mappings were the sampled program's all along */
	ev = event(KILN_EVENT_EXEC, 4242, 8);
	ev.time_ns = 150;
	proc_table__on_event(t, &ev);
	cr_assert(s->ended);
	cr_assert_eq(s->nmaps, 3);

	logged(t, SIDEBAND_EXEC, 500, 0);
	logged(t, SIDEBAND_MMAP, 501, 0x400000);
	ev = event(KILN_EVENT_NEW, 4242, 9);
	ev.time_ns = 600;
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 9);
	cr_assert(s->logged);
	logged(t, SIDEBAND_LOST, 700, 0);
	cr_assert_not(proc_table__log_moved(t, s));     /* the log no longer says all */
	cr_assert_eq(proc_table__refresh(t, s), 0);
	cr_assert_not(s->logged);
	cr_assert_eq(s->nmaps, 4);      /* what the maps file says */
	proc_table__stats(t, &st);
	cr_assert_eq(st.logged_live, 2);
	cr_assert_eq(st.refreshes, 1);
	proc_table__free(t);
}

/* A new process whose event carries its parent's keys takes the root and
 * cgroup text of its parent's snapshot, /proc not read; the cgroup text
 * only while no task moved between the parent's read and the child's
 * event; its executable's identity comes from the side-band log. */
static struct kiln_event keyed_event(uint32_t pid, uint32_t instance, uint64_t cgroup_key,
				     uint64_t epoch)
{
	struct kiln_event ev = event(KILN_EVENT_NEW, pid, instance);

	ev.root_key = 11;
	ev.cgroup_key = cgroup_key;
	ev.cgroup_epoch = epoch;
	return ev;
}

static void child_process(const char *pid, uint32_t instance, uint64_t cgroup_key,
			  uint64_t epoch, struct kiln_event *ev)
{
	char stat_text[128], dir[160];
	struct stat sb;

	snprintf(stat_text, sizeof(stat_text), "%s (child) R 4242 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 900 1 1\n",
		 pid);
	fake_process(pid, stat_text);
	write_file(pid, "cgroup", "0::/its.own\n");
	snprintf(dir, sizeof(dir), "%s/%s/root", root, pid);
	cr_assert(mkdir(dir, 0755) == 0 || stat(dir, &sb) == 0);
	*ev = keyed_event((uint32_t)atoi(pid), instance, cgroup_key, epoch);
	ev->ppid = 4242;
	ev->time_ns = 1000;
}

Test(proc_table, parent_root_and_cgroup_passed_on, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	volatile uint64_t epoch = 5;
	struct kiln_event ev;
	struct proc_snapshot *s;
	struct proc_stats st;
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/4242/root", root);
	cr_assert_eq(mkdir(dir, 0755), 0);
	proc_table__use_cgroup_epoch(t, &epoch);
	ev = keyed_event(4242, 7, 22, 5);
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 7);
	cr_assert(s->cgroup_keyed);
	cr_assert_neq(s->root_id, 0);

	for (uint32_t pid = 4243; pid <= 4245; pid++) {
		struct sideband_record r = { .type = SIDEBAND_EXEC, .pid = pid, .time_ns = 900 };

		proc_table__on_sideband(t, &r);
		r = (struct sideband_record){ .type = SIDEBAND_MMAP, .pid = pid, .time_ns = 901,
					      .start = 0x400000, .end = 0x401000, .dev = 2049,
					      .ino = 1234, .name = "/usr/bin/app" };
		proc_table__on_sideband(t, &r);
		r.start = 0x7f0000000000;       /* the dynamic loader, mapped second */
		r.end = r.start + 0x1000;
		r.ino = 99;
		r.time_ns = 902;
		proc_table__on_sideband(t, &r);
	}
	child_process("4243", 8, 22, 5, &ev);
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 8);
	cr_assert(s->logged);
	cr_assert_str_eq(s->cgroup, "0::/system.slice/app.service\n");
	cr_assert_eq(s->root_id, proc_table__get(t, 7)->root_id);
	cr_assert_eq(s->exe_dev, 2049);
	cr_assert_eq(s->exe_ino, 1234);

	child_process("4244", 9, 23, 5, &ev);   /* another set of cgroups */
	proc_table__on_event(t, &ev);
	cr_assert_str_eq(proc_table__get(t, 9)->cgroup, "0::/its.own\n");

	epoch = 6;                              /* a task moved since the parent's read */
	child_process("4245", 10, 22, 6, &ev);
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 10);
	cr_assert_str_eq(s->cgroup, "0::/its.own\n");
	cr_assert(s->cgroup_keyed);
	proc_table__stats(t, &st);
	cr_assert_eq(st.roots_inherited, 3);
	cr_assert_eq(st.cgroups_inherited, 1);
	cr_assert_eq(st.exes_logged, 3);

	/* gone before its event was read (its exit logged): from the log,
	 * ended, though its root needed no read */
	{
		struct sideband_record r = { .type = SIDEBAND_EXIT, .pid = 4245, .time_ns = 950 };

		proc_table__on_sideband(t, &r);
	}
	child_process("4245", 12, 22, 6, &ev);
	proc_table__on_event(t, &(struct kiln_event){ .type = KILN_EVENT_EXIT, .pid = 4245,
						     .instance = 10 });
	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 12);
	cr_assert(s->ended);
	cr_assert_eq(s->nmaps, 2);
	proc_table__stats(t, &st);
	cr_assert_eq(st.from_log, 1);

	/* read while the epoch moved since the event: not passed on */
	ev = keyed_event(4242, 11, 22, 5);
	proc_table__on_event(t, &(struct kiln_event){ .type = KILN_EVENT_EXIT, .pid = 4242,
						     .instance = 7 });
	proc_table__on_event(t, &ev);
	cr_assert_not(proc_table__get(t, 11)->cgroup_keyed);
	proc_table__free(t);
}

/* On a host of cgroup v2 alone, processes of one cgroup share its text:
 * read for the first, then cached by the cgroup's id, which is the inode
 * of the directory the text names (a text naming another cgroup, or of
 * several lines, is not cached). */
Test(proc_table, cgroup_text_cached_by_id, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	char cg[128], dir[160];
	struct kiln_event ev;
	struct proc_stats st;
	struct stat sb;

	snprintf(cg, sizeof(cg), "%s/cgroup2", root);
	cr_assert_eq(mkdir(cg, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/system.slice", cg);
	cr_assert_eq(mkdir(dir, 0755), 0);
	strcat(dir, "/app.service");
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(stat(dir, &sb), 0);
	proc_table__cache_cgroups(t, cg);

	ev = event(KILN_EVENT_NEW, 4242, 7);
	ev.cgroup_id = sb.st_ino;
	proc_table__on_event(t, &ev);
	write_file("4242", "cgroup", "0::/other.slice\n");     /* never read again */
	ev.instance = 8;
	proc_table__on_event(t, &ev);
	cr_assert_str_eq(proc_table__get(t, 8)->cgroup, "0::/system.slice/app.service\n");

	ev.instance = 9;                /* a text not of this id: read, not kept */
	ev.cgroup_id = sb.st_ino + 1;
	proc_table__on_event(t, &ev);
	cr_assert_str_eq(proc_table__get(t, 9)->cgroup, "0::/other.slice\n");
	write_file("4242", "cgroup", "1:name=systemd:/\n0::/\n");
	ev.instance = 10;
	proc_table__on_event(t, &ev);
	cr_assert_str_eq(proc_table__get(t, 10)->cgroup, "1:name=systemd:/\n0::/\n");
	proc_table__stats(t, &st);
	cr_assert_eq(st.cgroup_texts_cached, 1);
	proc_table__free(t);
}

/* A process with 60 000 executable mappings of one file (plus as many
 * non-executable ones): kiln keeps PROC_MAPS_PER_PROCESS, counts the rest,
 * and never reads it again; the table's bound caps the total. */
#define MANY_MAPS 60000

static char *many_maps_text(size_t *len)
{
	size_t cap = (size_t)MANY_MAPS * 2 * 96, pos = 0;
	char *text = malloc(cap);

	cr_assert_not_null(text);
	for (unsigned long i = 0; i < MANY_MAPS; i++) {
		unsigned long long at = 0x7f0000000000ull + i * 0x2000ull;

		pos += (size_t)snprintf(text + pos, cap - pos,
					"%llx-%llx r--p 00000000 08:01 4321 /usr/lib/evil.so\n"
					"%llx-%llx r-xp 00001000 08:01 4321 /usr/lib/evil.so\n",
					at, at + 0x1000, at + 0x1000, at + 0x2000);
	}
	*len = pos;
	return text;
}

static void fake_many(void)
{
	size_t len;
	char *text = many_maps_text(&len);

	fake_proc();
	write_file("5000", "maps", text);
	write_file("5000", "comm", "jit\n");
	write_file("5000", "stat", "5000 (jit) R 1 5000 5000 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 888 1 1\n");
	free(text);
}

Test(proc_maps, at_most_the_cap_is_parsed_the_rest_counted)
{
	struct proc_mapping *maps;
	size_t len, dropped = 0;
	char *text = many_maps_text(&len);
	int n = proc_maps__parse_max(text, len, PROC_MAPS_PER_PROCESS, &maps, NULL, NULL,
				     &dropped);

	cr_assert_eq(n, PROC_MAPS_PER_PROCESS);
	cr_assert_eq(dropped, MANY_MAPS - PROC_MAPS_PER_PROCESS);
	cr_assert_eq(maps[0].start, 0x7f0000001000ull);
	cr_assert_eq(maps[n - 1].start, 0x7f0000000000ull + (PROC_MAPS_PER_PROCESS - 1) * 0x2000ull + 0x1000);
	proc_mappings__free(maps, (size_t)n);
	n = proc_maps__parse_max(text, len, 0, &maps, NULL, NULL, &dropped);
	cr_assert_eq(n, 0);
	cr_assert_eq(dropped, MANY_MAPS);
	free(maps);
	n = proc_maps__parse(text, len, &maps, NULL, NULL);     /* the same cap */
	cr_assert_eq(n, PROC_MAPS_PER_PROCESS);
	proc_mappings__free(maps, (size_t)n);
	free(text);
}

Test(proc_table, sixty_thousand_mappings_are_capped_and_not_reread, .init = fake_many,
     .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16, 1 << 16);
	struct proc_snapshot *s = take(t, 5000, 9);
	struct kiln_event ev;
	struct proc_stats st;

	cr_assert_eq(s->nmaps, PROC_MAPS_PER_PROCESS);
	cr_assert(s->capped);
	cr_assert_not_null(proc_snapshot__find(s, 0x7f0000001800ull));
	proc_table__stats(t, &st);
	cr_assert_eq(st.maps_dropped_process, MANY_MAPS - PROC_MAPS_PER_PROCESS);
	cr_assert_eq(st.maps_dropped_table, 0);
	cr_assert_eq(st.mappings, PROC_MAPS_PER_PROCESS);
	cr_assert_eq(st.binaries, 1);           /* one file, mapped 4096 times */
	/* Re-reads cost nothing: skipped and counted. */
	cr_assert_eq(proc_table__refresh(t, s), -E2BIG);
	cr_assert_eq(proc_table__refresh(t, s), -E2BIG);
	proc_table__stats(t, &st);
	cr_assert_eq(st.refreshes_skipped, 2);
	cr_assert_eq(st.refreshes, 0);
	ev = event(KILN_EVENT_EXIT, 5000, 9);
	proc_table__on_event(t, &ev);
	proc_table__drained(t);
	proc_table__drained(t);
	proc_table__stats(t, &st);
	cr_assert_eq(st.mappings, 0);
	proc_table__free(t);
}

Test(proc_table, mappings_of_all_processes_are_bounded, .init = fake_many, .fini = remove_proc)
{
	/* Room for pid 4242's 4 mappings and 4094 more. */
	struct proc_table *t = proc_table__new(root, 16, PROC_MAPS_PER_PROCESS + 2);
	struct kiln_event a = event(KILN_EVENT_NEW, 4242, 7), b = event(KILN_EVENT_NEW, 5000, 9);
	struct proc_stats st;

	proc_table__on_event(t, &a);
	proc_table__on_event(t, &b);
	cr_assert_eq(proc_table__get(t, 7)->nmaps, 4);
	cr_assert_eq(proc_table__get(t, 9)->nmaps, PROC_MAPS_PER_PROCESS - 2);
	proc_table__stats(t, &st);
	cr_assert_eq(st.mappings, PROC_MAPS_PER_PROCESS + 2);
	cr_assert_eq(st.maps_dropped_process, MANY_MAPS - PROC_MAPS_PER_PROCESS);
	cr_assert_eq(st.maps_dropped_table, 2);
	cr_assert(!proc_table__get(t, 7)->capped);
	cr_assert(proc_table__get(t, 9)->capped);
	proc_table__free(t);
}

Test(parse, values_and_bounds)
{
	uint64_t v;
	double d;

	cr_assert_eq(parse_u64("97", 1, 1000, &v), 0);
	cr_assert_eq(v, 97);
	cr_assert_eq(parse_u64("0", 1, 1000, &v), -ERANGE);
	cr_assert_eq(parse_u64("12x", 1, 1000, &v), -EINVAL);
	cr_assert_eq(parse_u64("-1", 1, 1000, &v), -EINVAL);
	cr_assert_eq(parse_size("64M", 1, 1ull << 40, &v), 0);
	cr_assert_eq(v, 64ull << 20);
	cr_assert_eq(parse_size("2GiB", 1, 1ull << 40, &v), 0);
	cr_assert_eq(v, 2ull << 30);
	cr_assert_eq(parse_size("5T", 1, 1ull << 40, &v), -EINVAL);
	cr_assert_eq(parse_size("99999999999999999999", 1, 1ull << 40, &v), -ERANGE);
	cr_assert_eq(parse_seconds("0.5", 0.001, 10, &d), 0);
	cr_assert_float_eq(d, 0.5, 1e-9);
	cr_assert_eq(parse_seconds("nan", 0.001, 10, &d), -EINVAL);
	cr_assert_eq(parse_seconds("10m", 0.001, 1000, &d), -EINVAL);
	cr_assert_eq(parse_duration("10m", 0, 604800, &d), 0);
	cr_assert_float_eq(d, 600, 1e-9);
	cr_assert_eq(parse_duration("1.5h", 0, 604800, &d), 0);
	cr_assert_float_eq(d, 5400, 1e-9);
	cr_assert_eq(parse_duration("90s", 0, 604800, &d), 0);
	cr_assert_float_eq(d, 90, 1e-9);
	cr_assert_eq(parse_duration("0", 0, 604800, &d), 0);
	cr_assert_float_eq(d, 0, 1e-9);
	cr_assert_eq(parse_duration("169h", 0, 604800, &d), -ERANGE);
	cr_assert_eq(parse_duration("10ms", 0, 604800, &d), -EINVAL);
	cr_assert_eq(parse_duration("m", 0, 604800, &d), -EINVAL);
	cr_assert_eq(parse_duration("-1m", 0, 604800, &d), -EINVAL);
}

/* A file mapped in two roots is two binaries, each with its root's debug
 * files: a container cannot plant a debug file that names or unwinds the
 * frames of another root's processes. Processes of one root share one. */
Test(proc_table, a_binary_per_root, .init = fake_proc, .fini = remove_proc)
{
	static const char *const pids[] = { "500", "501", "502" };
	char dir[128], link[160];
	struct proc_table *t;
	struct proc_snapshot *a, *b, *c;

	for (size_t i = 0; i < 3; i++) {
		fake_process(pids[i], "1 (app) R 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 888 1 1\n");
		/* 500 and 501 share one root, 502 has its own */
		snprintf(dir, sizeof(dir), "%s/rootfs-%s", root, i == 2 ? "b" : "a");
		mkdir(dir, 0755);
		snprintf(link, sizeof(link), "%s/%s/root", root, pids[i]);
		cr_assert_eq(symlink(dir, link), 0);
	}
	t = proc_table__new(root, 16, 1 << 16);
	a = take(t, 500, 1);
	b = take(t, 501, 2);
	c = take(t, 502, 3);
	cr_assert_not_null(a->maps[0].bin);
	cr_assert_eq(a->maps[0].bin, b->maps[0].bin, "one root: one binary");
	cr_assert_neq(a->maps[0].bin, c->maps[0].bin, "two roots: two binaries");
	cr_assert_str_neq(a->maps[0].bin->key, c->maps[0].bin->key);
	cr_assert_not_null(strstr(c->maps[0].bin->key, ":r"));
	proc_table__free(t);
}

/* Both readers of the live /proc/self/maps: the text, and PROCMAP_QUERY
 * (Linux 6.11), which the table uses where the kernel has it. */
static int maps_both(size_t max, struct proc_mapping **tm, uint64_t **td, uint64_t **ti,
		     size_t *tdrop, struct proc_mapping **qm, uint64_t **qd, uint64_t **qi,
		     size_t *qdrop)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), nq, nt;
	char text[1 << 16];
	ssize_t len = 0, r;

	cr_assert_geq(fd, 0);
	nq = proc_maps__query(fd, max, qm, qd, qi, qdrop);
	while ((r = pread(fd, text + len, sizeof(text) - 1 - (size_t)len, len)) > 0)
		len += r;
	close(fd);
	if (nq == -ENOTTY)
		cr_skip("no PROCMAP_QUERY on this kernel (Linux 6.11)");
	nt = proc_maps__parse_max(text, (size_t)len, max, tm, td, ti, tdrop);
	/* x86-64's legacy [vsyscall] page is outside the process's own
	 * mappings, where the query looks: only the text lists it (last) */
	if (nt > 0 && !strcmp((*tm)[nt - 1].name, "[vsyscall]"))
		free((*tm)[--nt].name);
	if (*tdrop && strstr(text, "[vsyscall]"))
		--*tdrop;
	cr_assert_eq(nq, nt, "query %d mappings, text %d", nq, nt);
	return nt;
}

Test(proc_maps, query_reads_what_the_text_says)
{
	/* an anonymous executable mapping, and one of a deleted file */
	char path[] = "/tmp/kiln-test-maps-XXXXXX";
	int fd = mkstemp(path);
	void *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *del;
	struct proc_mapping *tm, *qm;
	uint64_t *td, *ti, *qd, *qi;
	size_t tdrop, qdrop;
	int n;
	bool saw_deleted = false, saw_anon = false;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 8192), 0);
	del = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 4096 * 0);
	cr_assert(anon != MAP_FAILED && del != MAP_FAILED);
	unlink(path);
	close(fd);

	n = maps_both(PROC_MAPS_PER_PROCESS, &tm, &td, &ti, &tdrop, &qm, &qd, &qi, &qdrop);
	cr_assert_geq(n, 3, "this process maps itself, libc and ld.so");
	cr_assert_eq(qdrop, tdrop);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(qm[i].start, tm[i].start, "mapping %d", i);
		cr_assert_eq(qm[i].end, tm[i].end);
		cr_assert_eq(qm[i].pgoff, tm[i].pgoff);
		cr_assert_eq(qd[i], td[i]);
		cr_assert_eq(qi[i], ti[i]);
		cr_assert_str_eq(qm[i].name, tm[i].name);
		saw_deleted |= qm[i].start == (uintptr_t)del && strstr(qm[i].name, "(deleted)");
		saw_anon |= qm[i].start == (uintptr_t)anon && !strcmp(qm[i].name, "[anon]");
	}
	cr_assert(saw_deleted && saw_anon);
	proc_mappings__free(tm, (size_t)n);
	proc_mappings__free(qm, (size_t)n);
	free(td), free(ti), free(qd), free(qi);

	/* the cap: the rest counted, the same way */
	n = maps_both(2, &tm, &td, &ti, &tdrop, &qm, &qd, &qi, &qdrop);
	cr_assert_eq(n, 2);
	cr_assert_geq(tdrop, 1);
	cr_assert_eq(qdrop, tdrop);
	proc_mappings__free(tm, 2);
	proc_mappings__free(qm, 2);
	free(td), free(ti), free(qd), free(qi);
	munmap(anon, 4096);
	munmap(del, 8192);
}

Test(proc_maps, query_of_a_file_that_is_not_proc_says_enotty)
{
	char path[] = "/tmp/kiln-test-maps-XXXXXX";
	int fd = mkstemp(path);
	struct proc_mapping *m = NULL;

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(proc_maps__query(fd, 8, &m, NULL, NULL, NULL), -ENOTTY);
	cr_assert_null(m);
	close(fd);
}

/* A path longer than PATH_MAX fails the whole query; the table then reads
 * that process's text, where the name is cut. */
#define DEEP 17                 /* 17 directories of 255 bytes > PATH_MAX */

Test(proc_maps, query_of_a_name_past_path_max_fails_cleanly)
{
	char base[64], comp[256];
	int dirs[DEEP + 1], fd, mfd, n;
	struct proc_mapping *m = NULL;
	void *p;

	memset(comp, 'd', sizeof(comp) - 1);
	comp[sizeof(comp) - 1] = '\0';
	temp_dir(base, sizeof(base), "deep");
	dirs[0] = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < DEEP; i++) {
		cr_assert_eq(mkdirat(dirs[i], comp, 0700), 0);
		dirs[i + 1] = openat(dirs[i], comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(dirs[i + 1], 0);
	}
	fd = openat(dirs[DEEP], "lib.so", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	cr_assert(p != MAP_FAILED);
	mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	n = proc_maps__query(mfd, PROC_MAPS_PER_PROCESS, &m, NULL, NULL, NULL);
	close(mfd);
	munmap(p, 4096);
	close(fd);
	unlinkat(dirs[DEEP], "lib.so", 0);
	for (int i = DEEP; i > 0; i--) {
		close(dirs[i]);
		unlinkat(dirs[i - 1], comp, AT_REMOVEDIR);
	}
	close(dirs[0]);
	rmdir(base);
	if (n == -ENOTTY)
		cr_skip("no PROCMAP_QUERY on this kernel (Linux 6.11)");
	cr_assert_eq(n, -ENAMETOOLONG, "got %d", n);
	cr_assert_null(m);
}
