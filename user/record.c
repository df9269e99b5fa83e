/* DESIGN: record runs the whole pipeline in one thread: the ring buffer is
 * polled every 100 ms (new processes are snapshotted as they appear), the
 * BPF maps are drained every 2 s so they never fill, and every drained
 * sample is symbolized at once and added to one profile, written at the end.
 * With a COMMAND, kiln forks it, registers the child in the BPF pid filter
 * (children inherit), and only then lets it exec, so no sample of it is
 * missed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "core/elf.h"
#include "core/file.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/preflight.h"
#include "core/safe_open.h"
#include "pipeline.h"
#include "proc/proc.h"
#include "profile/profile.h"
#include "record.h"
#include "symbolize/symbolizer.h"

#define DRAIN_INTERVAL_NS (2000000000ull)
#define POLL_MS 100
#define MAX_PIDS 1024

struct record_opts {
	struct sampler_opts sampler;
	double duration;                /* 0: until Ctrl-C / COMMAND exits */
	pid_t pids[MAX_PIDS];
	size_t npids;
	const char *output;
	enum profile_format format;
	uint64_t cache_bytes;
	double cache_ttl;               /* seconds, 0: never */
	uint64_t max_processes;
	const char *stats_path;
	const char *group_by;           /* NULL: one profile */
	bool quiet;
	char **command;
};

struct record {
	struct record_opts o;
	struct pipeline *pipe;
	struct profile_set *profiles;   /* taken from the pipeline at the end */
	pid_t child;
	int child_status;
	int stats_fd;                   /* BPF_ENABLE_STATS, -1 when off */
	bool child_done;
	char default_output[64];
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: kiln record [OPTIONS] [-- COMMAND [ARGS...]]\n"
		"\n"
		"Profiles every CPU of this host (or the given pids, or COMMAND and every\n"
		"process it starts) until the duration ends, Ctrl-C, or COMMAND exits, then\n"
		"writes one profile. Needs root (or CAP_BPF + CAP_PERFMON).\n"
		"\n"
		"Options:\n"
		"  -F, --frequency HZ        samples per second per CPU (1-1000, default 97)\n"
		"  -d, --duration SECONDS    stop after this long (default: Ctrl-C or COMMAND exit)\n"
		"  -p, --pid PID             profile only this process (repeatable, at most %d)\n"
		"  -o, --output FILE         output file (default kiln-<timestamp>.pb.gz); the format\n"
		"                            follows the extension: .pb.gz .pprof = pprof (gzip),\n"
		"                            .folded .txt = folded stacks (FlameGraph), .html .htm =\n"
		"                            a flame graph page\n"
		"      --format FMT          pprof, folded or html, whatever the extension\n"
		"      --group-by LABEL      one output per value of LABEL (service_name, namespace,\n"
		"                            pod, container, systemd_unit, ...): FILE.<value>.<ext>\n"
		"      --include-idle        keep samples of the idle task (pid 0)\n"
		"      --counts-entries N    BPF counts map size per generation (default: CPUs x Hz x 10,\n"
		"                            rounded up to a power of two; bounds distinct stacks per drain)\n"
		"      --stack-entries N     BPF stack map size per generation (default: half the counts\n"
		"                            size, at least 8192; each entry holds 127 frames, ~1 KiB)\n"
		"      --max-processes N     processes tracked at once (default 32768)\n"
		"      --symbol-cache SIZE   ELF symbol cache bound, LRU (default 64M)\n"
		"      --symbol-cache-ttl DURATION\n"
		"                            free a binary's symbols once no sample needed them this\n"
		"                            long (90s, 10m, 1h; at most 168h; 0: never; default 10m)\n"
		"      --stats FILE          also write the run's counters as JSON (turns on BPF run-time stats)\n"
		"  -q, --quiet               no live status line\n"
		"  -v, --verbose             more logging (twice: debug, libbpf included)\n"
		"  -h, --help                this help\n"
		"\n"
		"Exit status: COMMAND's status when one is given, else 0; 2 for bad usage or a\n"
		"host that cannot run kiln (the message says what to do); 1 for other failures.\n",
		MAX_PIDS);
}

static int bad_value(const char *flag, const char *value, const char *want)
{
	fprintf(stderr, "kiln record: invalid value '%s' for %s: %s\n", value, flag, want);
	return 2;
}

static int parse_args(struct record *r, int argc, char **argv)
{
	enum { OPT_FORMAT = 256, OPT_IDLE, OPT_COUNTS, OPT_STACKS, OPT_MAXPROC, OPT_CACHE,
	       OPT_CACHE_TTL, OPT_STATS, OPT_GROUP };
	static const struct option longopts[] = {
		{ "frequency", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "include-idle", no_argument, NULL, OPT_IDLE },
		{ "counts-entries", required_argument, NULL, OPT_COUNTS },
		{ "stack-entries", required_argument, NULL, OPT_STACKS },
		{ "max-processes", required_argument, NULL, OPT_MAXPROC },
		{ "symbol-cache", required_argument, NULL, OPT_CACHE },
		{ "symbol-cache-ttl", required_argument, NULL, OPT_CACHE_TTL },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "group-by", required_argument, NULL, OPT_GROUP },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct record_opts *o = &r->o;
	uint64_t v;
	int c;

	o->sampler.frequency = 97;
	o->cache_bytes = 64ull << 20;
	o->cache_ttl = 600;
	o->max_processes = 32768;
	optind = 1;
	/* '+': stop at the first non-option, which starts COMMAND. */
	while ((c = getopt_long(argc, argv, "+F:d:p:o:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (parse_u64(optarg, 1, 1000, &v))
				return bad_value("--frequency", optarg, "a whole number of Hz from 1 to 1000");
			o->sampler.frequency = (unsigned)v;
			break;
		case 'd':
			if (parse_seconds(optarg, 0.001, 31536000, &o->duration))
				return bad_value("--duration", optarg, "seconds, more than 0");
			break;
		case 'p':
			if (parse_u64(optarg, 1, 4194304, &v))
				return bad_value("--pid", optarg, "a process id");
			if (o->npids == MAX_PIDS)
				return bad_value("--pid", optarg, "too many pids");
			o->pids[o->npids++] = (pid_t)v;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_FORMAT:
			o->format = profile_format__parse(optarg);
			if (!o->format)
				return bad_value("--format", optarg, "pprof, folded or html");
			break;
		case OPT_IDLE:
			o->sampler.include_idle = true;
			break;
		case OPT_COUNTS:
			if (parse_u64(optarg, 1024, 1u << 24, &v))
				return bad_value("--counts-entries", optarg, "1024 to 16777216");
			o->sampler.counts_entries = (uint32_t)v;
			break;
		case OPT_STACKS:
			if (parse_u64(optarg, 1024, 1u << 22, &v))
				return bad_value("--stack-entries", optarg, "1024 to 4194304");
			o->sampler.stack_entries = (uint32_t)v;
			break;
		case OPT_MAXPROC:
			if (parse_u64(optarg, 16, 1u << 22, &v))
				return bad_value("--max-processes", optarg, "16 to 4194304");
			o->max_processes = v;
			break;
		case OPT_CACHE:
			if (parse_size(optarg, 1 << 20, 1ull << 40, &o->cache_bytes))
				return bad_value("--symbol-cache", optarg, "a size such as 64M (at least 1M)");
			break;
		case OPT_CACHE_TTL:
			if (parse_duration(optarg, 0, 604800, &o->cache_ttl))
				return bad_value("--symbol-cache-ttl", optarg,
						 "a duration such as 90s, 10m or 1h (at most 168h; 0: never)");
			break;
		case OPT_STATS:
			o->stats_path = optarg;
			break;
		case OPT_GROUP:
			if (!*optarg || strchr(optarg, '='))
				return bad_value("--group-by", optarg, "a label name such as pod or service_name");
			o->group_by = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			log_level = log_level < LOG_INFO ? LOG_INFO : LOG_DEBUG;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "kiln record: try 'kiln record --help'\n");
			return 2;
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	if (o->command && o->npids)
		return bad_value("--pid", "...", "give either pids or a COMMAND, not both");
	o->sampler.filter = o->command || o->npids;
	o->sampler.process_entries = (uint32_t)o->max_processes;
	if (!o->output) {
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(r->default_output, sizeof(r->default_output),
			 "kiln-%Y%m%d-%H%M%S.pb.gz", &tm);
		o->output = r->default_output;
	}
	if (!o->format) {
		o->format = profile_format__from_path(o->output);
		if (!o->format)
			return bad_value("--output", o->output,
					 "cannot tell the format from the name: use .pb.gz, .pprof, .folded, .txt or .html, or give --format");
	}
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
};

static int fill_output(FILE *f, void *ctx)
{
	const struct output *out = ctx;

	return profile__write(out->profile, out->format, out->meta, out->hmeta, f);
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
		.period_ns = 1000000000ull / r->o.sampler.frequency,
		.time_nanos = (int64_t)start_unix_ns,
		.duration_nanos = (int64_t)duration_ns,
	};
	struct html_meta hmeta = {
		.time_nanos = meta.time_nanos, .duration_nanos = meta.duration_nanos,
	};
	struct output out = { NULL, &meta, &hmeta, r->o.format };
	const char *kind = profile_format__name(r->o.format);
	char title[320], host[256] = "";
	size_t n = profile_set__count(r->profiles);
	uint64_t bytes = 0;
	struct profile *empty = NULL;
	char path[4096];
	int err = 0, e;

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
		err = file__write_atomic(r->o.output, fill_output, &out, &bytes);
		if (err)
			pr_error("%s: cannot write the profile: %s", r->o.output, strerror(-err));
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
		e = file__write_atomic(path, fill_output, &out, &bytes);
		if (e)
			pr_error("%s: cannot write the profile: %s", path, strerror(-e));
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

/* Ends the --stats object: files and ELF parts refused, by reason
 * (core/safe_open.h, core/elf.h), and symbol tables not loaded. */
static void refusals_json(FILE *f, const struct symbolizer_stats *ss)
{
	struct safe_open_stats so;
	uint64_t elf[ELF_REFUSAL_COUNT];

	safe_open__stats(&so);
	elf__refusal_stats(elf);
	fprintf(f, ",\n \"symtab_loads\": %" PRIu64 ", \"symtab_failures\": %" PRIu64
		", \"files_opened\": %" PRIu64 ", \"files_refused\": {",
		ss->symtab_loads, ss->symtab_failures, so.opened);
	for (int i = 0; i < SAFE_OPEN_REFUSAL_COUNT; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", safe_open_refusal_names[i],
			so.refused[i]);
	fprintf(f, "},\n \"elf_refused\": {");
	for (int i = 0; i < ELF_REFUSAL_COUNT; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", elf_refusal_names[i], elf[i]);
	fprintf(f, "}}\n");
}

static void summary(struct record *r, double seconds)
{
	const struct pipeline_totals *t = pipeline__totals(r->pipe);
	struct sampler *smp = pipeline__sampler(r->pipe);
	uint64_t ev[KILN_EV_STAT_COUNT], dropped = 0, run_ns, run_cnt;
	struct symbolizer_stats ss;
	struct proc_stats ps;
	struct symcache_stats cs;
	struct rusage ru;
	FILE *f;

	sampler__event_stats(smp, ev);
	sampler__prog_stats(smp, &run_ns, &run_cnt);
	symbolizer__stats(pipeline__symbolizer(r->pipe), &ss);
	symbolizer__cache_stats(pipeline__symbolizer(r->pipe), &cs);
	proc_table__stats(pipeline__procs(r->pipe), &ps);
	for (int i = KILN_DROP_STACK_COLLISION; i < KILN_OUTCOME_COUNT; i++)
		dropped += t->outcomes[i];

	fprintf(stderr, "kiln: %.1f s at %u Hz on %u CPUs: %" PRIu64 " samples, %" PRIu64
		" processes\n", seconds, r->o.sampler.frequency, sampler__cpus(smp),
		t->drained, ps.snapshots + ps.snapshot_failures);
	fprintf(stderr, "kiln: dropped %" PRIu64, dropped);
	for (int i = KILN_DROP_STACK_COLLISION; i < KILN_OUTCOME_COUNT; i++)
		fprintf(stderr, "%s%s %" PRIu64, i == KILN_DROP_STACK_COLLISION ? " (" : ", ",
			kiln_outcome_names[i], t->outcomes[i]);
	fprintf(stderr, "); not profiled: idle %" PRIu64 ", other processes %" PRIu64
		", after the window %" PRIu64 ", filtered by labels %" PRIu64
		"; process events lost %" PRIu64 "\n",
		t->outcomes[KILN_SKIP_IDLE], t->outcomes[KILN_SKIP_FILTERED],
		t->outcomes[KILN_SKIP_LATE], t->filtered,
		ev[KILN_EV_DROPPED]);
	fprintf(stderr, "kiln: frames symbolized %.1f%% (kernel %.1f%%, user %.1f%%); user stacks cut where the unwinder left the mappings %" PRIu64
		", inside execve %" PRIu64 "\n",
		pct(ss.kernel_resolved + ss.user_resolved, ss.kernel_frames + ss.user_frames),
		pct(ss.kernel_resolved, ss.kernel_frames), pct(ss.user_resolved, ss.user_frames),
		ss.user_stacks_cut, ev[KILN_EV_EXEC_USER_SKIPPED]);
	summary_labels(r);
	if (t->invariant_failures || t->add_failures || t->label_sets_full)
		fprintf(stderr, "kiln: WARNING: %" PRIu64 " drains lost count, %" PRIu64
			" samples not added (out of memory), %" PRIu64
			" beyond the label-set bound\n", t->invariant_failures, t->add_failures,
			t->label_sets_full);

	if (!r->o.stats_path)
		return;
	if (getrusage(RUSAGE_SELF, &ru))
		memset(&ru, 0, sizeof(ru));
	f = fopen(r->o.stats_path, "we");
	if (!f) {
		pr_error("%s: cannot write stats: %s", r->o.stats_path, strerror(errno));
		return;
	}
	fprintf(f, "{\"seconds\": %.3f, \"frequency\": %u, \"cpus\": %u, \"drains\": %" PRIu64
		", \"drained\": %" PRIu64 ", \"profiled\": %" PRIu64 ", \"filtered\": %" PRIu64
		", \"label_sets_full\": %" PRIu64 ", \"add_failures\": %" PRIu64
		", \"invariant_failures\": %" PRIu64 ",\n \"outcomes\": {",
		seconds, r->o.sampler.frequency, sampler__cpus(smp), t->drains, t->drained,
		t->profiled, t->filtered, t->label_sets_full, t->add_failures, t->invariant_failures);
	for (int i = 0; i < KILN_OUTCOME_COUNT; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", kiln_outcome_names[i], t->outcomes[i]);
	fprintf(f, "},\n \"events_sent\": %" PRIu64 ", \"events_dropped\": %" PRIu64
		", \"processes\": %" PRIu64 ", \"snapshot_failures\": %" PRIu64
		", \"process_table_full\": %" PRIu64 ", \"snapshots_after_exec\": %" PRIu64
		", \"snapshot_refreshes\": %" PRIu64 ",\n \"kernel_frames\": %" PRIu64
		", \"kernel_resolved\": %" PRIu64 ", \"user_frames\": %" PRIu64
		", \"user_resolved\": %" PRIu64 ", \"user_stacks_cut\": %" PRIu64
		", \"exec_user_skipped\": %" PRIu64 ", \"symbol_cache_bytes\": %zu"
		", \"drain_ns_max\": %" PRIu64 ", \"drain_ns_sum\": %" PRIu64
		", \"label_sets\": %zu,\n \"bpf_run_cnt\": %" PRIu64
		", \"bpf_run_ns\": %" PRIu64 ", \"max_rss_kb\": %ld, \"cpu_user_ms\": %.1f"
		", \"cpu_sys_ms\": %.1f",
		ev[KILN_EV_SENT], ev[KILN_EV_DROPPED], ps.snapshots, ps.snapshot_failures,
		ps.table_full, ps.read_after_exec, ps.refreshes, ss.kernel_frames, ss.kernel_resolved, ss.user_frames,
		ss.user_resolved, ss.user_stacks_cut, ev[KILN_EV_EXEC_USER_SKIPPED], cs.bytes, t->drain_ns_max, t->drain_ns_sum,
		profile_set__count(pipeline__label_sets_seen(r->pipe)), run_cnt, run_ns,
		ru.ru_maxrss, ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3,
		ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3);
	refusals_json(f, &ss);
	fclose(f);
}

static int run(struct record *r)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct pipeline_opts po = {
		.sampler = r->o.sampler,
		.max_processes = r->o.max_processes,
		.cache_bytes = r->o.cache_bytes,
		.cache_ttl_ns = (uint64_t)(r->o.cache_ttl * 1e9),
		.max_label_sets = 4096,
		.group_by = r->o.group_by ? r->o.group_by : "",
		.track_label_sets = true,
		.metadata = { 0 },              /* labels for --group-by and the summary */
	};
	uint64_t start, next_drain, next_status, deadline, elapsed;
	struct timespec wall;
	int go_fd = -1, err, status;
	bool tty;

	if (preflight__check())
		return 2;
	r->pipe = pipeline__open(&po, &status);
	if (!r->pipe)
		return status;
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
	/* --stats reports the program's run count: keep the kernel's run-time
	 * statistics on while recording, whatever kernel.bpf_stats_enabled. */
	if (r->o.stats_path) {
		r->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (r->stats_fd < 0)
			pr_warn("cannot enable BPF run-time statistics: %s", strerror(-r->stats_fd));
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

	next_drain = start + DRAIN_INTERVAL_NS;
	next_status = start + 1000000000ull;
	tty = isatty(STDERR_FILENO) && !r->o.quiet;
	if (!r->o.quiet)
		fprintf(stderr, "kiln: profiling %s at %u Hz%s\n",
			r->o.command ? r->o.command[0] : r->o.npids ? "the given pids" : "every CPU",
			r->o.sampler.frequency, r->o.duration > 0 ? "" : "; Ctrl-C stops");
	while (!stop_requested) {
		uint64_t now = monotonic_ns();
		int timeout = POLL_MS;

		/* Wake at the deadline, not up to POLL_MS after it. */
		if (deadline != UINT64_MAX)
			timeout = now >= deadline ? 0 :
				deadline - now < POLL_MS * 1000000ull ?
				(int)((deadline - now + 999999) / 1000000) : POLL_MS;
		err = pipeline__poll(r->pipe, timeout);
		if (err < 0) {
			pr_error("reading process events failed: %s", strerror(-err));
			break;
		}
		now = monotonic_ns();
		if (now >= deadline)
			break;
		if (r->child && waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
			r->child_done = true;
			break;
		}
		if (r->o.npids && !pids_alive(r))
			break;
		if (now >= next_drain) {
			pipeline__drain(r->pipe);
			next_drain = now + DRAIN_INTERVAL_NS;
		}
		if (tty && now >= next_status) {
			status_line(r, now - start);
			next_status = now + 1000000000ull;
		}
	}
	/* Stop sampling first: the last drain then holds every sample. The
	 * window ends here, not after the drain. */
	pipeline__stop(r->pipe);
	elapsed = (monotonic_ns() < deadline ? monotonic_ns() : deadline) - start;
	pipeline__drain(r->pipe);
	if (tty)
		fprintf(stderr, "\r\033[K");
	r->profiles = pipeline__take(r->pipe);
	if (!r->profiles) {
		pr_error("out of memory");
		return 1;
	}
	summary(r, elapsed / 1e9);
	err = write_outputs(r, (uint64_t)wall.tv_sec * 1000000000ull + wall.tv_nsec, elapsed);
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
	if (r->child_done) {
		if (WIFEXITED(r->child_status))
			return WEXITSTATUS(r->child_status);
		if (WIFSIGNALED(r->child_status))
			return 128 + WTERMSIG(r->child_status);
	}
	return 0;
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
	r->stats_fd = -1;
	status = parse_args(r, argc, argv);
	if (status == 0)
		status = run(r);
	pipeline__free(r->pipe);
	profile_set__free(r->profiles);
	if (r->stats_fd >= 0)
		close(r->stats_fd);
	free(r);
	return status;
}
