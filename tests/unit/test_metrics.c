// SPDX-License-Identifier: BSD-2-Clause
/* Prometheus text writer: exact output, escaping, number spelling, name
 * checks and the size bound. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/metrics.h"

static const char *text(const struct metrics_buf *b)
{
	return metrics_buf__data(b, NULL);
}

Test(metrics_buf, families_samples_and_escaping_exact)
{
	struct metrics_buf *b = metrics_buf__new(0);
	const struct metrics_label l2[] = {
		{ "type", "cpu" },
		{ "path", "C:\\dir \"x\"\nnext" },
	};
	const struct metrics_label l1[] = { { "le", "0.5" } };

	cr_assert_not_null(b);
	cr_assert_str_eq(text(b), "");
	cr_assert_eq(metrics_buf__family(b, "kiln_samples_total", METRICS_COUNTER,
					 "Samples \\ taken\nby \"kiln\""), 0);
	cr_assert_eq(metrics_buf__u64(b, NULL, 0, 42), 0);
	cr_assert_eq(metrics_buf__u64(b, l2, 2, UINT64_MAX), 0);
	cr_assert_eq(metrics_buf__family(b, "kiln:ratio", METRICS_GAUGE, NULL), 0);
	cr_assert_eq(metrics_buf__double(b, l1, 1, 0.1), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, NAN), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, INFINITY), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, -INFINITY), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, 3.0), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, -1.5e-7), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, 1e21), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, 2.0 / 3.0), 0);
	cr_assert_eq(metrics_buf__double(b, NULL, 0, 0.0), 0);
	cr_assert_eq(metrics_buf__family(b, "kiln_empty_help", METRICS_GAUGE, ""), 0);
	cr_assert_eq(metrics_buf__u64(b, NULL, 0, 0), 0);

	cr_assert_str_eq(text(b),
		"# HELP kiln_samples_total Samples \\\\ taken\\nby \"kiln\"\n"
		"# TYPE kiln_samples_total counter\n"
		"kiln_samples_total 42\n"
		"kiln_samples_total{type=\"cpu\",path=\"C:\\\\dir \\\"x\\\"\\nnext\"} 18446744073709551615\n"
		"# TYPE kiln:ratio gauge\n"
		"kiln:ratio{le=\"0.5\"} 0.1\n"
		"kiln:ratio NaN\n"
		"kiln:ratio +Inf\n"
		"kiln:ratio -Inf\n"
		"kiln:ratio 3\n"
		"kiln:ratio -1.5e-07\n"
		"kiln:ratio 1e+21\n"
		"kiln:ratio 0.6666666666666666\n"
		"kiln:ratio 0\n"
		"# HELP kiln_empty_help \n"
		"# TYPE kiln_empty_help gauge\n"
		"kiln_empty_help 0\n");
	cr_assert_not(metrics_buf__truncated(b));
	metrics_buf__free(b);
	metrics_buf__free(NULL);
}

Test(metrics_buf, doubles_read_back_exactly)
{
	const double vals[] = { 0.1, 1.0 / 3, 123456789.123, 5e-324, 1.7976931348623157e308,
				-2.5, 1e100, 4503599627370497.0 };
	struct metrics_buf *b = metrics_buf__new(0);

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		const char *sp;
		char name[16];

		snprintf(name, sizeof(name), "v%zu", i);
		metrics_buf__reset(b);
		cr_assert_eq(metrics_buf__family(b, name, METRICS_GAUGE, NULL), 0);
		cr_assert_eq(metrics_buf__double(b, NULL, 0, vals[i]), 0);
		sp = strrchr(text(b), ' ');
		cr_assert_not_null(sp);
		cr_assert_eq(strtod(sp + 1, NULL), vals[i], "%s does not read back", sp + 1);
	}
	metrics_buf__free(b);
}

Test(metrics_buf, invalid_names_and_labels_rejected)
{
	static const char *const bad[] = { "", "1abc", "a-b", "a b", "a{}", "caf\xc3\xa9",
					   "a\n", "a\"" };
	static const char *const good[] = { "_x", ":x", "a:b_c9", "A", "kiln_x_total" };
	struct metrics_buf *b = metrics_buf__new(0);
	struct metrics_label l[2];
	char before[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(metrics_name__check(bad[i]), -EINVAL, "'%s' accepted", bad[i]);
		cr_assert_eq(metrics_buf__family(b, bad[i], METRICS_GAUGE, "h"), -EINVAL);
	}
	cr_assert_eq(metrics_name__check(NULL), -EINVAL);
	cr_assert_eq(metrics_buf__family(b, NULL, METRICS_GAUGE, "h"), -EINVAL);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert_eq(metrics_name__check(good[i]), 0, "'%s' rejected", good[i]);
	cr_assert_str_eq(text(b), "");

	/* A sample needs a family; a family needs a known type. */
	cr_assert_eq(metrics_buf__u64(b, NULL, 0, 1), -EINVAL);
	cr_assert_eq(metrics_buf__family(b, "x", (enum metrics_type)7, NULL), -EINVAL);
	cr_assert_str_eq(text(b), "");

	cr_assert_eq(metrics_buf__family(b, "x", METRICS_GAUGE, NULL), 0);
	cr_assert_eq(metrics_buf__family(b, "x", METRICS_GAUGE, NULL), -EEXIST);
	snprintf(before, sizeof(before), "%s", text(b));

	l[0] = (struct metrics_label){ "a:b", "v" };            /* no colons in labels */
	cr_assert_eq(metrics_buf__u64(b, l, 1, 1), -EINVAL);
	l[0] = (struct metrics_label){ "__name__", "v" };       /* reserved */
	cr_assert_eq(metrics_buf__u64(b, l, 1, 1), -EINVAL);
	l[0] = (struct metrics_label){ "1a", "v" };
	cr_assert_eq(metrics_buf__u64(b, l, 1, 1), -EINVAL);
	l[0] = (struct metrics_label){ "", "v" };
	cr_assert_eq(metrics_buf__u64(b, l, 1, 1), -EINVAL);
	l[0] = (struct metrics_label){ "k", NULL };
	cr_assert_eq(metrics_buf__u64(b, l, 1, 1), -EINVAL);
	l[0] = (struct metrics_label){ "k", "1" };
	l[1] = (struct metrics_label){ "k", "2" };                /* repeated */
	cr_assert_eq(metrics_buf__double(b, l, 2, 1.0), -EINVAL);
	cr_assert_eq(metrics_buf__u64(b, NULL, 1, 1), -EINVAL);
	cr_assert_str_eq(text(b), before);
	cr_assert_not(metrics_buf__truncated(b));

	l[1] = (struct metrics_label){ "_k2", "" };
	cr_assert_eq(metrics_buf__u64(b, l, 2, 7), 0);
	cr_assert_str_eq(text(b), "# TYPE x gauge\nx{k=\"1\",_k2=\"\"} 7\n");
	metrics_buf__free(b);
}

/* Writes the same lines as long as they fit; returns the first error. */
static int write_series(struct metrics_buf *b, int n)
{
	char v[16];
	int err = metrics_buf__family(b, "kiln_series", METRICS_GAUGE, "series\nhelp");

	for (int i = 0; i < n && !err; i++) {
		const struct metrics_label l[] = { { "i", v } };

		snprintf(v, sizeof(v), "%d", i);
		err = metrics_buf__u64(b, l, 1, (uint64_t)i * 1000);
	}
	return err;
}

Test(metrics_buf, truncation_keeps_whole_lines_and_sticks)
{
	struct metrics_buf *big = metrics_buf__new(0), *b = metrics_buf__new(100);
	size_t len, big_len;
	const char *out, *full;

	cr_assert_eq(write_series(big, 10), 0);
	full = metrics_buf__data(big, &big_len);
	cr_assert_gt(big_len, 100);

	cr_assert_eq(write_series(b, 10), -ENOSPC);
	out = metrics_buf__data(b, &len);
	cr_assert(metrics_buf__truncated(b));
	cr_assert_leq(len, 100);
	cr_assert_gt(len, 0);
	cr_assert_eq(strlen(out), len);
	cr_assert_eq(out[len - 1], '\n', "partial line left: '%s'", out);
	cr_assert_eq(memcmp(out, full, len), 0, "not a prefix: '%s'", out);
	/* The next line of the full output is the one that did not fit. */
	cr_assert_gt(strchr(full + len, '\n') + 1 - full, 100);

	/* Sticky: even a line that would fit fails, and -EINVAL still wins. */
	cr_assert_eq(metrics_buf__family(b, "y", METRICS_GAUGE, NULL), -ENOSPC);
	cr_assert_eq(metrics_buf__u64(b, NULL, 0, 1), -ENOSPC);
	cr_assert_eq(metrics_buf__family(b, "bad-name", METRICS_GAUGE, NULL), -EINVAL);
	cr_assert_eq(metrics_buf__data(b, NULL)[len], '\0');
	cr_assert_eq(strlen(metrics_buf__data(b, NULL)), len);

	metrics_buf__reset(b);
	cr_assert_not(metrics_buf__truncated(b));
	cr_assert_str_eq(text(b), "");
	cr_assert_eq(metrics_buf__family(b, "kiln_series", METRICS_GAUGE, NULL), 0);
	metrics_buf__free(big);
	metrics_buf__free(b);
}

Test(metrics_buf, bound_is_inclusive)
{
	static const char exact[] = "# TYPE a gauge\na 1\n";
	struct metrics_buf *b = metrics_buf__new(sizeof(exact) - 1);
	size_t len;

	cr_assert_eq(metrics_buf__family(b, "a", METRICS_GAUGE, NULL), 0);
	cr_assert_eq(metrics_buf__u64(b, NULL, 0, 1), 0);
	cr_assert_str_eq(metrics_buf__data(b, &len), exact);
	cr_assert_eq(len, sizeof(exact) - 1);
	cr_assert_not(metrics_buf__truncated(b));
	cr_assert_eq(metrics_buf__u64(b, NULL, 0, 2), -ENOSPC);
	cr_assert(metrics_buf__truncated(b));
	cr_assert_str_eq(text(b), exact);
	metrics_buf__free(b);
}

Test(metrics_buf, grows_past_initial_size_and_resets)
{
	static const char head[] =
		"# HELP kiln_series series\\nhelp\n# TYPE kiln_series gauge\n"
		"kiln_series{i=\"0\"} 0\n";
	struct metrics_buf *b = metrics_buf__new(1u << 20);
	char expect[64];
	const char *out;
	size_t len;

	for (int round = 0; round < 2; round++) {
		cr_assert_eq(write_series(b, 5000), 0);
		out = metrics_buf__data(b, &len);
		cr_assert_gt(len, 64 * 1024);
		cr_assert_eq(strlen(out), len);
		snprintf(expect, sizeof(expect), "\nkiln_series{i=\"4999\"} 4999000\n");
		cr_assert_str_eq(out + len - strlen(expect), expect);
		cr_assert_eq(strncmp(out, head, sizeof(head) - 1), 0, "%.80s", out);
		metrics_buf__reset(b);
	}
	metrics_buf__free(b);
}
