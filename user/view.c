// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: view and diff read profile files (pprof from any producer, or
 * folded stacks), within a size bound and a tree node bound, and either
 * merge them (view) or compare two (diff). Every input problem is one line
 * naming the file. view writes HTML, pprof or folded; diff writes the diff
 * page or a text table, and can fail a CI job on a regression. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/parse.h"
#include "profile/profile.h"
#include "view.h"

#define DEFAULT_MAX_INPUT (256ull << 20)
#define DEFAULT_MAX_NODES 2000000
#define DEFAULT_TOP 20

/* What view and diff share: limits, output, title, and what the inputs
 * said about themselves once merged. */
struct view_common {
	const char *cmd;        /* "view" or "diff", for messages */
	struct read_limits lim;
	const char *output;     /* NULL or "-": standard output */
	const char *title;
	char title_buf[256];
	char unit[80];
	struct read_info info;  /* the first input's, with the span of all */
	const char *first;      /* the first input with samples or types */
};

static int bad_value(const struct view_common *c, const char *flag,
		     const char *value, const char *want)
{
	fprintf(stderr, "kiln %s: invalid value '%s' for %s: %s\n", c->cmd, value,
		flag, want);
	return 2;
}

/* The options view and diff share; 0 when opt was one of them, 2 for a
 * bad value, -1 when opt is not shared. */
static int common_opt(struct view_common *c, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'o':
		c->output = arg;
		return 0;
	case 't':
		c->title = arg;
		return 0;
	case 'I':
		if (parse_size(arg, 1024, 1ull << 40, &v))
			return bad_value(c, "--max-input", arg, "a size such as 256M");
		c->lim.max_bytes = v;
		return 0;
	case 'N':
		if (parse_u64(arg, 16, 1ull << 31, &v))
			return bad_value(c, "--max-nodes", arg, "16 to 2147483648");
		c->lim.max_nodes = v;
		return 0;
	}
	return -1;
}

#define COMMON_LONGOPTS \
	{ "output", required_argument, NULL, 'o' }, \
	{ "format", required_argument, NULL, 'f' }, \
	{ "title", required_argument, NULL, 't' }, \
	{ "max-input", required_argument, NULL, 'I' }, \
	{ "max-nodes", required_argument, NULL, 'N' }, \
	{ "help", no_argument, NULL, 'h' }

#define COMMON_HELP \
	"  -t, --title TEXT          the page's title (default: the input names)\n" \
	"      --max-input SIZE      refuse a file larger than this, also after gunzip\n" \
	"                            (default 256M)\n" \
	"      --max-nodes N         refuse inputs whose stacks need more tree nodes\n" \
	"                            (default 2000000)\n" \
	"  -h, --help                this help\n"

static void common_init(struct view_common *c, const char *cmd)
{
	c->cmd = cmd;
	c->lim.max_bytes = DEFAULT_MAX_INPUT;
	c->lim.max_nodes = DEFAULT_MAX_NODES;
}

/* Reads path into p, checks its values can be added to what is there
 * (c->info, empty before the first input). 0, or 1 after printing why. */
static int read_input(struct view_common *c, const char *path, struct profile *p)
{
	struct read_info info;
	int err = profile__read_file(p, path, &c->lim, &info);
	int64_t end;

	if (err == -EINVAL) {
		fprintf(stderr, "kiln %s: %s: not a pprof or folded profile (%s)\n",
			c->cmd, path, info.why);
		return 1;
	}
	if (err) {
		fprintf(stderr, "kiln %s: %s: %s\n", c->cmd, path,
			info.why[0] ? info.why : strerror(-err));
		return 1;
	}
	if (info.skipped)
		fprintf(stderr, "kiln %s: %s: %llu samples with a value of 0 or less skipped\n",
			c->cmd, path, (unsigned long long)info.skipped);
	if (!info.type[0])
		return 0;       /* no samples and no sample types: adds nothing */
	if (!c->info.type[0]) {
		c->info = info;
		c->first = path;
		snprintf(c->unit, sizeof(c->unit), !strcmp(info.type, "samples") ? "%s" :
			 "%s (%s)", info.type, info.unit);
		return 0;
	}
	if (strcmp(info.type, c->info.type) || strcmp(info.unit, c->info.unit)) {
		fprintf(stderr, "kiln %s: %s: its values are %s/%s, those of %s %s/%s\n",
			c->cmd, path, info.type, info.unit, c->first, c->info.type,
			c->info.unit);
		return 1;
	}
	if (!c->info.period_ns)
		c->info.period_ns = info.period_ns;
	if (info.time_nanos && info.duration_nanos >= 0) {
		end = c->info.time_nanos + c->info.duration_nanos;
		if (!c->info.time_nanos || info.time_nanos < c->info.time_nanos)
			c->info.time_nanos = info.time_nanos;
		if (info.time_nanos + info.duration_nanos > end)
			end = info.time_nanos + info.duration_nanos;
		c->info.duration_nanos = end - c->info.time_nanos;
	}
	return 0;
}

/* "kiln CMD: a, b, c" from the input names, cut to fit. */
static void default_title(struct view_common *c, char *const *paths, size_t n)
{
	size_t len = snprintf(c->title_buf, sizeof(c->title_buf), "kiln %s:", c->cmd);

	for (size_t i = 0; i < n && len < sizeof(c->title_buf); i++)
		len += snprintf(c->title_buf + len, sizeof(c->title_buf) - len, "%s %s",
				i ? (strcmp(c->cmd, "diff") ? "," : " vs") : "", paths[i]);
	if (!c->title)
		c->title = c->title_buf;
}

static bool to_stdout(const struct view_common *c)
{
	return !c->output || !strcmp(c->output, "-");
}

/* Opens the output; NULL after printing why. */
static FILE *open_output(const struct view_common *c)
{
	FILE *f = to_stdout(c) ? stdout : fopen(c->output, "we");

	if (!f)
		fprintf(stderr, "kiln %s: %s: cannot write: %s\n", c->cmd, c->output,
			strerror(errno));
	return f;
}

/* Closes the output; a failed write is reported (err or the close's own)
 * and leaves no file behind. 0 or 1. */
static int close_output(const struct view_common *c, FILE *f, int err)
{
	if (fflush(f) && !err)
		err = -errno;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	if (!err)
		return 0;
	fprintf(stderr, "kiln %s: %s: cannot write: %s\n", c->cmd,
		to_stdout(c) ? "standard output" : c->output, strerror(-err));
	if (!to_stdout(c))
		unlink(c->output);
	return 1;
}

static struct html_meta html_meta_of(const struct view_common *c)
{
	return (struct html_meta){
		.title = c->title, .unit = c->unit[0] ? c->unit : NULL,
		.time_nanos = c->info.time_nanos, .duration_nanos = c->info.duration_nanos,
	};
}

static void view_usage(FILE *f)
{
	fprintf(f,
		"Usage: kiln view [OPTIONS] FILE...\n"
		"\n"
		"Reads pprof profiles (kiln's, or any other tool's, gzipped or not) and folded\n"
		"stacks, merges them, and writes one self-contained HTML page: a flame graph,\n"
		"a table of functions and a sandwich view. Or converts them to pprof or folded.\n"
		"\n"
		"Options:\n"
		"  -o, --output FILE         where to write (default: standard output); the format\n"
		"                            follows the extension: .html .htm, .pb.gz .pprof,\n"
		"                            .folded .txt\n"
		"      --format FMT          html, pprof or folded, whatever the extension\n"
		"                            (default on standard output: html)\n"
		COMMON_HELP
		"\n"
		"Exit status: 0, 1 when an input cannot be read, 2 for bad usage.\n");
}

int view_main(int argc, char **argv)
{
	static const struct option longopts[] = { COMMON_LONGOPTS, { 0 } };
	struct view_common c = { 0 };
	enum profile_format fmt = PROFILE_FORMAT_NONE;
	struct profile *p;
	struct pprof_meta pmeta;
	struct html_meta hmeta;
	int opt, status = 0, err;
	FILE *f;

	common_init(&c, "view");
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:t:h", longopts, NULL)) != -1) {
		if (opt == 'f') {
			fmt = profile_format__parse(optarg);
			if (!fmt)
				return bad_value(&c, "--format", optarg, "html, pprof or folded");
		} else if (opt == 'h') {
			view_usage(stdout);
			return 0;
		} else if ((status = common_opt(&c, opt, optarg))) {
			if (status < 0)
				fprintf(stderr, "kiln view: try 'kiln view --help'\n");
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "kiln view: no input files (try 'kiln view --help')\n");
		return 2;
	}
	if (!fmt)
		fmt = to_stdout(&c) ? PROFILE_FORMAT_HTML : profile_format__from_path(c.output);
	if (!fmt)
		return bad_value(&c, "--output", c.output, "cannot tell the format from the name: "
				 "use .html, .pb.gz, .pprof, .folded or .txt, or give --format");
	if (fmt == PROFILE_FORMAT_PPROF && to_stdout(&c) && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "kiln view: pprof is binary: give -o FILE\n");
		return 2;
	}
	default_title(&c, argv + optind, argc - optind);

	p = profile__new();
	if (!p) {
		fprintf(stderr, "kiln view: out of memory\n");
		return 1;
	}
	for (int i = optind; i < argc && !status; i++)
		status = read_input(&c, argv[i], p);
	if (!status && fmt == PROFILE_FORMAT_PPROF && c.info.type[0] &&
	    strcmp(c.info.type, "samples")) {
		fprintf(stderr, "kiln view: pprof output holds sample counts, and the input's "
			"values are %s/%s: write html or folded\n", c.info.type, c.info.unit);
		status = 1;
	}
	if (!status && !profile__total(p))
		fprintf(stderr, "kiln view: the input holds no samples\n");
	if (!status && (f = open_output(&c))) {
		pmeta = (struct pprof_meta){
			.period_ns = c.info.period_ns, .time_nanos = c.info.time_nanos,
			.duration_nanos = c.info.duration_nanos,
		};
		hmeta = html_meta_of(&c);
		err = profile__write(p, fmt, &pmeta, &hmeta, f);
		status = close_output(&c, f, err);
	} else if (!status) {
		status = 1;
	}
	profile__free(p);
	return status;
}

static void diff_usage(FILE *f)
{
	fprintf(f,
		"Usage: kiln diff [OPTIONS] BASE NEW\n"
		"\n"
		"Compares two profiles (pprof or folded). Each function's share of its\n"
		"profile's total is compared, so profiles of different lengths compare.\n"
		"Writes a diff flame graph (the shape of NEW, red where a frame's share grew,\n"
		"blue where it shrank, with a table of changes) or the top changes as text.\n"
		"\n"
		"Options:\n"
		"  -o, --output FILE         where to write (default: standard output); .html\n"
		"                            .htm = the page, .txt = text\n"
		"      --format FMT          html or text (default on standard output: text)\n"
		"      --top N               rows of the text table (default %d)\n"
		"      --fail-on-regression POINTS[:GLOB]\n"
		"                            exit 1 when a function (whose name matches GLOB)\n"
		"                            takes more than POINTS percentage points more of\n"
		"                            the total in NEW than in BASE (its callees included)\n"
		COMMON_HELP
		"\n"
		"Exit status: 0; 1 for a regression past --fail-on-regression; 2 for bad\n"
		"usage or an input that cannot be read or holds no samples.\n",
		DEFAULT_TOP);
}

struct regression_rule {
	double points;          /* < 0: no check */
	const char *glob;       /* NULL: every function */
};

static int parse_rule(struct view_common *c, char *arg, struct regression_rule *r)
{
	char *colon = strchr(arg, ':');
	char *end;

	if (colon) {
		*colon = '\0';
		r->glob = colon + 1;
	}
	r->points = strtod(arg, &end);
	if (!*arg || *end || !(r->points >= 0 && r->points <= 100) ||
	    (colon && !*r->glob)) {
		if (colon)
			*colon = ':';
		return bad_value(c, "--fail-on-regression", arg,
				 "POINTS[:GLOB], POINTS from 0 to 100, e.g. 2.5 or 5:myapp_*");
	}
	return 0;
}

/* Prints each regression on stderr; 1 when there is one. */
static int check_regressions(const struct profile_diff *d,
			     const struct regression_rule *r)
{
	const struct func_change *ch;
	size_t n, found = 0;

	ch = profile_diff__changes(d, &n);
	for (size_t i = 0; i < n; i++) {
		if (!func_change__regressed(&ch[i], r->points, r->glob))
			continue;
		fprintf(stderr, "kiln diff: regression: %s%s%s%s takes %.2f%% of the total, "
			"%.2f%% before (+%.2f points, more than %.2f)\n", ch[i].name,
			*ch[i].module ? " (" : "", ch[i].module, *ch[i].module ? ")" : "",
			ch[i].total_new, ch[i].total_base, ch[i].total_new - ch[i].total_base,
			r->points);
		found++;
	}
	return found ? 1 : 0;
}

int diff_main(int argc, char **argv)
{
	enum { OPT_TOP = 256, OPT_FAIL };
	static const struct option longopts[] = {
		COMMON_LONGOPTS,
		{ "top", required_argument, NULL, OPT_TOP },
		{ "fail-on-regression", required_argument, NULL, OPT_FAIL },
		{ 0 },
	};
	struct view_common c = { 0 };
	struct regression_rule rule = { .points = -1 };
	struct profile *base = NULL, *cur = NULL;
	struct profile_diff *d = NULL;
	bool html = false, format_given = false;
	uint64_t top = DEFAULT_TOP;
	struct html_meta hmeta;
	int opt, status = 0, err;
	FILE *f;

	common_init(&c, "diff");
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (strcmp(optarg, "html") && strcmp(optarg, "text"))
				return bad_value(&c, "--format", optarg, "html or text");
			html = !strcmp(optarg, "html");
			format_given = true;
			break;
		case OPT_TOP:
			if (parse_u64(optarg, 1, 100000, &top))
				return bad_value(&c, "--top", optarg, "1 to 100000");
			break;
		case OPT_FAIL:
			if (parse_rule(&c, optarg, &rule))
				return 2;
			break;
		case 'h':
			diff_usage(stdout);
			return 0;
		default:
			status = common_opt(&c, opt, optarg);
			if (status < 0)
				fprintf(stderr, "kiln diff: try 'kiln diff --help'\n");
			if (status)
				return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "kiln diff: give two profiles, BASE and NEW (try 'kiln diff --help')\n");
		return 2;
	}
	if (!format_given && !to_stdout(&c)) {
		size_t len = strlen(c.output);

		html = profile_format__from_path(c.output) == PROFILE_FORMAT_HTML;
		if (!html && (len < 5 || strcmp(c.output + len - 4, ".txt")))
			return bad_value(&c, "--output", c.output, "cannot tell the format from "
					 "the name: use .html or .txt, or give --format");
	}
	default_title(&c, argv + optind, 2);

	base = profile__new();
	cur = profile__new();
	if (!base || !cur) {
		fprintf(stderr, "kiln diff: out of memory\n");
		status = 2;
		goto cleanup;
	}
	if (read_input(&c, argv[optind], base) || read_input(&c, argv[optind + 1], cur)) {
		status = 2;
		goto cleanup;
	}
	for (int i = 0; i < 2; i++) {
		if (!profile__total(i ? cur : base)) {
			fprintf(stderr, "kiln diff: %s: no samples to compare\n", argv[optind + i]);
			status = 2;
			goto cleanup;
		}
	}
	d = profile_diff__new(base, cur);
	f = d ? open_output(&c) : NULL;
	if (!f) {
		if (!d)
			fprintf(stderr, "kiln diff: out of memory\n");
		status = 2;
		goto cleanup;
	}
	hmeta = html_meta_of(&c);
	hmeta.time_nanos = hmeta.duration_nanos = 0;    /* two spans, not one */
	err = html ? html__write_diff(base, cur, &hmeta, f) :
		     profile_diff__write_text(d, top, f);
	if (close_output(&c, f, err))
		status = 2;
	else if (rule.points >= 0)
		status = check_regressions(d, &rule);
cleanup:
	profile_diff__free(d);
	profile__free(base);
	profile__free(cur);
	return status;
}
