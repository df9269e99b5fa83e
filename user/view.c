// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: view and diff read profile files (pprof from any producer, or
 * folded stacks) and directories of them, within a size bound, a file
 * count bound and a tree node bound, select samples by their labels
 * (--match) and profiles by their time (--from, --until), and either merge
 * them (view) or compare two sides (diff). Every input problem is one line
 * naming the file. view writes HTML, pprof or folded; diff writes the diff
 * page or a text table, and can fail a CI job on a regression. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/url.h"
#include "export/http_client.h"
#include "export/pyroscope.h"
#include "core/parse.h"
#include "profile/label_match.h"
#include "profile/profile.h"
#include "options.h"
#include "server_opts.h"
#include "view.h"

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
	const char **match;     /* --match selectors */
	size_t nmatch;
	const char *from, *until;
	uint64_t max_files;
	struct label_match *sel;        /* parsed --match */
	int64_t from_ns, until_ns;      /* 0: open */
	uint64_t outside, unmatched;    /* files out of the span; samples not selected */
};

/* The options of view and diff: the common part lands in view_common. */
struct view_opts {
	struct view_common c;
	const char *format;
	bool folded_labels;             /* view: --folded-labels */
	uint64_t top;                   /* diff */
	const char *fail_on;            /* diff: --fail-on-regression */
	const char **base_match;        /* diff: --base-match */
	size_t nbase_match;
	/* diff --server: BASE and NEW are label selectors of its query API */
	const char *server;
	const char *profile_type;
	struct http_client_opts http;
	bool allow_insecure_credentials;
};

static int bad_value(const struct view_common *c, const char *flag,
		     const char *value, const char *want)
{
	fprintf(stderr, "kiln %s: invalid value '%s' for %s: %s\n", c->cmd, value,
		flag, want);
	return 2;
}

/* The rows view and diff share, written once. */
#define VIEW_COMMON_ROWS \
	CONFIG_ROW_STRING(struct view_opts, c.title, "title", 't', "TEXT", NULL, \
			  "the page's title (default: the input names)"), \
	CONFIG_ROW_SIZE(struct view_opts, c.lim.max_bytes, "max-input", "SIZE", "256M", 1024, \
			1ull << 40, "refuse a file larger than this, also after gunzip"), \
	CONFIG_ROW_U64(struct view_opts, c.lim.max_nodes, "max-nodes", 0, "N", "2000000", 16, \
		       1ull << 31, "refuse inputs whose stacks need more tree nodes"), \
	CONFIG_ROW_U64(struct view_opts, c.max_files, "max-files", 0, "N", "10000", 1, 1000000, \
		       "refuse more input files than this, the files of directories included"), \
	CONFIG_ROW_LIST(struct view_opts, c.match, c.nmatch, "match", 0, "SELECTOR", \
			"only samples whose labels match: KEY=VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX (repeatable, all must hold; a missing label is empty)"), \
	CONFIG_ROW_STRING(struct view_opts, c.from, "from", 0, "TIME", NULL, \
			  "only profiles that end at or after TIME: unix seconds, 2026-11-25T07:00:00Z, or back from now like -1h"), \
	CONFIG_ROW_STRING(struct view_opts, c.until, "until", 0, "TIME", NULL, \
			  "only profiles that start at or before TIME (the same forms)")

static const struct config_option view_options[] = {
	CONFIG_ROW_STRING(struct view_opts, c.output, "output", 'o', "FILE", NULL,
			  "where to write (default: standard output); the format follows the extension: .html .htm, .pb.gz .pprof, .folded .txt"),
	CONFIG_ROW_CHOICE(struct view_opts, format, "format", "FMT", NULL, "html|pprof|folded",
			  "html, pprof or folded, whatever the extension (default on standard output: html)"),
	CONFIG_ROW_BOOL(struct view_opts, folded_labels, "folded-labels", 0,
			"folded output: each stack's labels as a first frame {name=value,...} (read back by kiln view; off for FlameGraph)"),
	VIEW_COMMON_ROWS,
};

const struct config_command view_command = {
	.name = "view",
	.synopsis = "[OPTIONS] FILE|DIR...",
	.about =
		"Reads pprof profiles (kiln's, or any other tool's, gzipped or not) and folded\n"
		"stacks, and the .pb.gz, .pprof, .folded and .txt files of directories (the\n"
		"agent's -o DIR), selects samples by label and profiles by time, merges them,\n"
		"and writes one self-contained HTML page: a flame graph, a table of functions\n"
		"and a sandwich view. Or converts them to pprof or folded.\n",
	.notes = "Exit status: 0, 1 when an input cannot be read, 2 for bad usage.\n",
	.rows = CONFIG_ROWS(view_options),
	.args = CONFIG_ARGS_ANYWHERE,
};

static const struct config_option diff_options[] = {
	CONFIG_ROW_STRING(struct view_opts, c.output, "output", 'o', "FILE", NULL,
			  "where to write (default: standard output); .html .htm = the page, .txt = text"),
	CONFIG_ROW_CHOICE(struct view_opts, format, "format", "FMT", NULL, "html|text",
			  "html or text (default on standard output: text)"),
	CONFIG_ROW_U64(struct view_opts, top, "top", 0, "N", "20", 1, 100000,
		       "rows of the text table"),
	CONFIG_ROW_STRING(struct view_opts, fail_on, "fail-on-regression", 0, "POINTS[:GLOB]", NULL,
			  "exit 1 when a function (whose name matches GLOB) takes more than POINTS percentage points more of the total in NEW than in BASE (its callees included)"),
	CONFIG_ROW_LIST(struct view_opts, base_match, nbase_match, "base-match", 0, "SELECTOR",
			"BASE's own --match (repeatable; default: --match selects in BASE too), so one directory's two pods compare"),
	CONFIG_ROW_STRING(struct view_opts, server, "server", 0, "URL", NULL,
			  "BASE and NEW are label selectors ('service_name=\"app\",branch=\"main\"'), each side the profiles a Pyroscope server holds for it over --from .. --until (default: the last 24 h)"),
	CONFIG_ROW_STRING(struct view_opts, profile_type, "profile-type", 0, "ID", PYROSCOPE_CPU_TYPE,
			  "with --server: the profile type queried, NAME:TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT"),
	OPTIONS_SERVER(struct view_opts),
	VIEW_COMMON_ROWS,
};

const struct config_command diff_command = {
	.name = "diff",
	.synopsis = "[OPTIONS] BASE NEW  |  --server URL [OPTIONS] 'SELECTOR' 'SELECTOR'",
	.about =
		"Compares two profiles (pprof or folded; a directory's files are merged). Each\n"
		"function's share of its profile's total is compared, so profiles of different\n"
		"lengths compare. --match and --base-match select by label, so two pods of one\n"
		"directory compare: kiln diff DIR DIR --base-match pod=a --match pod=b.\n"
		"Writes a diff flame graph (the shape of NEW, red where a frame's share grew,\n"
		"blue where it shrank, with a table of changes) or the top changes as text.\n"
		"With --server, BASE and NEW are label selectors, each side what a Pyroscope\n"
		"server merges for it (its query API, SelectMergeProfile): CI compares a\n"
		"branch's runs (kiln record --server --tag branch=...) with main's.\n",
	.notes =
		"Exit status: 0; 1 for a regression past --fail-on-regression; 2 for bad\n"
		"usage or an input that cannot be read or holds no samples.\n",
	.rows = CONFIG_ROWS(diff_options),
	.args = CONFIG_ARGS_ANYWHERE,
};

/* Parses a command's options into o and its files into *files. 0, or the
 * exit status (0 after --help). */
static int parse_view_args(const struct config_command *cmd, struct view_opts *o, int argc,
			   char **argv, struct config_list *files, bool *done)
{
	int status = config__parse_command(cmd, o, argc, argv, files);

	o->c.cmd = cmd->name;
	*done = status != 0;
	if (status == 1) {
		config__usage(cmd, stdout);
		return 0;
	}
	return status;
}

/* TIME of --from/--until: unix seconds, an RFC 3339 UTC time
 * (2026-11-25T07:00:00Z, seconds optional) or "-DURATION" back from now.
 * 0, or -EINVAL. */
static int parse_when(const char *s, int64_t *ns)
{
	struct tm tm = { 0 };
	struct timespec now;
	const char *end;
	uint64_t secs;
	double back;

	if (*s == '-') {
		if (parse_duration(s + 1, 0, 1e9, &back))
			return -EINVAL;
		clock_gettime(CLOCK_REALTIME, &now);
		*ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - (int64_t)(back * 1e9);
		return 0;
	}
	if (!parse_u64(s, 1, 1ull << 34, &secs)) {
		*ns = (int64_t)secs * 1000000000;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M", &tm);
	if (end && *end == ':')
		end = strptime(end, ":%S", &tm);
	if (!end || strcmp(end, "Z"))
		return -EINVAL;
	*ns = (int64_t)timegm(&tm) * 1000000000;
	return 0;
}

/* Reads the selectors (sel: --match, or diff's --base-match) and the
 * span; 0 or the exit status 2 after saying why. */
static int setup_filters(struct view_common *c, const char *flag, const char *const *sel,
			 size_t n, struct label_match **out)
{
	char why[160];
	int err;

	for (size_t i = 0; i < n; i++) {
		err = label_match__add(out, sel[i], why, sizeof(why));
		if (err)
			return bad_value(c, flag, sel[i], err == -ENOMEM ? "out of memory" : why);
	}
	if (c->from && parse_when(c->from, &c->from_ns))
		return bad_value(c, "--from", c->from, "unix seconds, 2026-11-25T07:00:00Z or -1h");
	if (c->until && parse_when(c->until, &c->until_ns))
		return bad_value(c, "--until", c->until, "unix seconds, 2026-11-25T07:00:00Z or -1h");
	return 0;
}

/* A list of input files, owned. */
struct inputs {
	char **paths;
	size_t n, cap;
};

static void inputs_release(struct inputs *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->paths[i]);
	free(in->paths);
	*in = (struct inputs){ 0 };
}

/* Takes path (NULL: out of memory). 0 or -errno after saying why. */
static int inputs_add(struct view_common *c, struct inputs *in, char *path)
{
	if (path && in->n == c->max_files) {
		fprintf(stderr, "kiln %s: more than %" PRIu64 " input files (--max-files)\n", c->cmd,
			c->max_files);
		free(path);
		return -E2BIG;
	}
	if (path && in->n == in->cap) {
		size_t cap = in->cap ? 2 * in->cap : 16;
		char **v = realloc(in->paths, cap * sizeof(*v));

		if (v) {
			in->paths = v;
			in->cap = cap;
		} else {
			free(path);
			path = NULL;
		}
	}
	if (!path) {
		fprintf(stderr, "kiln %s: out of memory\n", c->cmd);
		return -ENOMEM;
	}
	in->paths[in->n++] = path;
	return 0;
}

static bool profile_name(const char *name)
{
	static const char *const exts[] = { ".pb.gz", ".pprof", ".folded", ".txt" };
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t el = strlen(exts[i]);

		if (len > el && !strcmp(name + len - el, exts[i]))
			return true;
	}
	return false;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds path, or the profile files of the directory path (by name; not its
 * subdirectories), sorted. 0, or 1 after saying why. */
static int expand_input(struct view_common *c, const char *path, struct inputs *in)
{
	struct stat st;
	struct dirent *de;
	size_t first = in->n;
	int err = 0;
	DIR *d;

	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return inputs_add(c, in, strdup(path)) ? 1 : 0;
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "kiln %s: %s: %s\n", c->cmd, path, strerror(errno));
		return 1;
	}
	while (!err && (de = readdir(d))) {
		char *full;

		if (de->d_name[0] == '.' || !profile_name(de->d_name))
			continue;
		err = inputs_add(c, in, asprintf(&full, "%s/%s", path, de->d_name) < 0 ? NULL : full);
	}
	closedir(d);
	if (!err && in->n == first) {
		fprintf(stderr, "kiln %s: %s: a directory without profile files (.pb.gz, .pprof, .folded, .txt)\n",
			c->cmd, path);
		return 1;
	}
	qsort(in->paths + first, in->n - first, sizeof(*in->paths), name_cmp);
	return err ? 1 : 0;
}

/* Whether a profile of this span (its file's mtime when it has none)
 * overlaps --from .. --until. */
static bool in_span(const struct view_common *c, const char *path, const struct read_info *info)
{
	int64_t start = info->time_nanos, end = start + (info->duration_nanos > 0 ?
							   info->duration_nanos : 0);
	struct stat st;

	if (!start && !stat(path, &st))
		start = end = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return (!c->from_ns || end >= c->from_ns) && (!c->until_ns || start <= c->until_ns);
}

/* Reads path into p (through a profile of its own when its span decides
 * whether it counts), checks its values can be added to what is there
 * (c->info, empty before the first input). 0, or 1 after printing why. */
static int read_input(struct view_common *c, const char *path, struct profile *p)
{
	bool by_time = c->from_ns || c->until_ns;
	struct profile *into = by_time ? profile__new() : p;
	struct read_info info = { 0 };
	int err = into ? profile__read_file(into, path, &c->lim, &info) : -ENOMEM;
	bool outside = !err && by_time && !in_span(c, path, &info);
	int64_t end;

	if (!err && by_time && !outside)
		err = profile__merge(p, into) ?: profile__nodes(p) > c->lim.max_nodes ? -E2BIG : 0;
	c->outside += outside;
	if (into != p)
		profile__free(into);
	if (err == -EINVAL) {
		fprintf(stderr, "kiln %s: %s: not a pprof or folded profile (%s)\n",
			c->cmd, path, info.why);
		return 1;
	}
	if (err) {
		fprintf(stderr, "kiln %s: %s: %s\n", c->cmd, path, info.why[0] ? info.why :
			err == -E2BIG ? "more distinct stack nodes than --max-nodes" : strerror(-err));
		return 1;
	}
	if (info.skipped)
		fprintf(stderr, "kiln %s: %s: %llu samples with a value of 0 or less skipped\n",
			c->cmd, path, (unsigned long long)info.skipped);
	if (outside)
		return 0;
	c->unmatched += info.unmatched;
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

/* Reads every input of paths[0..n) (files, directories) into p, samples
 * selected by sel. 0 or 1. */
static int read_inputs(struct view_common *c, const char *const *paths, size_t n,
		       const struct label_match *sel, struct profile *p)
{
	struct inputs in = { 0 };
	int status = 0;

	c->outside = c->unmatched = 0;
	c->lim.match = sel;
	for (size_t i = 0; i < n && !status; i++)
		status = expand_input(c, paths[i], &in);
	for (size_t i = 0; i < in.n && !status; i++)
		status = read_input(c, in.paths[i], p);
	if (!status && c->outside)
		fprintf(stderr, "kiln %s: %" PRIu64 " of %zu files outside --from/--until\n",
			c->cmd, c->outside, in.n);
	if (!status && sel)
		fprintf(stderr, "kiln %s: %" PRIu64 " samples selected by the labels, %" PRIu64
			" not\n", c->cmd, profile__total(p), c->unmatched);
	inputs_release(&in);
	return status;
}

/* "kiln CMD: a, b, c" from the input names, cut to fit. */
static void default_title(struct view_common *c, const char *const *paths, size_t n)
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

/* kiln view once its options are read: merge files[0..n) into one
 * output. The exit status. */
static int view_files(struct view_common *c, enum profile_format fmt, bool folded_labels,
		      const char **files, size_t n)
{
	struct profile *p;
	struct pprof_meta pmeta;
	struct html_meta hmeta;
	int status = 0, err;
	FILE *f;

	if (!fmt)
		fmt = to_stdout(c) ? PROFILE_FORMAT_HTML : profile_format__from_path(c->output);
	if (!fmt)
		return bad_value(c, "--output", c->output, "cannot tell the format from the name: "
				 "use .html, .pb.gz, .pprof, .folded or .txt, or give --format");
	if (fmt == PROFILE_FORMAT_PPROF && to_stdout(c) && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "kiln view: pprof is binary: give -o FILE\n");
		return 2;
	}
	default_title(c, files, n);

	p = profile__new();
	if (!p) {
		fprintf(stderr, "kiln view: out of memory\n");
		return 1;
	}
	status = setup_filters(c, "--match", c->match, c->nmatch, &c->sel) ? 2 :
		 read_inputs(c, files, n, c->sel, p);
	if (!status && fmt == PROFILE_FORMAT_PPROF && c->info.type[0] &&
	    strcmp(c->info.type, "samples")) {
		fprintf(stderr, "kiln view: pprof output holds sample counts, and the input's "
			"values are %s/%s: write html or folded\n", c->info.type, c->info.unit);
		status = 1;
	}
	if (!status && !profile__total(p))
		fprintf(stderr, "kiln view: the input holds no samples\n");
	if (!status && (f = open_output(c))) {
		pmeta = (struct pprof_meta){
			.period_ns = c->info.period_ns, .time_nanos = c->info.time_nanos,
			.duration_nanos = c->info.duration_nanos,
		};
		hmeta = html_meta_of(c);
		err = profile__write(p, fmt, &pmeta, &hmeta, folded_labels, f);
		status = close_output(c, f, err);
	} else if (!status) {
		status = 1;
	}
	profile__free(p);
	return status;
}

int view_main(int argc, char **argv)
{
	struct view_opts o = { 0 };
	struct config_list files;
	enum profile_format fmt;
	bool done;
	int status = parse_view_args(&view_command, &o, argc, argv, &files, &done);

	if (done)
		return status;
	if (!files.n) {
		fprintf(stderr, "kiln view: no input files (try 'kiln view --help')\n");
		status = 2;
	} else {
		fmt = o.format ? profile_format__parse(o.format) : PROFILE_FORMAT_NONE;
		status = view_files(&o.c, fmt, o.folded_labels, files.items, files.n);
	}
	label_match__free(o.c.sel);
	config__release_command(&view_command, &o, &files);
	return status;
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

/* --server's query span when --from/--until are not given. */
#define QUERY_DEFAULT_SPAN_NS (24 * 3600 * 1000000000ll)

/* diff --server: one side, the profiles the server holds for selector
 * (braces added when it has none) merged into p. 0, or 2 after one line
 * saying why. */
static int query_input(struct view_opts *o, struct http_client *hc, const char *server,
		       const char *selector, struct profile *p)
{
	struct view_common *c = &o->c;
	int64_t until = c->until_ns ? c->until_ns : (int64_t)time(NULL) * 1000000000;
	int64_t from = c->from_ns ? c->from_ns : until - QUERY_DEFAULT_SPAN_NS;
	struct read_info info = { 0 };
	struct http_result res;
	char *sel = NULL, *url = NULL, shown[512];
	uint8_t *req = NULL, *answer = NULL;
	size_t req_len = 0, len = 0;
	int status = 2, err;

	url__redact(server, shown, sizeof(shown));
	if (asprintf(&sel, selector[0] == '{' ? "%s" : "{%s}", selector) < 0 ||
	    asprintf(&url, "%s%s", server, PYROSCOPE_SELECT_MERGE_PATH) < 0 ||
	    pyroscope__select_merge_request(o->profile_type, sel, from / 1000000, until / 1000000,
					    &req, &req_len)) {
		fprintf(stderr, "kiln diff: out of memory\n");
		goto out;
	}
	err = http_client__post_read(hc, url, "application/proto", req, req_len, c->lim.max_bytes,
				     &answer, &len, &res);
	if (err) {
		fprintf(stderr, "kiln diff: --server %s: %s: %s\n", shown, sel,
			res.error[0] ? res.error : strerror(-err));
		goto out;
	}
	if (res.status != 200) {
		fprintf(stderr, "kiln diff: --server %s: %s: the server answered %ld%s%s\n", shown, sel,
			res.status, res.message[0] ? ": " : "", res.message);
		goto out;
	}
	err = profile__read(p, answer ? answer : (const uint8_t *)"", len, &c->lim, &info);
	if (err) {
		fprintf(stderr, "kiln diff: --server %s: %s: the answer is not a profile (%s)\n", shown,
			sel, info.why[0] ? info.why : strerror(-err));
		goto out;
	}
	snprintf(c->unit, sizeof(c->unit), "%s", info.type);
	status = 0;
out:
	free(sel);
	free(url);
	free(req);
	free(answer);
	return status;
}

/* BASE and NEW from --server's query API into base and cur. 0 or 2. */
static int query_sides(struct view_opts *o, const char *const *sels, struct profile *base,
		       struct profile *cur)
{
	struct view_common *c = &o->c;
	struct http_client *hc = NULL;
	char *server;
	int status = 2;

	if (c->nmatch || o->nbase_match) {
		fprintf(stderr, "kiln diff: with --server the selectors are BASE and NEW: no --match or --base-match\n");
		return 2;
	}
	server = server_opts__url("diff", o->server, &o->http, o->allow_insecure_credentials);
	if (!server)
		return 2;
	hc = http_client__new(&o->http);
	if (hc && !setup_filters(c, "--match", NULL, 0, &c->sel) &&
	    !query_input(o, hc, server, sels[0], base))
		status = query_input(o, hc, server, sels[1], cur);
	http_client__free(hc);
	free(server);
	return status;
}

/* kiln diff once its options are read; paths: BASE and NEW. */
static int diff_files(struct view_opts *o, const char *const *paths)
{
	struct view_common *c = &o->c;
	struct regression_rule rule = { .points = -1 };
	struct label_match *base_sel = NULL;
	struct profile *base = NULL, *cur = NULL;
	struct profile_diff *d = NULL;
	bool html = o->format && !strcmp(o->format, "html");
	bool format_given = o->format != NULL;
	char *rule_text = NULL;
	struct html_meta hmeta;
	int status = 0, err;
	FILE *f;

	if (o->fail_on) {
		rule_text = strdup(o->fail_on);
		if (!rule_text) {
			fprintf(stderr, "kiln diff: out of memory\n");
			return 2;
		}
		if (parse_rule(c, rule_text, &rule)) {
			free(rule_text);
			return 2;
		}
	}
	if (!format_given && !to_stdout(c)) {
		size_t len = strlen(c->output);

		html = profile_format__from_path(c->output) == PROFILE_FORMAT_HTML;
		if (!html && (len < 5 || strcmp(c->output + len - 4, ".txt"))) {
			status = bad_value(c, "--output", c->output, "cannot tell the format from "
					   "the name: use .html or .txt, or give --format");
			goto cleanup;
		}
	}
	default_title(c, paths, 2);

	base = profile__new();
	cur = profile__new();
	if (!base || !cur) {
		fprintf(stderr, "kiln diff: out of memory\n");
		status = 2;
		goto cleanup;
	}
	if (o->server ? query_sides(o, paths, base, cur) :
	    setup_filters(c, "--match", c->match, c->nmatch, &c->sel) ||
	    setup_filters(c, "--base-match", o->base_match, o->nbase_match, &base_sel) ||
	    read_inputs(c, &paths[0], 1, o->nbase_match ? base_sel : c->sel, base) ||
	    read_inputs(c, &paths[1], 1, c->sel, cur)) {
		status = 2;
		goto cleanup;
	}
	for (int i = 0; i < 2; i++) {
		if (!profile__total(i ? cur : base)) {
			fprintf(stderr, "kiln diff: %s: no samples to compare\n", paths[i]);
			status = 2;
			goto cleanup;
		}
	}
	d = profile_diff__new(base, cur);
	f = d ? open_output(c) : NULL;
	if (!f) {
		if (!d)
			fprintf(stderr, "kiln diff: out of memory\n");
		status = 2;
		goto cleanup;
	}
	hmeta = html_meta_of(c);
	hmeta.time_nanos = hmeta.duration_nanos = 0;    /* two spans, not one */
	err = html ? html__write_diff(base, cur, &hmeta, f) :
		     profile_diff__write_text(d, o->top, f);
	if (close_output(c, f, err))
		status = 2;
	else if (rule.points >= 0)
		status = check_regressions(d, &rule);
cleanup:
	profile_diff__free(d);
	profile__free(base);
	profile__free(cur);
	label_match__free(base_sel);
	free(rule_text);
	return status;
}

int diff_main(int argc, char **argv)
{
	struct view_opts o = { 0 };
	struct config_list files;
	bool done;
	int status = parse_view_args(&diff_command, &o, argc, argv, &files, &done);

	if (done)
		return status;
	if (files.n != 2) {
		fprintf(stderr, "kiln diff: give two profiles, BASE and NEW (try 'kiln diff --help')\n");
		status = 2;
	} else {
		status = diff_files(&o, files.items);
	}
	label_match__free(o.c.sel);
	config__release_command(&diff_command, &o, &files);
	return status;
}
