// SPDX-License-Identifier: BSD-2-Clause
/* Merging profiles, the function-keyed tree, the diff arithmetic and the
 * data the HTML page embeds. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "unit_helpers.h"

Test(merge, inputs_add_up_stack_by_stack)
{
	struct profile *p = profile_of("app;main;a 3\napp;main;b 1\n");
	char *out;

	read_text(p, "app;main;a 2\napp;other 5\n");
	out = folded_text(p);
	cr_assert_str_eq(out, "app;main;a 5\napp;main;b 1\napp;other 5\n");
	cr_assert_eq(profile__total(p), 11);
	free(out);
	profile__free(p);
}

Test(merge, pprof_and_folded_merge)
{
	struct pprof_meta meta = { .period_ns = 1000000 };
	struct profile *a = profile_of("app;main;work 4\n"), *m = profile__new();
	struct read_info info;
	uint8_t *buf;
	size_t len;
	char *out;

	cr_assert_eq(pprof__encode(a, &meta, true, &buf, &len), 0);
	cr_assert_eq(profile__read(m, buf, len, &test_limits, &info), 0, "%s", info.why);
	read_text(m, "app;main;work 1\napp;main 2\n");
	out = folded_text(m);
	cr_assert_str_eq(out, "app;main 2\napp;main;work 5\n");
	free(out);
	free(buf);
	profile__free(a);
	profile__free(m);
}

/* The change of function name, asserting there is one. */
static const struct func_change *change_of(const struct profile_diff *d,
					   const char *name)
{
	const struct func_change *ch;
	size_t n;

	ch = profile_diff__changes(d, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ch[i].name, name))
			return &ch[i];
	cr_assert_fail("no change for %s", name);
	return NULL;
}

#define cr_assert_near(a, b) cr_assert(fabs((a) - (b)) < 1e-9, "%.12f != %.12f", (double)(a), (double)(b))

Test(diff, shares_are_normalized_by_each_total)
{
	/* base 100 samples, new 400: hot goes from 50% to 75% */
	struct profile *base = profile_of("app;main;hot 50\napp;main;cold 50\n");
	struct profile *cur = profile_of("app;main;hot 300\napp;main;cold 100\n");
	struct profile_diff *d = profile_diff__new(base, cur);
	const struct func_change *c;
	size_t n;

	cr_assert_not_null(d);
	c = change_of(d, "hot");
	cr_assert_near(c->total_base, 50.0);
	cr_assert_near(c->total_new, 75.0);
	cr_assert_near(c->self_base, 50.0);
	cr_assert_near(c->self_new, 75.0);
	c = change_of(d, "cold");
	cr_assert_near(c->total_new - c->total_base, -25.0);
	c = change_of(d, "main");
	cr_assert_near(c->total_base, 100.0);
	cr_assert_near(c->total_new, 100.0);
	cr_assert_near(c->self_new, 0.0);
	/* largest change first; hot and cold tie at 25, so by name */
	c = profile_diff__changes(d, &n);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(c[0].name, "cold");
	cr_assert_str_eq(c[1].name, "hot");
	profile_diff__free(d);
	profile__free(base);
	profile__free(cur);
}

Test(diff, recursion_counts_once_and_functions_only_on_one_side)
{
	struct profile *base = profile_of("app;f;g;f;g 10\napp;old 10\n");
	struct profile *cur = profile_of("app;f;g;f 10\napp;new 30\n");
	struct profile_diff *d = profile_diff__new(base, cur);
	const struct func_change *c;

	cr_assert_not_null(d);
	c = change_of(d, "f");
	cr_assert_near(c->total_base, 50.0);    /* not 100: once per stack */
	cr_assert_near(c->total_new, 25.0);
	cr_assert_near(c->self_new, 25.0);
	c = change_of(d, "g");
	cr_assert_near(c->self_base, 50.0);
	cr_assert_near(c->self_new, 0.0);
	c = change_of(d, "old");
	cr_assert_near(c->total_new, 0.0);
	c = change_of(d, "new");
	cr_assert_near(c->total_base, 0.0);
	cr_assert_near(c->total_new, 75.0);
	profile_diff__free(d);
	profile__free(base);
	profile__free(cur);
}

Test(diff, same_name_in_other_modules_is_another_function)
{
	struct profile *base = profile_of("app;main 1\n");
	struct profile *cur = profile_of("app;main 1\napp;main_[k] 1\n");
	struct profile_diff *d = profile_diff__new(base, cur);
	size_t n;

	cr_assert_not_null(d);
	profile_diff__changes(d, &n);
	cr_assert_eq(n, 3);     /* app, main, main in the kernel */
	cr_assert_near(change_of(d, "main")->total_base, 100.0);
	profile_diff__free(d);
	profile__free(base);
	profile__free(cur);
}

Test(diff, regression_threshold_and_glob)
{
	const struct func_change c = { .name = "myapp_parse", .total_base = 10.0,
				       .total_new = 13.5 };

	cr_assert(func_change__regressed(&c, 3.0, NULL));
	cr_assert(func_change__regressed(&c, 3.0, "myapp_*"));
	cr_assert(!func_change__regressed(&c, 3.5, NULL));      /* not more than */
	cr_assert(!func_change__regressed(&c, 4.0, "myapp_*"));
	cr_assert(!func_change__regressed(&c, 1.0, "other_*"));
}

Test(diff, text_table)
{
	struct profile *base = profile_of("app;main;hot 50\napp;main;cold 50\n");
	struct profile *cur = profile_of("app;main;hot 300\napp;main;cold 100\n");
	struct profile_diff *d = profile_diff__new(base, cur);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(d);
	cr_assert_eq(profile_diff__write_text(d, 1, f), 0);
	fclose(f);
	cr_assert_str_eq(text,
			 "base 100 samples, new 400 samples; shares of each one's total, changes in percentage points\n"
			 "total base  total new   change   self base   self new   change  function\n"
			 "    50.00%     25.00%   -25.00      50.00%     25.00%   -25.00  cold\n");
	free(text);
	profile_diff__free(d);
	profile__free(base);
	profile__free(cur);
}

/* The HTML page of text, as a string. */
static char *page_of(const char *base_text, const char *text)
{
	struct profile *base = base_text ? profile_of(base_text) : NULL;
	struct profile *p = profile_of(text);
	struct html_meta meta = { .title = "t</script><b>" };
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);

	cr_assert_not_null(f);
	cr_assert_eq(base ? html__write_diff(base, p, &meta, f) : html__write(p, &meta, f), 0);
	fclose(f);
	profile__free(base);
	profile__free(p);
	return page;
}

Test(html, data_is_the_tree_depth_first_with_siblings_by_name)
{
	char *page = page_of(NULL, "app;main;zeta 2\napp;main;alpha 3\napp;main 1\nsh 4\n");

	/* strings by first use: "", "all", then as the profile interned them */
	cr_assert_not_null(strstr(page, "\"strings\":[\"\",\"all\",\"app\",\"main\",\"zeta\",\"alpha\",\"sh\"]"), "%s", page);
	/* all; app; main; alpha; zeta; sh */
	cr_assert_not_null(strstr(page, "\"depth\":[0,1,2,3,3,1]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"func\":[0,1,2,4,3,5]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"self\":[0,0,1,3,2,4]"), "%s", page);
	cr_assert_null(strstr(page, "\"base\":"));
	cr_assert_not_null(strstr(page, "\"diff\":false"));
	/* the title cannot end the script block or inject markup */
	cr_assert_not_null(strstr(page, "<title>t&lt;/script&gt;&lt;b&gt;</title>"));
	cr_assert_not_null(strstr(page, "\"title\":\"t\\u003c/script>\\u003cb>\""));
	/* every marker was replaced; no network */
	cr_assert_null(strstr(page, "{{"));
	cr_assert_null(strstr(page, "http://"));
	cr_assert_null(strstr(page, "https://"));
	free(page);
}

Test(html, diff_page_has_both_columns_on_one_tree)
{
	char *page = page_of("app;gone 5\napp;kept 5\n", "app;kept 1\napp;new 3\n");

	/* all; app; gone; kept; new: gone stays, with no samples in NEW */
	cr_assert_not_null(strstr(page, "\"depth\":[0,1,2,2,2]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"self\":[0,0,0,1,3]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"base\":[0,0,5,5,0]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"diff\":true"));
	free(page);
}

Test(html, label_sets_sparse_by_node_in_page_order)
{
	char *page = page_of(NULL, "{pod=a};app;main;hot 3\n{pod=b};app;main;cold 1\napp;main 2\n");
	char *plain = page_of(NULL, "app;main;hot 3\n");
	char *diff = page_of("{pod=a};app;main;hot 3\n", "{pod=b};app;main;hot 3\n");

	/* all; app; main; cold; hot: the label sets merge in the tree */
	cr_assert_not_null(strstr(page, "\"depth\":[0,1,2,3,3]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"strings\":[\"\",\"all\",\"app\",\"main\",\"hot\",\"cold\",\"pod\",\"a\",\"b\"]"), "%s", page);
	/* set 0 is the stacks without labels: main (2); pod=a: hot (4);
	 * pod=b: cold (3); a node is its distance from the set's last one */
	cr_assert_not_null(strstr(page, "\"labels\":{\"sets\":[[],[6,7],[6,8]],\n"
				  "\"start\":[0,1,2,3],\n\"node\":[2,4,3],\n\"self\":[2,3,1]}"),
			   "%s", page);
	cr_assert_null(strstr(plain, "\"labels\":"), "no labels, no label data");
	cr_assert_null(strstr(diff, "\"labels\":"), "a diff page has no label panel");
	free(page);
	free(plain);
	free(diff);
}

Test(html, one_pair_per_set_and_node)
{
	/* hot at two addresses is one function: one (node, self) pair */
	struct frame f[] = {
		{ .kind = FRAME_LABELS, .name = "pod\x1f" "a\x1f" }, { .kind = FRAME_ROOT, .name = "app" },
		{ .kind = FRAME_USER, .name = "hot", .addr = 0x1000 },
	};
	struct profile *p = profile__new();
	char *page = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&page, &len);

	cr_assert_eq(profile__add(p, f, 3, 2), 0);
	f[2].addr = 0x2000;
	cr_assert_eq(profile__add(p, f, 3, 5), 0);
	cr_assert_eq(html__write(p, NULL, out), 0);
	fclose(out);
	cr_assert_not_null(strstr(page, "\"start\":[0,0,1],\n\"node\":[2],\n\"self\":[7]}"), "%s", page);
	free(page);
	profile__free(p);
}

Test(html, empty_profile_is_an_honest_empty_page)
{
	char *page = page_of(NULL, "");

	cr_assert_not_null(strstr(page, "\"depth\":[0]"), "%s", page);
	cr_assert_not_null(strstr(page, "\"self\":[0]"));
	cr_assert_not_null(strstr(page, "holds no samples"));
	free(page);
}
