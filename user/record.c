// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: record runs the whole pipeline in one thread: the ring buffer is
 * read as it fills and at least every second (every 100 ms with a COMMAND
 * or -p, see pipeline.c; new processes are snapshotted as they appear),
 * the samples are drained every 10 s, and every drained
 * sample is symbolized at once and added to one profile, written at the end.
 * With a COMMAND, kiln forks it, registers the child in the BPF pid filter
 * (children inherit), and only then lets it exec, so no sample of it is
 * missed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/file.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/preflight.h"
#include "agent_export.h"
#include "core/url.h"
#include "pipeline.h"
#include "server_opts.h"
#include "proc/proc.h"
#include "options.h"
#include "profile/profile.h"
#include "record.h"
#include "stats.h"
#include "symbolize/symbolizer.h"

#define MAX_PIDS 1024

/* What the options give; pipe goes to pipeline__open as it is. */
struct record_opts {
	struct pipeline_opts pipe;
	double duration;                /* 0: until Ctrl-C / COMMAND exits */
	struct config_list pid_args;    /* -p, checked into pids */
	pid_t pids[MAX_PIDS];
	size_t npids;
	const char *output;
	unsigned output_mode;
	const char *format_name;
	enum profile_format format;
	const char *stats_path;
	uint64_t debuginfod_wait_ns;    /* at the end, for the lookups under way */
	const char *group_by;           /* NULL: one profile */
	bool folded_labels;             /* --folded-labels */
	bool quiet;
	unsigned verbose;
	const char *config;
	struct config_list command_args; /* COMMAND [ARGS...] */
	char **command;                 /* NULL-terminated copy of command_args */
	/* --server: the run's profiles pushed, one series per label set */
	const char *server;
	struct http_client_opts http;
	bool allow_insecure_credentials;
	uint64_t queue_max_bytes, push_max_stacks, push_max_bytes;
	double push_timeout;
};

struct record {
	struct record_opts o;
	struct pipeline *pipe;
	struct profile_set *profiles;   /* taken from the pipeline at the end */
	pid_t child;
	int child_status;
	bool child_done;
	bool tty;                       /* a status line each second */
	bool no_file;                   /* --server without -o: push only */
	char *server;                   /* --server checked, without a trailing '/' */
	struct sender *sender;
	uint64_t start, next_status;    /* CLOCK_MONOTONIC */
	char default_output[64];
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

#define R struct record_opts
static const struct config_option record_options[] = {
	OPTIONS_FREQUENCY(R),
	CONFIG_ROW_SECONDS(R, duration, "duration", 'd', "SECONDS", NULL, 0.001, 31536000,
			   "stop after this long (default: Ctrl-C or COMMAND exit)"),
	CONFIG_ROW_LIST(R, pid_args.items, pid_args.n, "pid", 'p', "PID",
			"profile only this process (repeatable, at most 1024)"),
	CONFIG_ROW_STRING(R, output, "output", 'o', "FILE", NULL,
			  "output file (default kiln-<timestamp>.pb.gz); the format follows the extension: .pb.gz .pprof = pprof (gzip), .folded .txt = folded stacks (FlameGraph), .html .htm = a flame graph page"),
	CONFIG_ROW_CHOICE(R, format_name, "format", "FMT", NULL, "pprof|folded|html",
			  "pprof, folded or html, whatever the extension"),
	OPTIONS_OUTPUT(R),
	OPTIONS_TAGS(R),
	CONFIG_ROW_STRING(R, server, "server", 0, "URL", NULL,
			  "also push the run's profiles to this Pyroscope server, one series per label set as the agent does (without -o: no file)"),
	OPTIONS_SERVER(R),
	OPTIONS_PUSH(R),
	CONFIG_ROW_SECONDS(R, push_timeout, "push-timeout", 0, "SECONDS", "30", 0, 3600,
			   "after the run, time to deliver the profiles to --server (retrying as the agent does)"),
	CONFIG_ROW_BOOL(R, folded_labels, "folded-labels", 0,
			"folded output: each stack's labels as a first frame {name=value,...} (kiln view reads them back; off for FlameGraph)"),
	CONFIG_ROW_STRING(R, group_by, "group-by", 0, "LABEL", NULL,
			  "one output per value of LABEL (service_name, namespace, pod, container, systemd_unit, ...): FILE.<value>.<ext>"),
	OPTIONS_LIMITS(R),
	OPTIONS_DEBUGINFOD(R),
	CONFIG_ROW_DURATION_NS(R, debuginfod_wait_ns, "debuginfod-wait", "5s", 0, 3600,
			       "at the end, wait at most this long for the debug files still being fetched, then write the profile (the frames that waited for one are named with it)"),
	CONFIG_ROW_STRING(R, stats_path, "stats", 0, "FILE", NULL,
			  "also write the run's counters as JSON"),
	CONFIG_ROW_BOOL(R, quiet, "quiet", 'q', "no live status line"),
	CONFIG_ROW_COUNT(R, verbose, "verbose", 'v', "more logging (twice: debug, libbpf included)"),
	OPTIONS_CONFIG(R),
};
#undef R

const struct config_command record_command = {
	.name = "record",
	.synopsis = "[OPTIONS] [-- COMMAND [ARGS...]]",
	.about =
		"Profiles every CPU of this host (or the given pids, or COMMAND and every\n"
		"process it starts) until the duration ends, Ctrl-C, or COMMAND exits, then\n"
		"writes one profile. Needs root (or CAP_BPF + CAP_PERFMON).\n"
		"\n"
		"Every option can also be set in the environment (the name shown) or in a\n"
		"--config file, as for kiln agent.\n",
	.notes =
		"Exit status: COMMAND's status when one is given, else 0; 2 for bad usage or a\n"
		"host that cannot run kiln (the message says what to do); 1 for other failures.\n",
	.rows = CONFIG_ROWS(record_options),
	.args = CONFIG_ARGS_TAIL,
	.env = true,
};

static int bad_value(const char *flag, const char *value, const char *want)
{
	fprintf(stderr, "kiln record: invalid value '%s' for %s: %s\n", value, flag, want);
	return 2;
}

/* What the table cannot say: pids, the group label, COMMAND, the output's
 * name and format. 0 or 2 after one line saying why. */
static int check_args(struct record *r)
{
	struct record_opts *o = &r->o;
	uint64_t v;

	if (o->pid_args.n > MAX_PIDS)
		return bad_value("--pid", o->pid_args.items[MAX_PIDS], "too many pids");
	for (size_t i = 0; i < o->pid_args.n; i++) {
		if (parse_u64(o->pid_args.items[i], 1, 4194304, &v))
			return bad_value("--pid", o->pid_args.items[i], "a process id");
		o->pids[o->npids++] = (pid_t)v;
	}
	if (o->group_by && (!*o->group_by || strchr(o->group_by, '=')))
		return bad_value("--group-by", o->group_by, "a label name such as pod or service_name");
	for (unsigned i = 0; i < o->verbose; i++)
		log_level = log_level < LOG_INFO ? LOG_INFO : LOG_DEBUG;
	if (o->command_args.n) {
		/* execvp wants a NULL-terminated array. */
		o->command = calloc(o->command_args.n + 1, sizeof(*o->command));
		if (!o->command) {
			fprintf(stderr, "kiln: out of memory\n");
			return 1;
		}
		memcpy(o->command, o->command_args.items, o->command_args.n * sizeof(*o->command));
	}
	if (o->command && o->npids)
		return bad_value("--pid", "...", "give either pids or a COMMAND, not both");
	o->pipe.sampler.filter = o->command || o->npids;
	if (o->server) {
		r->server = server_opts__url("record", o->server, &o->http,
					     o->allow_insecure_credentials);
		if (!r->server)
			return 2;
		/* Checks the credentials' files now, before the run. */
		r->sender = sender__new(&sender_pyroscope, &o->http, o->queue_max_bytes);
		if (!r->sender)
			return 2;
		r->no_file = !o->output;
	}
	if (!o->output) {
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(r->default_output, sizeof(r->default_output),
			 "kiln-%Y%m%d-%H%M%S.pb.gz", &tm);
		o->output = r->default_output;
	}
	o->format = o->format_name ? profile_format__parse(o->format_name) :
		    profile_format__from_path(o->output);
	if (!o->format)
		return bad_value("--output", o->output,
				 "cannot tell the format from the name: use .pb.gz, .pprof, .folded, .txt or .html, or give --format");
	return 0;
}

/* Forks COMMAND stopped on a pipe; start_child() lets it exec. */
static int spawn_child(struct record *r, int *go_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char c;

		close(fds[1]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (read(fds[0], &c, 1) != 1)
			_exit(127);     /* kiln gave up before starting us */
		execvp(r->o.command[0], r->o.command);
		fprintf(stderr, "kiln record: cannot run '%s': %s\n", r->o.command[0], strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	r->child = pid;
	*go_fd = fds[1];
	return 0;
}

static bool pids_alive(const struct record *r)
{
	for (size_t i = 0; i < r->o.npids; i++)
		if (kill(r->o.pids[i], 0) == 0 || errno == EPERM)
			return true;
	return false;
}

static void status_line(struct record *r, uint64_t elapsed_ns)
{
	struct proc_stats ps;

	proc_table__stats(pipeline__procs(r->pipe), &ps);
	fprintf(stderr, "\r\033[Kkiln: %.0f s, %" PRIu64 " samples, %zu processes",
		elapsed_ns / 1e9, pipeline__totals(r->pipe)->drained, ps.live);
	fflush(stderr);
}

struct output {
	const struct profile *profile;
	const struct pprof_meta *meta;
	const struct html_meta *hmeta;
	enum profile_format format;
	bool folded_labels;
};

static int fill_output(FILE *f, void *ctx)
{
	const struct output *out = ctx;

	return profile__write(out->profile, out->format, out->meta, out->hmeta,
			     out->folded_labels, f);
}

/* --group-by: "cpu.pb.gz" + value "web" -> "cpu.web.pb.gz" (value made
 * file-name safe; "" -> "none"). */
static void group_path(const char *output, const char *value, char *buf, size_t n)
{
	static const char *const exts[] = { ".pb.gz", ".pprof", ".folded", ".txt", ".html",
					    ".htm" };
	size_t len = strlen(output), stem = len, pos;

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t el = strlen(exts[i]);

		if (len > el && strcmp(output + len - el, exts[i]) == 0) {
			stem = len - el;
			break;
		}
	}
	pos = (size_t)snprintf(buf, n, "%.*s.", (int)stem, output);
	file__append_safe_name(buf, n, &pos, *value ? value : "none", strlen(output + stem));
	snprintf(buf + pos, n - pos, "%s", output + stem);
}

/* Writes the output(s); prints one line per file. 0 or the first error. */
static int write_outputs(struct record *r, uint64_t start_unix_ns, uint64_t duration_ns)
{
	struct pprof_meta meta = {
		.period_ns = 1000000000ull / r->o.pipe.sampler.frequency,
		.time_nanos = (int64_t)start_unix_ns,
		.duration_nanos = (int64_t)duration_ns,
	};
	struct html_meta hmeta = {
		.time_nanos = meta.time_nanos, .duration_nanos = meta.duration_nanos,
	};
	struct output out = { NULL, &meta, &hmeta, r->o.format, r->o.folded_labels };
	const char *kind = profile_format__name(r->o.format);
	char title[320], host[256] = "";
	size_t n = profile_set__count(r->profiles);
	uint64_t bytes = 0;
	struct profile *empty = NULL;
	char path[4096];
	int err = 0, e;

	if (r->no_file)
		return 0;
	gethostname(host, sizeof(host) - 1);
	snprintf(title, sizeof(title), "kiln record on %s: %s", host,
		 r->o.command ? r->o.command[0] : r->o.npids ? "the given pids" : "every CPU");
	hmeta.title = title;
	if (!r->o.group_by || n == 0) {
		/* One output, empty when nothing was sampled: say so honestly. */
		if (n)
			out.profile = profile_set__entry(r->profiles, 0)->profile;
		else
			out.profile = empty = profile__new();
		if (!out.profile)
			return -ENOMEM;
		err = file__write_atomic(r->o.output, r->o.output_mode, fill_output, &out, &bytes);
		if (err)
			pr_error("%s: cannot write the profile: %s", r->o.output,
				 err == -EPERM ? "refused (above)" : strerror(-err));
		else
			fprintf(stderr, "kiln: wrote %s (%s, %" PRIu64 " bytes)\n", r->o.output, kind, bytes);
		profile__free(empty);
		return err;
	}
	for (size_t i = 0; i < n; i++) {
		struct profile_set_entry *en = profile_set__entry(r->profiles, i);
		const char *v = labels__get(&en->labels, r->o.group_by);

		group_path(r->o.output, v ? v : "", path, sizeof(path));
		out.profile = en->profile;
		e = file__write_atomic(path, r->o.output_mode, fill_output, &out, &bytes);
		if (e)
			pr_error("%s: cannot write the profile: %s", path,
				 e == -EPERM ? "refused (above)" : strerror(-e));
		else
			fprintf(stderr, "kiln: wrote %s (%s=%s, %s, %" PRIu64 " samples, %" PRIu64 " bytes)\n",
				path, r->o.group_by, v && *v ? v : "(none)", kind,
				profile__total(en->profile), bytes);
		err = err ? err : e;
	}
	return err;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

static int cmp_samples_desc(const void *a, const void *b)
{
	const struct profile_set_entry *x = *(const struct profile_set_entry *const *)a;
	const struct profile_set_entry *y = *(const struct profile_set_entry *const *)b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

/* The label sets seen, most samples first (at most 10 lines). */
static void summary_labels(struct record *r)
{
	struct profile_set *seen = pipeline__label_sets_seen(r->pipe);
	size_t n = profile_set__count(seen), shown = n < 10 ? n : 10;
	struct profile_set_entry **order = calloc(n ? n : 1, sizeof(*order));

	if (!order)
		return;
	for (size_t i = 0; i < n; i++)
		order[i] = profile_set__entry(seen, i);
	qsort(order, n, sizeof(*order), cmp_samples_desc);
	fprintf(stderr, "kiln: %zu label sets%s\n", n, n > shown ? " (10 largest shown)" : "");
	for (size_t i = 0; i < shown; i++) {
		const char *name, *value;
		size_t pos = 0;

		fprintf(stderr, "kiln:   %8" PRIu64 " samples ", order[i]->samples);
		while (labels__next(&order[i]->labels, &pos, &name, &value))
			if (strcmp(name, "node"))       /* the same on every line */
				fprintf(stderr, " %s=%s", name, value);
		fputc('\n', stderr);
	}
	free(order);
}

/* After the run: waits at most --debuginfod-wait for the debug files still
 * being fetched, saying so, then names the samples that waited for them. */
static void wait_debug_files(struct record *r)
{
	uint64_t start = monotonic_ns(), deadline = start + r->o.debuginfod_wait_ns, now;
	size_t left = pipeline__wait_lookups(r->pipe, 0), waiting = left;

	if (left && !r->o.quiet)
		fprintf(stderr, "kiln: waiting up to %.1f s for %zu debug file%s from debuginfod (--debuginfod-wait)\n",
			r->o.debuginfod_wait_ns / 1e9, left, left == 1 ? "" : "s");
	while (left && (now = monotonic_ns()) < deadline) {
		if (r->tty) {
			fprintf(stderr, "\r\033[Kkiln: waiting for %zu debug file%s from debuginfod, %.0f s left",
				left, left == 1 ? "" : "s", (deadline - now) / 1e9);
			fflush(stderr);
		}
		left = pipeline__wait_lookups(r->pipe, deadline - now < 1000000000ull ?
							deadline - now : 1000000000ull);
	}
	if (waiting && r->tty)
		fprintf(stderr, "\r\033[K");
	if (waiting && !r->o.quiet)
		fprintf(stderr, "kiln: debuginfod: %zu of %zu lookups ended in %.1f s%s\n",
			waiting - left, waiting, (monotonic_ns() - start) / 1e9,
			left ? "; the others were given up" : "");
	pipeline__name_held(r->pipe);
}

/* Prints the run's summary from *s, which it fills. */
/* How user stacks were walked: with tables (and how far) or by frame
 * pointers, and what the tables cost. */
static void summary_unwind(const struct kiln_stats *s)
{
	const uint64_t *w = s->walker;
	const struct unwinder_stats *u = &s->unwinder;
	uint64_t errors = 0;

	if (!u->rows_cap) {
		fprintf(stderr, "kiln: user stacks walked by frame pointers only (--unwind-memory 0, or not x86-64)\n");
		return;
	}
	for (int i = KILN_UW_ERR_NO_MAPPING; i < KILN_UW_STAT_COUNT; i++)
		errors += w[i];
	fprintf(stderr, "kiln: user stacks: %" PRIu64 " walked with unwind tables (%.1f%% reached the thread's root, %" PRIu64
		" truncated, %" PRIu64 " stopped early), %" PRIu64
		" by frame pointers (process not loaded yet); tables of %" PRIu64
		" files, %" PRIu64 " of %" PRIu64 " rows, built in %.0f ms\n",
		w[KILN_UW_WALKS], pct(w[KILN_UW_ROOT], w[KILN_UW_WALKS]), w[KILN_UW_TRUNCATED],
		errors, w[KILN_UW_NO_PROC], u->tables_loaded, u->rows_used, u->rows_cap,
		u->build_ns / 1e6);
	if (u->cache_dir) {
		char written[64] = ", none written";

		/* (nothing written: the directory was not counted) */
		if (u->cache.counted)
			snprintf(written, sizeof(written),
				 " and %" PRIu64 " written, %.1f MB on disk", u->cache.writes,
				 u->cache.bytes / 1e6);
		fprintf(stderr,
			"kiln: unwind table cache %s: %" PRIu64
			" tables loaded in %.0f ms, %" PRIu64 " built%s\n",
			u->cache_dir, u->cache.hits, u->cache_ns / 1e6, u->cache.misses, written);
	} else
		fprintf(stderr, "kiln: unwind tables not cached on disk (--unwind-cache%s)\n",
			u->cache.refused[TABLE_CACHE_DIR] ? ": its directory could not be used" : " none");
}

static void summary(struct record *r, double seconds, struct kiln_stats *sp)
{
	struct sampler *smp = pipeline__sampler(r->pipe);
	struct kiln_stats s = { 0 };
	const struct pipeline_totals *t = &s.t;
	const struct symbolizer_stats *ss = &s.sym;
	uint64_t dropped = 0;
	struct rusage ru;

	stats__collect(&s, r->pipe);
	s.seconds = seconds;
	s.frequency = r->o.pipe.sampler.frequency;
	s.cpus = sampler__cpus(smp);
	s.label_sets = profile_set__count(pipeline__label_sets_seen(r->pipe));
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		s.max_rss_kb = (uint64_t)ru.ru_maxrss;
		s.cpu_user_ms = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
		s.cpu_sys_ms = ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
	}
	for (int i = KILN_DROP_STACK_FULL; i < KILN_OUTCOME_COUNT; i++)
		dropped += t->outcomes[i];

	fprintf(stderr, "kiln: %.1f s at %u Hz on %u CPUs: %" PRIu64 " samples, %" PRIu64
		" processes\n", seconds, r->o.pipe.sampler.frequency, sampler__cpus(smp),
		t->drained, s.procs.snapshots + s.procs.snapshot_failures);
	fprintf(stderr, "kiln: dropped %" PRIu64, dropped);
	for (int i = KILN_DROP_STACK_FULL; i < KILN_OUTCOME_COUNT; i++)
		fprintf(stderr, "%s%s %" PRIu64, i == KILN_DROP_STACK_FULL ? " (" : ", ",
			kiln_outcome_names[i], t->outcomes[i]);
	fprintf(stderr, "); not profiled: idle %" PRIu64 ", other processes %" PRIu64
		", after the window %" PRIu64 ", filtered by labels %" PRIu64
		"; process events lost %" PRIu64 "\n",
		t->outcomes[KILN_SKIP_IDLE], t->outcomes[KILN_SKIP_FILTERED],
		t->outcomes[KILN_SKIP_LATE], t->filtered,
		s.events[KILN_EV_DROPPED]);
	fprintf(stderr, "kiln: frames symbolized %.1f%% (kernel %.1f%%, user %.1f%%); user stacks cut where the unwinder left the mappings %" PRIu64
		", inside execve %" PRIu64 "\n",
		pct(ss->kernel_resolved + ss->user_resolved, ss->kernel_frames + ss->user_frames),
		pct(ss->kernel_resolved, ss->kernel_frames), pct(ss->user_resolved, ss->user_frames),
		ss->user_stacks_cut, s.events[KILN_EV_EXEC_USER_SKIPPED]);
	summary_unwind(&s);
	fprintf(stderr, "kiln: memory: peak RSS %.1f MB; in the kernel, BPF maps %.1f MB and side-band rings %.1f MB\n",
		s.max_rss_kb * 1024 / 1e6, s.bpf_maps_bytes / 1e6, s.sideband_bytes / 1e6);
	/* The rest of the registry's summary counters, when not zero. */
	stats__summary(&s, stderr);
	summary_labels(r);
	if (t->invariant_failures || t->add_failures || t->label_sets_full)
		fprintf(stderr, "kiln: WARNING: %" PRIu64 " drains lost count, %" PRIu64
			" samples not added (out of memory), %" PRIu64
			" beyond the label-set bound\n", t->invariant_failures, t->add_failures,
			t->label_sets_full);
	*sp = s;
}

/* --stats, after the outputs were written, so it counts their refusals. */
static void write_stats(struct record *r, struct kiln_stats *s)
{
	int err;

	if (!r->o.stats_path)
		return;
	file__refusal_stats(s->output_refused);
	err = stats__write_json(s, r->o.stats_path);
	if (err)
		pr_error("%s: cannot write stats: %s", r->o.stats_path, strerror(-err));
}

/* --server: the run's profiles, one per label set, pushed as the agent
 * pushes an interval's (agent_export.c), then delivered for up to
 * --push-timeout. 0, or 1 after saying what was not delivered. */
static int push_run(struct record *r, uint64_t start_unix_ns, uint64_t duration_ns)
{
	struct agent_exporters x = {
		.sender = r->sender,
		.server = r->server,
		.frequency = r->o.pipe.sampler.frequency,
		.max_stacks = r->o.push_max_stacks,
		.max_bytes = r->o.push_max_bytes,
	};
	struct profile_set *set = profile_set__new(r->o.pipe.max_label_sets);
	struct agent_export_result res = { 0 };
	struct sender_stats ss = { 0 };
	char shown[512];
	int err = set ? 0 : -ENOMEM;
	uint64_t lost;

	url__redact(r->server, shown, sizeof(shown));
	for (size_t i = 0; !err && i < profile_set__count(r->profiles); i++)
		err = profile_set__split(set, profile_set__entry(r->profiles, i)->profile);
	if (err) {
		pr_error("--server %s: cannot split the profile by label set: %s", shown,
			 strerror(-err));
		profile_set__free(set);
		return 1;
	}
	res = agent_export__interval(&x, set, start_unix_ns, start_unix_ns + duration_ns, false);
	profile_set__free(set);
	sender__shutdown(r->sender, r->o.push_timeout);
	sender__stats(r->sender, &ss);
	lost = res.push.failures + ss.profiles_rejected + ss.profiles_dropped_full +
	       ss.profiles_dropped_shutdown + ss.profiles_dropped_old;
	if (!r->o.quiet || lost)
		fprintf(stderr, "kiln: pushed %" PRIu64 " of %zu profiles to %s%s\n",
			ss.profiles_sent, res.built + (size_t)res.push.failures, shown,
			res.push.capped ? " (some with their lightest stacks folded: --push-max-stacks, --push-max-bytes)" : "");
	if (!lost)
		return 0;
	pr_error("--server %s: %" PRIu64 " profiles not delivered: %" PRIu64 " refused by the server, %" PRIu64
		 " not sent within --push-timeout, %" PRIu64 " too old for it, %" PRIu64 " too large or not encoded",
		 shown, lost, ss.profiles_rejected, ss.profiles_dropped_shutdown + ss.profiles_dropped_full,
		 ss.profiles_dropped_old, res.push.failures);
	return 1;
}

/* The loop's stop hook: Ctrl-C, the COMMAND's exit, the -p processes'
 * end; and the status line on a terminal, once a second. */
static bool record_done(void *ctx, uint64_t now)
{
	struct record *r = ctx;

	if (stop_requested)
		return true;
	if (r->child && waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
		r->child_done = true;
		return true;
	}
	if (r->o.npids && !pids_alive(r))
		return true;
	if (r->tty && now >= r->next_status) {
		status_line(r, now - r->start);
		r->next_status = now + 1000000000ull;
	}
	return false;
}

static int run(struct record *r)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct pipeline_loop loop = {
		.drain_every_ns = SAMPLER_DRAIN_NS, .first_drain_ns = PIPELINE_FIRST_DRAIN_NS,
		.stop = record_done, .ctx = r,
	};
	uint64_t start, deadline, elapsed;
	struct kiln_stats stats;
	struct timespec wall;
	int go_fd = -1, err, pushed = 0;

	/* An output directory that is refused is refused now, not after the
	 * run (the refusal is logged); others errors show when writing. */
	if (file__check_dir_of(r->o.output) == -EPERM)
		return 2;
	if (preflight__check())
		return 2;
	/* One profile, or one per --group-by value; metadata's defaults give
	 * the labels --group-by and the summary use. */
	r->o.pipe.max_label_sets = 4096;
	r->o.pipe.group_by = r->o.group_by ? r->o.group_by : "";
	r->o.pipe.track_label_sets = true;
	r->o.pipe.label_frames = true;
	r->o.pipe.wait_for_names = true;
	r->o.pipe.count_cache_on_write = true;
	r->pipe = pipeline__open(&r->o.pipe);
	if (!r->pipe)
		return errno == ENOMEM ? 1 : 2;
	for (size_t i = 0; i < r->o.npids; i++)
		if (pipeline__filter_add(r->pipe, r->o.pids[i], KILN_FILTER_SELF))
			return 1;
	if (r->o.command) {
		err = spawn_child(r, &go_fd);
		if (err) {
			pr_error("cannot start '%s': %s", r->o.command[0], strerror(-err));
			return 1;
		}
		if (pipeline__filter_add(r->pipe, r->child,
					 KILN_FILTER_SELF | KILN_FILTER_CHILDREN))
			return 1;
	}
	/* The window starts before the first perf event is opened: attaching
	 * also reads kallsyms (hundreds of ms on a slow guest) while samples
	 * are already being taken, and they belong to the window. */
	clock_gettime(CLOCK_REALTIME, &wall);
	start = monotonic_ns();
	deadline = r->o.duration > 0 ? start + (uint64_t)(r->o.duration * 1e9) : UINT64_MAX;
	/* Exact however long attaching (kallsyms) or stopping takes. */
	if (deadline != UINT64_MAX)
		sampler__set_window_end(pipeline__sampler(r->pipe), deadline);
	if (pipeline__attach(r->pipe))
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			pr_warn("cannot start the command: %s", strerror(errno));
		close(go_fd);
	}

	r->tty = isatty(STDERR_FILENO) && !r->o.quiet;
	r->next_status = start + 1000000000ull;
	r->start = start;
	if (!r->o.quiet)
		fprintf(stderr, "kiln: profiling %s at %u Hz%s\n",
			r->o.command ? r->o.command[0] : r->o.npids ? "the given pids" : "every CPU",
			r->o.pipe.sampler.frequency, r->o.duration > 0 ? "" : "; Ctrl-C stops");
	loop.start_ns = start;
	loop.deadline_ns = deadline == UINT64_MAX ? 0 : deadline;
	err = pipeline__run(r->pipe, &loop);
	if (err)
		pr_error("reading process events failed: %s", strerror(-err));
	elapsed = loop.stopped_ns - start;
	if (r->tty)
		fprintf(stderr, "\r\033[K");
	wait_debug_files(r);
	r->profiles = pipeline__take(r->pipe);
	if (!r->profiles) {
		pr_error("out of memory");
		return 1;
	}
	summary(r, elapsed / 1e9, &stats);
	err = write_outputs(r, (uint64_t)wall.tv_sec * 1000000000ull + wall.tv_nsec, elapsed);
	write_stats(r, &stats);
	if (r->sender)
		pushed = push_run(r, (uint64_t)wall.tv_sec * 1000000000ull + wall.tv_nsec, elapsed);
	if (err)
		return 1;
	if (r->child && !r->child_done) {
		if (!r->o.quiet)
			fprintf(stderr, "kiln: profiling stopped; waiting for '%s' (pid %d) to exit\n",
				r->o.command[0], r->child);
		while (waitpid(r->child, &r->child_status, 0) < 0 && errno == EINTR)
			;
		r->child_done = true;
	}
	/* The command's failure is what CI must see first; a push that
	 * failed after a command that passed fails the run too. */
	if (r->child_done) {
		if (WIFEXITED(r->child_status) && WEXITSTATUS(r->child_status))
			return WEXITSTATUS(r->child_status);
		if (WIFSIGNALED(r->child_status))
			return 128 + WTERMSIG(r->child_status);
	}
	return pushed;
}

int record_main(int argc, char **argv)
{
	struct record *r = calloc(1, sizeof(*r));
	int status;

	if (!r) {
		fprintf(stderr, "kiln: out of memory\n");
		return 1;
	}
	log_route_libbpf();
	status = config__parse_command(&record_command, &r->o, argc, argv, &r->o.command_args);
	if (status == 1) {
		config__usage(&record_command, stdout);
		status = 0;
	} else if (status == 0) {
		status = check_args(r);
		if (status == 0)
			status = run(r);
	}
	free(r->o.command);
	sender__free(r->sender);
	free(r->server);
	config__release_command(&record_command, &r->o, &r->o.command_args);
	pipeline__free(r->pipe);
	profile_set__free(r->profiles);
	free(r);
	return status;
}
