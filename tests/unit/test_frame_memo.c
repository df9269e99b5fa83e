// SPDX-License-Identifier: BSD-2-Clause
/* The drain's memo of named user frames (symbolize/frame_memo.h): runs kept
 * whole with their strings, found only under their own key, ids unique,
 * its bounds counted; and through the pipeline on this test's own process
 * (its real mappings and symbols), a stack whose frames come from the memo
 * is named exactly as one named without it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "pipeline.h"
#include "proc/proc.h"
#include "profile/profile.h"
#include "profile/profile_set.h"
#include "symbolize/frame_memo.h"
#include "symbolize/symbolizer.h"

static struct frame_memo *memo;
static const int snap_a = 1, snap_b = 2;        /* two snapshots' addresses */

static void setup(void)
{
	memo = frame_memo__new();
	cr_assert_not_null(memo);
}

static void teardown(void)
{
	frame_memo__free(memo);
}

TestSuite(frame_memo, .init = setup, .fini = teardown);

static struct frame_memo_key key(const void *snap, uint32_t instance, uint64_t ip, bool innermost)
{
	return (struct frame_memo_key){ .snap = snap, .instance = instance,
					.innermost = innermost, .ip = ip };
}

/* A frame of /usr/bin/app named name (in a buffer the test overwrites). */
static struct frame app_frame(char *name_buf, const char *name, uint64_t ip)
{
	strcpy(name_buf, name);
	return (struct frame){ .kind = FRAME_USER, .name = name_buf, .addr = ip,
			       .map_file = "/usr/bin/app", .map_build_id = "b1",
			       .map_start = 0x400000, .map_limit = 0x500000 };
}

static bool put(const struct frame_memo_key *k, struct frame *f, uint32_t n,
		struct frame_memo_run *run)
{
	*run = (struct frame_memo_run){ .frames = f, .n = n, .resolved = true };
	return frame_memo__put(memo, k, run);
}

Test(frame_memo, a_run_is_kept_whole_under_its_key_only)
{
	char name[2][32], file[] = "lex.go";
	struct frame f[2] = { app_frame(name[0], "parse", 0x401000),
			      app_frame(name[1], "lex", 0x401000) };
	struct frame_memo_key k = key(&snap_a, 7, 0x401000, false), other;
	struct frame_memo_run run, found;

	f[1].inlined = true;
	f[1].file = file;
	f[1].line = 12;
	cr_assert(put(&k, f, 2, &run));
	cr_assert_neq(run.frames, f);
	/* the caller's strings may go: the memo has its own */
	strcpy(name[0], "XXXXX");
	strcpy(name[1], "YYY");
	strcpy(file, "zz");
	cr_assert(frame_memo__find(memo, &k, &found));
	cr_assert_eq(found.frames, run.frames);
	cr_assert_eq(found.n, 2);
	cr_assert(found.resolved);
	cr_assert_not(found.source);
	cr_assert_str_eq(found.frames[0].name, "parse");
	cr_assert_str_eq(found.frames[1].name, "lex");
	cr_assert_str_eq(found.frames[1].file, "lex.go");
	cr_assert_eq(found.frames[1].line, 12);
	cr_assert(found.frames[1].inlined);
	cr_assert_str_eq(found.frames[0].map_file, "/usr/bin/app");
	cr_assert_eq(found.frames[0].map_file, found.frames[1].map_file);
	cr_assert_neq(found.frames[0].id, 0);
	cr_assert_neq(found.frames[0].id, found.frames[1].id);
	/* another snapshot, instance, address or position: not it */
	other = key(&snap_b, 7, 0x401000, false);
	cr_assert_not(frame_memo__find(memo, &other, &found));
	other = key(&snap_a, 8, 0x401000, false);
	cr_assert_not(frame_memo__find(memo, &other, &found));
	other = key(&snap_a, 7, 0x401001, false);
	cr_assert_not(frame_memo__find(memo, &other, &found));
	other = key(&snap_a, 7, 0x401000, true);
	cr_assert_not(frame_memo__find(memo, &other, &found));
}

Test(frame_memo, forget_keeps_what_was_handed_out_clear_takes_it_back)
{
	char name[32];
	struct frame f = app_frame(name, "main", 0x402000);
	struct frame_memo_key k = key(&snap_a, 1, 0x402000, true);
	struct frame_memo_run first, again, found;
	uint64_t id;

	cr_assert(put(&k, &f, 1, &first));
	id = first.frames[0].id;
	frame_memo__forget(memo);
	cr_assert_not(frame_memo__find(memo, &k, &found));
	strcpy(name, "other");
	cr_assert(put(&k, &f, 1, &again));
	/* the run handed out before is intact, and no id repeats */
	cr_assert_str_eq(first.frames[0].name, "main");
	cr_assert_str_eq(again.frames[0].name, "other");
	cr_assert_neq(again.frames[0].id, id);
	frame_memo__clear(memo);
	cr_assert_not(frame_memo__find(memo, &k, &found));
	cr_assert(put(&k, &f, 1, &again));
	cr_assert_neq(again.frames[0].id, id);
	cr_assert_eq(frame_memo__full(memo), 0);
}

Test(frame_memo, full_memo_refuses_and_counts_and_keeps_the_rest)
{
	char name[32];
	struct frame f = app_frame(name, "f", 0);
	struct frame_memo_run run, found;
	struct frame_memo_key k;

	for (uint32_t i = 0; i < FRAME_MEMO_RUNS; i++) {
		k = key(&snap_a, 1, 0x400000 + i, false);
		cr_assert(put(&k, &f, 1, &run), "run %u", i);
	}
	k = key(&snap_a, 1, 0x300000, false);
	cr_assert_not(put(&k, &f, 1, &run));
	cr_assert_eq(run.frames, &f);
	cr_assert_eq(frame_memo__full(memo), 1);
	cr_assert_not(frame_memo__find(memo, &k, &found));
	for (uint32_t i = 0; i < FRAME_MEMO_RUNS; i += 997) {
		k = key(&snap_a, 1, 0x400000 + i, false);
		cr_assert(frame_memo__find(memo, &k, &found));
	}
	frame_memo__clear(memo);
	cr_assert(put(&k, &f, 1, &run));
}

/* Names too long for the text left: refused whole, and the paths shared
 * before stay right (none points into the text given back). */
Test(frame_memo, text_bound_refuses_a_run_whole)
{
	size_t big = 64 << 10;
	char *name = malloc(big + 1), path[] = "/usr/lib/libbig.so";
	struct frame f = { .kind = FRAME_USER, .name = name, .map_file = path };
	struct frame_memo_run run, found;
	struct frame_memo_key k;
	uint32_t kept = 0;

	cr_assert_not_null(name);
	memset(name, 'n', big);
	name[big] = '\0';
	for (uint32_t i = 0; i < 64; i++) {
		k = key(&snap_a, 1, 0x1000 + i, false);
		kept += put(&k, &f, 1, &run);
	}
	/* (the path's one copy, then each run's name) */
	cr_assert_eq(kept, (FRAME_MEMO_TEXT - sizeof(path)) / (big + 1));
	cr_assert_gt(frame_memo__full(memo), 0);
	name[3] = '\0';
	k = key(&snap_a, 1, 0x9000, false);
	cr_assert(put(&k, &f, 1, &run));
	cr_assert(frame_memo__find(memo, &k, &found));
	cr_assert_str_eq(found.frames[0].name, "nnn");
	cr_assert_str_eq(found.frames[0].map_file, path);
	k = key(&snap_a, 1, 0x1000, false);
	cr_assert(frame_memo__find(memo, &k, &found));
	cr_assert_eq(strlen(found.frames[0].name), big);
	cr_assert_str_eq(found.frames[0].map_file, path);
	free(name);
}

/* This process's own functions, as return addresses. */
__attribute__((noinline)) static int leaf_one(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int leaf_two(int x)
{
	return x * 5 + 2;
}

__attribute__((noinline)) static int caller(int x)
{
	return leaf_one(x) + leaf_two(x);
}

static uint64_t in(const void *fn)
{
	return (uint64_t)(uintptr_t)fn + 2;
}

/* The folded text of the pipeline's profiles (one label set here). */
static char *drain_text(struct pipeline *p)
{
	struct profile_set *set = pipeline__take(p);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(set);
	for (size_t i = 0; i < profile_set__count(set); i++)
		folded__write(profile_set__entry(set, i)->profile, false, f);
	fclose(f);
	profile_set__free(set);
	return text;
}

static void add(struct pipeline *p, uint64_t *ips, uint32_t n, uint64_t count)
{
	struct kiln_sample_key k = { .pid = (uint32_t)getpid(), .instance = (uint32_t)getpid() };
	struct drained_sample d = { .key = &k, .count = count, .uips = ips, .un = n };

	memcpy(k.comm, "unit", 5);
	pipeline__add_sample(p, &d);
}

Test(frame_memo, frames_from_the_memo_are_named_as_without_it)
{
	struct pipeline_opts o = { .metadata = { .node_name = "unit", .kube_disabled = true },
				   .max_processes = 8, .max_mappings = 1024,
				   .cache_bytes = 64u << 20, .max_label_sets = 4 };
	struct pipeline *p = pipeline__new(&o, "/proc");
	struct kiln_event ev = { .type = KILN_EVENT_NEW, .pid = (uint32_t)getpid(),
				 .instance = (uint32_t)getpid() };
	uint64_t one[] = { in(leaf_one), in(caller), in(caller) + 1 };
	uint64_t two[] = { in(leaf_two), in(caller), in(caller) + 1 };
	struct symbolizer_stats before, after;
	char *alone, *shared;

	cr_assert_not_null(p);
	proc_table__on_event(pipeline__procs(p), &ev);
	/* a drain with one stack: every frame named by a lookup */
	symbolizer__age(pipeline__symbolizer(p), monotonic_ns());
	add(p, one, 3, 2);
	alone = drain_text(p);
	cr_assert(strstr(alone, "caller;leaf_one 2"), "%s", alone);
	/* a drain where its callers come from the memo, its leaf named anew */
	symbolizer__age(pipeline__symbolizer(p), monotonic_ns());
	add(p, two, 3, 1);
	symbolizer__stats(pipeline__symbolizer(p), &before);
	add(p, one, 3, 2);
	symbolizer__stats(pipeline__symbolizer(p), &after);
	shared = drain_text(p);
	cr_assert_geq(after.frame_memo_hits - before.frame_memo_hits, 2);
	cr_assert_eq(after.user_frames - before.user_frames, 3 * 2);
	cr_assert_eq(after.user_resolved - before.user_resolved, 3 * 2);
	cr_assert(strstr(shared, alone), "alone:\n%s\nshared:\n%s", alone, shared);
	cr_assert(strstr(shared, "caller;leaf_two 1"), "%s", shared);
	free(alone);
	free(shared);
	pipeline__free(p);
}
