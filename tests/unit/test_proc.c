// SPDX-License-Identifier: BSD-2-Clause
/* Process table on a fake /proc tree, maps parsing, the u64 map and flag
 * value parsing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static void fake_proc(void)
{
	strcpy(root, "/tmp/kiln-proc.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	write_file("4242", "maps", maps_text);
	write_file("4242", "comm", "app-main\n");
	write_file("4242", "cgroup", "0::/system.slice/app.service\n");
	write_file("4242", "stat",
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

Test(proc_table, snapshot_survives_exit_until_drained, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16);
	struct kiln_event ev = event(KILN_EVENT_NEW, 4242, 7);
	struct proc_snapshot *s;
	struct proc_stats st;

	proc_table__on_event(t, &ev);
	s = proc_table__get(t, 7);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->comm, "app-main");     /* process name, not thread */
	cr_assert_eq(s->starttime, 777);          /* parsed past "(odd) name)" */
	cr_assert_str_eq(s->cgroup, "0::/system.slice/app.service\n");
	cr_assert_eq(s->nmaps, 4);
	cr_assert_str_eq(proc_snapshot__find(s, 0x55d0c0a01234)->name, "/usr/bin/app");
	cr_assert_null(proc_snapshot__find(s, 0x55d0c0a00fff));
	/* The files do not exist here: no descriptor, but a cache key. */
	cr_assert_eq(s->maps[0].bin->fd, -1);
	cr_assert_str_eq(s->maps[0].bin->key, "i:2049:1234");
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
	struct proc_table *t = proc_table__new(root, 16);
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

Test(proc_table, vanished_process_and_full_table, .init = fake_proc, .fini = remove_proc)
{
	struct proc_table *t = proc_table__new(root, 16);
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
