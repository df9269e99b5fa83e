// SPDX-License-Identifier: BSD-2-Clause
/* Label sets as text (how a profile keeps a stack's labels), label
 * selectors, and sample labels through pprof and back, selected by
 * --match. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/labels.h"
#include "profile.pb-c.h"
#include "profile/label_match.h"
#include "profile/profile.h"
#include "unit_helpers.h"

static void set_of(struct labels *l, const char *const *names, const char *const *values,
		   size_t n)
{
	cr_assert_eq(labels__set_pairs(l, names, values, n), 0);
}

Test(labels, pairs_sort_and_text_round_trip)
{
	const char *names[] = { "pod", "namespace", "pod", "container" };
	const char *values[] = { "web-1", "shop", "ignored", "app\x1fx" };
	struct labels l = { 0 }, back = { 0 };
	char text[256];

	set_of(&l, names, values, 4);
	cr_assert_eq(l.n, 3, "the second pod is dropped");
	cr_assert_str_eq(labels__get(&l, "pod"), "web-1");
	cr_assert_gt(labels__to_text(&l, text, sizeof(text)), 0);
	cr_assert_str_eq(text, "container\x1f" "app?x\x1f" "namespace\x1fshop\x1fpod\x1fweb-1\x1f");
	cr_assert_eq(labels__from_text(&back, text), 0);
	cr_assert_eq(back.n, 3);
	cr_assert_str_eq(labels__get(&back, "namespace"), "shop");
	cr_assert_eq(labels__to_text(&l, text, 8), -ENOSPC);
	/* not the canonical form: refused */
	cr_assert_eq(labels__from_text(&back, "pod\x1f" "a\x1f" "ns\x1f"), -EINVAL);
	cr_assert_eq(labels__from_text(&back, "b\x1f" "1\x1f" "a\x1f" "2\x1f"), -EINVAL);
	cr_assert_eq(labels__from_text(&back, "a\x1f" "1"), -EINVAL);
	cr_assert_eq(labels__from_text(&back, ""), 0);
	cr_assert_eq(back.n, 0);
	labels__release(&l);
	labels__release(&back);
}

Test(labels, selectors)
{
	const char *names[] = { "namespace", "pod" };
	const char *values[] = { "shop", "web-1" };
	struct label_match *m = NULL;
	struct labels l = { 0 }, none = { 0 };
	char why[160];

	set_of(&l, names, values, 2);
	cr_assert(label_match__test(NULL, &l));
	cr_assert_eq(label_match__add(&m, "namespace=shop", why, sizeof(why)), 0);
	cr_assert_eq(label_match__add(&m, "pod=~web-[0-9]+", why, sizeof(why)), 0);
	cr_assert(label_match__test(m, &l));
	cr_assert_not(label_match__test(m, &none));
	cr_assert_eq(label_match__add(&m, "container!=db", why, sizeof(why)), 0);
	cr_assert(label_match__test(m, &l), "a missing label is empty, so != db");
	cr_assert_eq(label_match__add(&m, "pod!~web", why, sizeof(why)), 0);
	cr_assert(label_match__test(m, &l), "the regex matches the whole value");
	cr_assert_eq(label_match__add(&m, "pod!~web.*", why, sizeof(why)), 0);
	cr_assert_not(label_match__test(m, &l));
	cr_assert_eq(label_match__add(&m, "pod", why, sizeof(why)), -EINVAL);
	cr_assert_not_null(strstr(why, "KEY=VALUE"), "%s", why);
	cr_assert_eq(label_match__add(&m, "=x", why, sizeof(why)), -EINVAL);
	cr_assert_eq(label_match__add(&m, "pod=~(", why, sizeof(why)), -EINVAL);
	cr_assert_not_null(strstr(why, "regular expression"), "%s", why);
	label_match__free(m);
	labels__release(&l);
}

/* Two label sets' stacks in one profile (as record keeps them), and a
 * file's labels for every sample (as the agent writes them). */
/* Adds count samples of the stack f[1..n) under the labels names=values
 * (f[0] becomes their FRAME_LABELS frame). */
static void add_labeled(struct profile *p, const char *const *names, const char *const *values,
			struct frame *f, size_t n, uint64_t count)
{
	struct labels l = { 0 };
	char text[256];

	set_of(&l, names, values, 2);
	cr_assert_gt(labels__to_text(&l, text, sizeof(text)), 0);
	f[0] = (struct frame){ .kind = FRAME_LABELS, .name = text };
	cr_assert_eq(profile__add(p, f, n, count), 0);
	labels__release(&l);
}

Test(labels, sample_labels_through_pprof_and_match)
{
	const char *names[] = { "namespace", "pod" };
	const char *a[] = { "shop", "a" }, *b[] = { "shop", "b" };
	struct labels tag = { 0 };
	struct frame f[] = {
		{ .kind = FRAME_LABELS }, { .kind = FRAME_ROOT, .name = "app" },
		{ .kind = FRAME_USER, .name = "main", .addr = 0x401000 },
		{ .kind = FRAME_USER, .name = "work", .addr = 0x401100 },
	};
	struct pprof_meta meta = { .period_ns = 10000000 };
	struct profile *p = profile__new(), *back = profile__new(), *only_a = profile__new();
	struct read_limits lim = test_limits;
	struct label_match *m = NULL;
	struct read_info info;
	Perftools__Profiles__Profile *pb;
	uint8_t *out;
	size_t len;
	char *text, why[160];

	add_labeled(p, names, a, f, 4, 3);
	add_labeled(p, names, b, f, 4, 1);
	text = folded_text(p);
	cr_assert_str_eq(text, "app;main;work 4\n", "labels are no frame of a folded stack");
	free(text);

	cr_assert_eq(pprof__encode(p, &meta, false, &out, &len), 0);
	pb = perftools__profiles__profile__unpack(NULL, len, out);
	cr_assert_not_null(pb);
	cr_assert_eq(pb->n_sample, 2);
	cr_assert_eq(pb->n_location, 3, "no location for the labels");
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];

		cr_assert_eq(s->n_location_id, 3);
		cr_assert_eq(s->n_label, 2);
		cr_assert_str_eq(pb->string_table[s->label[0]->key], "namespace");
		cr_assert_str_eq(pb->string_table[s->label[1]->key], "pod");
		cr_assert_str_eq(pb->string_table[s->label[1]->str], s->value[0] == 3 ? "a" : "b");
	}
	perftools__profiles__profile__free_unpacked(pb, NULL);

	/* read back whole: the same profile; with --match pod=a: a's only */
	cr_assert_eq(profile__read(back, out, len, &lim, &info), 0, "%s", info.why);
	cr_assert_eq(profile__total(back), 4);
	cr_assert_eq(label_match__add(&m, "pod=a", why, sizeof(why)), 0);
	lim.match = m;
	cr_assert_eq(profile__read(only_a, out, len, &lim, &info), 0, "%s", info.why);
	cr_assert_eq(profile__total(only_a), 3);
	cr_assert_eq(info.unmatched, 1);
	free(out);

	/* a file of one label set: every sample gets meta.labels */
	{
		const char *tn[] = { "service_name" }, *tv[] = { "web" };

		set_of(&tag, tn, tv, 1);
		meta.labels = &tag;
		cr_assert_eq(pprof__encode(back, &meta, false, &out, &len), 0);
		pb = perftools__profiles__profile__unpack(NULL, len, out);
		cr_assert_not_null(pb);
		for (size_t i = 0; i < pb->n_sample; i++)
			cr_assert_eq(pb->sample[i]->n_label, 3);
		perftools__profiles__profile__free_unpacked(pb, NULL);
		free(out);
	}
	label_match__free(m);
	labels__release(&tag);
	profile__free(p);
	profile__free(back);
	profile__free(only_a);
}

/* Folded text of p with its labels, as --folded-labels writes it. */
static char *labeled_text(const struct profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cr_assert_eq(folded__write(p, true, f), 0);
	fclose(f);
	return text;
}

Test(labels, folded_prefix_escapes_and_reads_back)
{
	const char *names[] = { "namespace", "pod" };
	const char *odd[] = { "shop", "w;e,b=a{}\\\n" }, *plain[] = { "shop", "web-b" };
	char why[160];
	struct frame f[] = {
		{ .kind = FRAME_LABELS }, { .kind = FRAME_ROOT, .name = "app" },
		{ .kind = FRAME_USER, .name = "main", .addr = 0x401000 },
	};
	struct profile *p = profile__new(), *back = profile__new(), *only = profile__new();
	struct read_limits lim = test_limits;
	struct label_match *m = NULL;
	struct read_info info;
	char *text, *again;

	add_labeled(p, names, odd, f, 3, 3);
	add_labeled(p, names, plain, f, 3, 1);
	cr_assert_eq(profile__add(p, f + 1, 2, 2), 0);  /* no labels: no prefix */
	text = labeled_text(p);
	cr_assert_str_eq(text,
			 "app;main 2\n"
			 "{namespace=shop,pod=w\\x3be\\x2cb\\x3da\\x7b\\x7d\\x5c\\x0a};app;main 3\n"
			 "{namespace=shop,pod=web-b};app;main 1\n");
	again = folded_text(p);
	cr_assert_str_eq(again, "app;main 6\n", "off by default: FlameGraph's format");
	free(again);

	/* read back: the same labels, so the same text, and --match selects */
	read_text(back, text);
	again = labeled_text(back);
	cr_assert_str_eq(again, text);
	free(again);
	cr_assert_eq(label_match__add(&m, "pod=web-b", why, sizeof(why)), 0);
	lim.match = m;
	cr_assert_eq(profile__read(only, (const uint8_t *)text, strlen(text), &lim, &info), 0,
		     "%s", info.why);
	cr_assert_eq(profile__total(only), 1);
	cr_assert_eq(info.unmatched, 5);
	free(text);
	label_match__free(m);
	profile__free(p);
	profile__free(back);
	profile__free(only);
}

Test(labels, folded_prefix_that_is_no_label_set_is_a_frame)
{
	/* not "{name=value,...}", a bad or NUL escape, or the only frame:
	 * an ordinary frame; "{}" is no labels; nameless labels are skipped */
	struct profile *p = profile_of("{bad};app 1\n{a=\\q};app 2\n{a=\\x00};app 3\n{a=\\x4};app 4\n"
				       "{pod=a} 5\n{};app;x 6\n{=x,pod=b};app;y 7\n{pod=};app;z 8\n");
	char *text = labeled_text(p);

	cr_assert_str_eq(text,
			 "app;x 6\n"
			 "{a=\\q};app 2\n"
			 "{a=\\x00};app 3\n"
			 "{a=\\x4};app 4\n"
			 "{bad};app 1\n"
			 "{pod=a} 5\n"
			 "{pod=b};app;y 7\n"
			 "{pod=};app;z 8\n");
	free(text);
	profile__free(p);
}
