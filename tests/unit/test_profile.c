// SPDX-License-Identifier: BSD-2-Clause
/* The profile builder: interning and the stack tree, checked through the
 * internals (profile_priv.h) and through folded output; plus one big run. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "profile/profile.h"
#include "profile/profile_set.h"
#include "unit_helpers.h"
#include "profile/profile_priv.h"

#define APP_START 0x400000ULL

static struct frame pr_root(const char *comm)
{
	return (struct frame){ .kind = FRAME_ROOT, .name = comm };
}

/* A frame of /usr/bin/app (build id "b1") at addr. */
static struct frame pr_user(const char *name, uint64_t addr)
{
	return (struct frame){
		.kind = FRAME_USER, .name = name, .addr = addr,
		.map_file = "/usr/bin/app", .map_build_id = "b1",
		.map_start = APP_START, .map_limit = APP_START + 0x100000,
	};
}

static struct profile *pr_new(void)
{
	struct profile *p = profile__new();

	cr_assert_not_null(p);
	return p;
}

static void pr_add(struct profile *p, const struct frame *f, size_t n,
		   uint64_t count)
{
	cr_assert_eq(profile__add(p, f, n, count), 0);
}

Test(profile, shared_prefixes_share_nodes)
{
	struct profile *p = pr_new();
	struct frame ab[] = { pr_root("app"), pr_user("a", 0x401000),
			      pr_user("b", 0x402000) };
	struct frame ac[] = { pr_root("app"), pr_user("a", 0x401000),
			      pr_user("c", 0x403000) };
	char *text;

	pr_add(p, ab, 3, 1);
	pr_add(p, ac, 3, 2);
	pr_add(p, ab, 3, 4);
	/* root + app + a + b + c */
	cr_assert_eq(p->tree.len, 5);
	cr_assert_eq(p->nlocs, 4);
	cr_assert_eq(p->nmaps, 1);
	cr_assert_eq(profile__total(p), 7);
	text = folded_text(p);
	cr_assert_str_eq(text, "app;a;b 5\napp;a;c 2\n");
	free(text);
	profile__free(p);
}

Test(profile, prefix_stack_counts_at_inner_node)
{
	struct profile *p = pr_new();
	struct frame f[] = { pr_root("app"), pr_user("a", 0x401000),
			     pr_user("b", 0x402000) };
	char *text;

	pr_add(p, f, 3, 2);
	pr_add(p, f, 2, 3);
	cr_assert_eq(p->tree.len, 4);
	cr_assert_eq(profile__total(p), 5);
	text = folded_text(p);
	cr_assert_str_eq(text, "app;a 3\napp;a;b 2\n");
	free(text);
	profile__free(p);
}

Test(profile, addresses_split_locations_not_folded_lines)
{
	struct profile *p = pr_new();
	struct frame x[] = { pr_root("app"), pr_user("main", 0x401000),
			     pr_user("work", 0x401100) };
	struct frame y[] = { pr_root("app"), pr_user("main", 0x401000),
			     pr_user("work", 0x401180) };
	char *text;

	pr_add(p, x, 3, 2);
	pr_add(p, y, 3, 1);
	cr_assert_eq(p->nlocs, 4, "one location per (mapping, address)");
	cr_assert_eq(p->tree.len, 5);
	text = folded_text(p);
	cr_assert_str_eq(text, "app;main;work 3\n");
	free(text);
	profile__free(p);
}

Test(profile, root_frames_interned_by_name)
{
	struct profile *p = pr_new();
	struct frame a = pr_root("app"), b = pr_root("app"), c = pr_root("bash");

	b.addr = 0x1234;
	b.map_file = "/usr/bin/app";
	pr_add(p, &a, 1, 1);
	pr_add(p, &b, 1, 1);
	cr_assert_eq(p->nlocs, 1);
	cr_assert_eq(p->nmaps, 0, "root frames have no mapping");
	cr_assert_eq(p->locs[0].addr, 0);
	pr_add(p, &c, 1, 1);
	cr_assert_eq(p->nlocs, 2);
	cr_assert_eq(p->tree.len, 3);
	cr_assert_eq(profile__total(p), 3);
	profile__free(p);
}

Test(profile, mappings_interned_by_all_fields)
{
	struct profile *p = pr_new();
	struct frame f[] = { pr_root("app"), pr_user("a", 0x401000),
			     pr_user("b", 0x402000), pr_user("c", 0x403000),
			     pr_user("d", 0x404000) };

	f[3].map_build_id = "b2";
	f[4].map_file = NULL;
	pr_add(p, f, 5, 1);
	cr_assert_eq(p->nmaps, 2);
	cr_assert_eq(p->locs[1].mapping, p->locs[2].mapping);
	cr_assert_neq(p->locs[1].mapping, p->locs[3].mapping);
	cr_assert_eq(p->locs[4].mapping, 0, "no map_file, no mapping");
	cr_assert_str_eq(strtab__get(&p->strings, p->maps[1].build_id), "b2");
	profile__free(p);
}

/* A frame id (core/frame.h) names one location: a frame with an id seen
 * before is that location without its fields compared; one seen first
 * is interned by its fields, so it meets the same frame without an id. */
Test(profile, a_frame_id_is_one_location)
{
	struct profile *p = pr_new();
	char copy[] = "a";
	struct frame plain[] = { pr_root("app"), pr_user("a", 0x401000), pr_user("b", 0x402000) };
	struct frame with_id[] = { pr_root("app"), pr_user(copy, 0x401000), pr_user("c", 0x403000) };
	char *text;

	with_id[1].id = 77;
	with_id[2].id = 78;
	pr_add(p, plain, 3, 1);
	pr_add(p, with_id, 3, 2);
	cr_assert_eq(p->nlocs, 4, "the first sight of an id meets the same frame");
	/* id 77 again: its location, whatever the copy of its name says */
	strcpy(copy, "z");
	pr_add(p, with_id, 2, 4);
	cr_assert_eq(p->nlocs, 4);
	text = folded_text(p);
	cr_assert_str_eq(text, "app;a 4\napp;a;b 1\napp;a;c 2\n");
	free(text);
	profile__free(p);
}

Test(profile, strings_are_copied)
{
	struct profile *p = pr_new();
	char name[] = "before";
	struct frame f[] = { pr_root("app"), pr_user(name, 0x401000) };
	char *text;

	pr_add(p, f, 2, 1);
	strcpy(name, "after!");
	text = folded_text(p);
	cr_assert_str_eq(text, "app;before 1\n");
	free(text);
	profile__free(p);
}

Test(profile, bad_input_and_zero_count)
{
	struct profile *p = pr_new();
	struct frame f[] = { pr_root("app"), pr_user(NULL, 0x401000) };

	cr_assert_eq(profile__add(p, f, 0, 1), -EINVAL);
	cr_assert_eq(profile__add(p, f, 2, 1), -EINVAL);
	cr_assert_eq(profile__add(p, f, 1, 0), 0);
	cr_assert_eq(profile__total(p), 0);
	cr_assert_eq(p->tree.len, 1, "a zero count creates nothing");
	profile__free(p);
	profile__free(NULL);
}

Test(profile, bytes_track_growth)
{
	struct profile *p = pr_new();
	size_t empty = profile__bytes(p);
	char name[32];
	int i;

	cr_assert_gt(empty, sizeof(struct stack_node));
	for (i = 0; i < 5000; i++) {
		struct frame f[] = { pr_root("app"), pr_user(name, 0x401000 + i) };

		snprintf(name, sizeof(name), "fn_%d", i);
		pr_add(p, f, 2, 1);
	}
	cr_assert_geq(profile__bytes(p) - empty,
		      5000 * (sizeof(struct stack_node) + sizeof(struct location)));
	profile__free(p);
}

/* 100k distinct stacks of depth 12 sharing 100 middle frames: every count
 * lands, and both encoders handle the size. */
Test(profile, big_input)
{
	enum { N = 100000, MIDS = 100 };
	struct profile *p = pr_new();
	Perftools__Profiles__Profile *pb;
	struct pprof_meta meta = { .period_ns = 10000000 };
	uint64_t total = 0;
	char mid[32], leaf[32], *text, *s;
	size_t len, lines = 0;
	uint8_t *out;
	int i, d;

	for (i = 0; i < N; i++) {
		struct frame f[12] = { pr_root("app") };

		snprintf(mid, sizeof(mid), "mid_%d", i % MIDS);
		snprintf(leaf, sizeof(leaf), "leaf_%d", i);
		for (d = 1; d < 10; d++)
			f[d] = pr_user("outer", 0x401000 + d);
		f[10] = pr_user(mid, 0x402000 + i % MIDS);
		f[11] = pr_user(leaf, 0x410000 + i);
		pr_add(p, f, 12, 1 + i % 3);
		total += 1 + i % 3;
	}
	cr_assert_eq(profile__total(p), total);
	cr_assert_eq(p->nlocs, 1 + 9 + MIDS + N);
	cr_assert_eq(p->tree.len, 1 + 10 + MIDS + N);

	cr_assert_eq(pprof__encode(p, &meta, false, &out, &len), 0);
	pb = perftools__profiles__profile__unpack(NULL, len, out);
	cr_assert_not_null(pb);
	cr_assert_eq(pb->n_sample, N);
	cr_assert_eq(pb->n_location, p->nlocs);
	/* app, outer, the mids and the leaves */
	cr_assert_eq(pb->n_function, 2 + MIDS + N);
	cr_assert_eq(pb->sample[N - 1]->n_location_id, 12);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);

	text = folded_text(p);
	for (s = text; *s; s++)
		lines += *s == '\n';
	cr_assert_eq(lines, N);
	cr_assert_not_null(strstr(text, "\napp;outer;outer;outer;outer;outer;"
				  "outer;outer;outer;outer;mid_7;leaf_12307 2\n"));
	free(text);
	profile__free(p);
}

/* kiln record's one profile of several label sets, split into one
 * profile per set for the server: each stack under its label frame's
 * set, the label frame itself gone, stacks without one under no labels. */
Test(profile, split_by_label_frames)
{
	const char *na[] = { "branch", "service_name" }, *va[] = { "main", "app" };
	const char *vb[] = { "pr-7", "app" };
	struct labels a = { 0 }, b = { 0 }, none = { 0 };
	char ta[256], tb[256];
	struct profile *p = pr_new();
	struct profile_set *set = profile_set__new(8);
	struct profile_set_entry *e;
	int err;

	cr_assert_eq(labels__set_pairs(&a, na, va, 2), 0);
	cr_assert_eq(labels__set_pairs(&b, na, vb, 2), 0);
	cr_assert_gt(labels__to_text(&a, ta, sizeof(ta)), 0);
	cr_assert_gt(labels__to_text(&b, tb, sizeof(tb)), 0);
	struct frame sa[] = { { .kind = FRAME_LABELS, .name = ta }, pr_root("app"),
			      pr_user("main", APP_START + 0x10), pr_user("hot", APP_START + 0x20) };
	struct frame sb[] = { { .kind = FRAME_LABELS, .name = tb }, pr_root("app"),
			      pr_user("main", APP_START + 0x10), pr_user("cold", APP_START + 0x30) };
	pr_add(p, sa, 4, 30);
	pr_add(p, sa, 3, 5);    /* main itself, under a */
	pr_add(p, sb, 4, 7);
	pr_add(p, sb + 1, 3, 2);        /* no labels */
	cr_assert_not_null(set);
	cr_assert_eq(profile_set__split(set, p), 0);
	cr_assert_eq(profile_set__count(set), 3);
	e = profile_set__get(set, &a, &err);
	cr_assert_eq(profile__total(e->profile), 35);
	cr_assert_eq(e->samples, 35);
	cr_assert_eq(profile__stacks(e->profile), 2);
	e = profile_set__get(set, &b, &err);
	cr_assert_eq(profile__total(e->profile), 7);
	e = profile_set__get(set, &none, &err);
	cr_assert_eq(profile__total(e->profile), 2);
	/* no label frame is left: the split profiles' roots are the process */
	for (size_t i = 0; i < profile_set__count(set); i++) {
		const struct profile *q = profile_set__entry(set, i)->profile;

		for (uint32_t n = 1; n < q->tree.len; n++)
			cr_assert_neq(q->locs[q->tree.nodes[n].key].kind, FRAME_LABELS);
	}
	profile_set__free(set);
	profile__free(p);
	labels__release(&a);
	labels__release(&b);
}
