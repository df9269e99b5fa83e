// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: one loop thread reads the ring buffer (at least every second,
 * see pipeline.c), drains it every 10 s into the interval's profiles, and at the end of each
 * interval encodes one pprof per label set and hands it to the exporters.
 * Sending happens on the sender's thread behind a bounded queue, so a slow
 * or absent server never delays a drain; files are written in the loop
 * (local and bounded). The metrics server's thread reads the counters
 * through a snapshot the loop publishes under a mutex after every drain. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent.h"
#include "agent_cpu.h"
#include "agent_export.h"
#include "agent_pull.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/curl_handle.h"
#include "core/file.h"
#include "core/http_server.h"
#include "core/url.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/preflight.h"
#include "export/otlp.h"
#include "options.h"
#include "pipeline.h"
#include "server_opts.h"
#include "proc/proc.h"
#include "stats.h"
#include "symbolize/symbolizer.h"

#define HEALTH_MIN_S 30.0       /* /healthz fails after no drain for this long */

/* The agent's options: the pipeline's and the HTTP client's land in their
 * own structs, handed over as they are. */
struct agent_opts {
	struct pipeline_opts pipe;
	struct http_client_opts http;
	double interval;
	const char *server;
	const char *server_api;
	/* --allow-insecure-credentials: credentials over plain http:// (the
	 * Kubernetes token too: pipe.metadata.kube_allow_insecure). */
	bool allow_insecure_credentials;
	const char *output_dir;
	uint64_t output_max_bytes;
	unsigned output_mode;
	uint64_t queue_max_bytes;
	uint64_t push_max_stacks, push_max_bytes;
	const char *otlp_endpoint;
	uint64_t otlp_max_stacks, otlp_max_bytes;
	double shutdown_timeout;
	const char *metrics_addr;
	const char *health_addr;
	uint64_t pull_max_seconds, pull_max_concurrent;
	uint64_t cpu_metrics_series, cpu_metrics_functions;
	const char *log_level;
	const char *log_format;
	const char *config;
};

#define A struct agent_opts
static const struct config_option agent_options[] = {
	OPTIONS_FREQUENCY(A),
	CONFIG_ROW_SECONDS(A, interval, "interval", 0, "SECONDS", "10", 1, 3600,
			   "length of one profile; each interval's profiles are exported at its end"),
	OPTIONS_TAGS(A),
	CONFIG_ROW_STRING(A, server, "server", 0, "URL", NULL,
			  "Pyroscope server, e.g. http://pyroscope:4040; without it (or --otlp-endpoint) profiles go to files"),
	CONFIG_ROW_CHOICE(A, server_api, "server-api", "API", "push", "push|ingest",
			  "push: /push.v1.PusherService/Push; ingest: legacy /ingest?format=pprof"),
	CONFIG_ROW_STRING(A, otlp_endpoint, "otlp-endpoint", 0, "URL", NULL,
			  "also (or instead) send OpenTelemetry profiles (OTLP/HTTP protobuf, 1.10 v1development) to URL/v1development/profiles, e.g. http://otel-collector:4318"),
	CONFIG_ROW_STRING(A, output_dir, "output-dir", 'o', "DIR", NULL,
			  "also write <unix-start>-<service>.pb.gz per label set, <unix-start>-all.folded per interval and latest.html here (default ./profiles when no --server nor --otlp-endpoint)"),
	CONFIG_ROW_SIZE(A, output_max_bytes, "output-max-bytes", "SIZE", "512M", 1 << 16, 1ull << 50,
			"oldest interval files in --output-dir are removed beyond this"),
	OPTIONS_OUTPUT(A),
	OPTIONS_SERVER(A),
	OPTIONS_PUSH(A),
	CONFIG_ROW_U64(A, otlp_max_stacks, "otlp-max-stacks", 0, "N", "16000", 1, 1000000,
		       "stacks of an OTLP profile (Pyroscope's OTLP intake keeps its 16000); the lightest beyond it are folded into [other]"),
	CONFIG_ROW_SIZE(A, otlp_max_bytes, "otlp-max-bytes", "SIZE", "1900000", 4096, 64 << 20,
			"an OTLP request before gzip (one label set's profile and attributes); beyond it the lightest stacks are folded into [other]"),
	CONFIG_ROW_SECONDS(A, shutdown_timeout, "shutdown-timeout", 0, "SECONDS", "5", 0, 300,
			   "on SIGTERM, time to deliver what is queued"),
	CONFIG_ROW_STRING(A, metrics_addr, "metrics-addr", 0, "HOST:PORT", "127.0.0.1:4041",
			  "serve /metrics, /healthz, /ready and /debug/pprof/profile here; 'off' disables"),
	CONFIG_ROW_U64(A, pull_max_seconds, "pull-max-seconds", 0, "SECONDS", "60", 1, 3600,
		       "longest profile GET /debug/pprof/profile?seconds=N may ask for"),
	CONFIG_ROW_U64(A, pull_max_concurrent, "pull-max-concurrent", 0, "N", "4", 0, 64,
		       "profiles pulled at once from /debug/pprof/profile; more get 429 (0: no pull endpoint)"),
	CONFIG_ROW_U64(A, cpu_metrics_series, "cpu-metrics-series", 0, "N", "2048", 0, 8192,
		       "series of kiln_cpu_seconds_total on /metrics (service_name, namespace, pod, container); the least recently sampled gives way (0: none)"),
	CONFIG_ROW_U64(A, cpu_metrics_functions, "cpu-metrics-functions", 0, "N", "0", 0, 20,
		       "kiln_cpu_function_seconds_total: the N functions of each service with the most self time in an interval (0: none)"),
	CONFIG_ROW_STRING(A, health_addr, "health-addr", 0, "HOST:PORT", "off",
			  "serve only /healthz and /ready here, apart from metrics clients; 'off' disables"),
	CONFIG_ROW_CHOICE(A, log_level, "log-level", "LEVEL", "info", "error|warn|info|debug",
			  "least severe level logged"),
	CONFIG_ROW_CHOICE(A, log_format, "log-format", "FORMAT", "text", "text|json",
			  "text: key=value (logfmt); json: one object per line"),
	CONFIG_ROW_STRING(A, pipe.metadata.node_name, "node-name", 0, "NAME", NULL,
			  "the node label and the pods to watch (default $NODE_NAME, else the hostname)"),
	CONFIG_ROW_LIST(A, pipe.metadata.pod_labels, pipe.metadata.npod_labels, "pod-label", 0,
			"KEY", "copy this pod label onto profiles, repeatable (name sanitized)"),
	CONFIG_ROW_LIST(A, pipe.metadata.include_namespaces, pipe.metadata.ninclude_namespaces,
			"include-namespace", 0, "GLOB",
			"profile only pods in matching namespaces, repeatable"),
	CONFIG_ROW_LIST(A, pipe.metadata.exclude_namespaces, pipe.metadata.nexclude_namespaces,
			"exclude-namespace", 0, "GLOB", "skip pods in matching namespaces, repeatable"),
	CONFIG_ROW_STRING(A, pipe.metadata.kube_api, "kube-api", 0, "URL", NULL,
			  "Kubernetes API server outside a cluster (in a cluster: automatic)"),
	CONFIG_ROW_STRING(A, pipe.metadata.kube_token_file, "kube-token-file", 0, "FILE", NULL,
			  "bearer token for --kube-api"),
	CONFIG_ROW_STRING(A, pipe.metadata.kube_ca_file, "kube-ca-file", 0, "FILE", NULL,
			  "CA bundle for --kube-api"),
	CONFIG_ROW_BOOL(A, pipe.metadata.kube_disabled, "no-kube", 0,
			"never watch pods, even in a cluster (labels from cgroups only)"),
	CONFIG_ROW_U64(A, pipe.metadata.max_pods, "max-pods", 0, "N", "1024", 16, 1 << 20,
		       "pods held in the pod index"),
	CONFIG_ROW_U64(A, pipe.metadata.max_cgroups, "max-cgroups", 0, "N", "4096", 64, 1 << 22,
		       "cgroups held in the label cache (LRU)"),
	OPTIONS_LIMITS(A),
	OPTIONS_DEBUGINFOD(A),
	CONFIG_ROW_U64(A, pipe.max_label_sets, "max-label-sets", 0, "N", "4096", 1, 1 << 20,
		       "profiles per interval; samples of further label sets are counted and dropped"),
	OPTIONS_CONFIG(A),
};
#undef A

const struct config_command agent_command = {
	.name = "agent",
	.synopsis = "[OPTIONS]",
	.about =
		"Profiles every CPU of this host continuously. Every --interval it builds one\n"
		"pprof per label set (service_name, namespace, pod, container, node,\n"
		"systemd_unit, --tag's) and pushes them to a Pyroscope server, sends them as\n"
		"OpenTelemetry profiles to --otlp-endpoint, or writes them to --output-dir\n"
		"(any of the three). Runs until SIGTERM or SIGINT (then exports the last partial\n"
		"interval and flushes for up to --shutdown-timeout); SIGHUP re-reads secret\n"
		"files. Needs root, or CAP_BPF + CAP_PERFMON to sample and CAP_SYS_PTRACE,\n"
		"CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE + CAP_SYSLOG to name every frame.\n"
		"\n"
		"Every option can also be set in the environment (the name shown) or in a\n"
		"--config file; flags override the environment, which overrides the file.\n"
		"Secrets are only ever read from files and never logged.\n",
	.notes =
		"Bounds: sample tables (--counts-entries, --stack-entries), --max-processes,\n"
		"--symbol-cache, --max-label-sets, --queue-max-bytes (each server's),\n"
		"--push-max-stacks, --push-max-bytes, --otlp-max-stacks, --otlp-max-bytes,\n"
		"--output-max-bytes, --pull-max-concurrent, --pull-max-seconds,\n"
		"--cpu-metrics-series.\n"
		"Exit status: 0 after SIGTERM/SIGINT; 2 for bad options or a host that\n"
		"cannot run kiln (the message says what to do); 1 for other failures.\n",
	.rows = CONFIG_ROWS(agent_options),
	.args = CONFIG_ARGS_NONE,
	.env = true,
};

/* What /metrics shows from the loop thread, published after every drain;
 * the sender's part is read at scrape time. */
struct snapshot {
	struct kiln_stats stats;
	uint64_t last_drain_mono_ns;
	uint64_t start_mono_ns;
	bool ready;
};

struct agent {
	struct agent_opts o;
	struct pipeline *pipe;
	struct agent_exporters x;       /* owns its files and sender */
	struct http_server *http;
	struct http_server *health;     /* --health-addr: probes only */
	struct pulls *pulls;            /* /debug/pprof/profile; NULL: off */
	struct cpu_metrics *cpu;        /* kiln_cpu_*; NULL: off */
	char *server;                   /* x.server's storage */
	char *otlp_url;                 /* x.otlp_url's storage */
	bool page_drawn;                /* latest.html written by this run */
	pthread_mutex_t lock;           /* guards snap */
	struct snapshot snap;
};

static volatile sig_atomic_t stop_requested, reload_requested;

static void on_stop(int sig)
{
	stop_requested = 1;
}

static void on_hup(int sig)
{
	reload_requested = 1;
}

/* ---- exporting one interval (agent_export.c) ---- */

static void export_interval(void *ctx, struct profile_set *set, uint64_t start_ns,
			    uint64_t end_ns)
{
	struct agent *a = ctx;
	/* A short interval (the last, partial one at a stop) writes its
	 * files but leaves latest.html to the full interval before it, unless
	 * no page was drawn yet: a page of the stop's last 50 ms would hide
	 * what the agent saw. */
	bool page = !a->page_drawn || (double)(end_ns - start_ns) >= a->o.interval * 1e9 / 2;
	struct agent_export_result r = agent_export__interval(&a->x, set, start_ns, end_ns, page);

	profile_set__free(set);
	a->page_drawn |= r.page;
	if (a->cpu)
		cpu_metrics__interval(a->cpu);
	pthread_mutex_lock(&a->lock);
	a->snap.stats.intervals++;
	a->snap.stats.profiles_built += r.built;
	a->snap.stats.encode_failures += r.push.failures - r.push.too_large;
	a->snap.stats.profiles_too_large += r.push.too_large;
	a->snap.stats.profiles_capped += r.push.capped;
	a->snap.stats.samples_folded += r.push.samples_folded;
	a->snap.stats.otlp_encode_failures += r.otlp.failures - r.otlp.too_large;
	a->snap.stats.otlp_too_large += r.otlp.too_large;
	a->snap.stats.otlp_capped += r.otlp.capped;
	a->snap.stats.otlp_samples_folded += r.otlp.samples_folded;
	pthread_mutex_unlock(&a->lock);
}

/* ---- health and metrics (server thread) ---- */

static void publish(struct agent *a)
{
	struct snapshot s;

	pthread_mutex_lock(&a->lock);
	s = a->snap;
	pthread_mutex_unlock(&a->lock);
	stats__collect(&s.stats, a->pipe);
	if (a->x.files)
		files__stats(a->x.files, &s.stats.files);
	s.last_drain_mono_ns = monotonic_ns();
	s.ready = true;
	/* Only this thread writes the snapshot; the lock is for readers. */
	pthread_mutex_lock(&a->lock);
	a->snap = s;
	pthread_mutex_unlock(&a->lock);
}

static bool healthy(void *ctx, char *reason, size_t n)
{
	struct agent *a = ctx;
	double seconds = 3 * a->o.interval > HEALTH_MIN_S ? 3 * a->o.interval : HEALTH_MIN_S;
	uint64_t last, limit = (uint64_t)(seconds * 1e9);
	bool ok;

	/* Alive while a drain completed within 3 intervals, and at least
	 * HEALTH_MIN_S (of start-up, before the first): a short --interval
	 * on a loaded node must not get the agent restarted. */
	pthread_mutex_lock(&a->lock);
	last = a->snap.ready ? a->snap.last_drain_mono_ns : a->snap.start_mono_ns;
	pthread_mutex_unlock(&a->lock);
	ok = monotonic_ns() - last <= limit;
	if (!ok)
		snprintf(reason, n, "no drain completed in the last %.0f s", seconds);
	return ok;
}

static bool ready(void *ctx, char *reason, size_t n)
{
	struct agent *a = ctx;
	bool ok;

	pthread_mutex_lock(&a->lock);
	ok = a->snap.ready;
	pthread_mutex_unlock(&a->lock);
	if (!ok)
		snprintf(reason, n, "waiting for the first drain");
	return ok;
}

static int write_metrics(struct metrics_buf *b, void *ctx)
{
	struct agent *a = ctx;
	struct kiln_stats s;
	int err;

	pthread_mutex_lock(&a->lock);
	s = a->snap.stats;
	pthread_mutex_unlock(&a->lock);
	if (a->x.sender) {
		sender__stats(a->x.sender, &s.send);
		s.queue_max_bytes = a->o.queue_max_bytes;
	}
	if (a->x.otlp)
		sender__stats(a->x.otlp, &s.otlp);
	err = stats__write_metrics(&s, b);
	if (!err && a->pulls)
		err = pulls__write_metrics(a->pulls, b);
	if (!err && a->cpu)
		err = cpu_metrics__write(a->cpu, b);
	return err;
}

static void serve_profile(void *ctx, const struct http_arg *args, size_t nargs,
			  struct http_deferred *d)
{
	struct agent *a = ctx;

	pulls__request(a->pulls, args, nargs, d);
	pipeline__wake(a->pipe);        /* a new pull starts at the next drain */
}

/* ---- what the pipeline's tap shows (loop thread) ---- */

static void tap(void *ctx, const struct labels *labels, const struct frame *frames, size_t n,
		uint64_t count)
{
	struct agent *a = ctx;

	if (a->pulls)
		pulls__add(a->pulls, labels, frames, n, count);
	if (a->cpu)
		cpu_metrics__add(a->cpu, labels, frames, n, count);
}

static uint64_t drain_at(void *ctx)
{
	struct agent *a = ctx;

	return a->pulls ? pulls__drain_at(a->pulls) : UINT64_MAX;
}

/* ---- the loop ---- */

static int setup(struct agent *a)
{
	struct http_handlers h = { write_metrics, healthy, ready, NULL };

	if (a->o.server) {
		a->server = server_opts__url("agent", a->o.server, &a->o.http,
					     a->o.allow_insecure_credentials);
		if (!a->server)
			return 2;
		a->x.server = a->server;
		a->x.ingest = strcmp(a->o.server_api, "ingest") == 0;
		a->x.sender = sender__new(&sender_pyroscope, &a->o.http, a->o.queue_max_bytes);
		if (!a->x.sender)
			return 2;
	}
	if (a->o.otlp_endpoint) {
		char shown[512];

		if (strncmp(a->o.otlp_endpoint, "http://", 7) &&
		    strncmp(a->o.otlp_endpoint, "https://", 8)) {
			fprintf(stderr, "kiln agent: invalid value '%s' for --otlp-endpoint: want an http:// or https:// URL\n",
				url__redact(a->o.otlp_endpoint, shown, sizeof(shown)));
			return 2;
		}
		if (server_opts__refuse_cleartext("agent", "--otlp-endpoint", a->o.otlp_endpoint,
						  server_opts__credential(a->o.otlp_endpoint,
									  &a->o.http),
						  a->o.allow_insecure_credentials))
			return 2;
		if (otlp__url(a->o.otlp_endpoint, &a->otlp_url))
			return 1;
		a->x.otlp_url = a->otlp_url;
		a->x.otlp_max_stacks = a->o.otlp_max_stacks;
		a->x.otlp_max_bytes = a->o.otlp_max_bytes;
		a->x.otlp = sender__new(&otlp_protocol, &a->o.http, a->o.queue_max_bytes);
		if (!a->x.otlp)
			return 2;
	}
	if (server_opts__refuse_cleartext("agent", "--kube-api", a->o.pipe.metadata.kube_api,
					  a->o.pipe.metadata.kube_token_file ? "--kube-token-file" : NULL,
					  a->o.allow_insecure_credentials))
		return 2;
	if (a->o.output_dir || (!a->o.server && !a->o.otlp_endpoint)) {
		a->x.files = files__new(a->o.output_dir ? a->o.output_dir : "profiles",
				      a->o.output_max_bytes, a->o.output_mode);
		if (!a->x.files)
			return 2;
	}
	if (preflight__check())
		return 2;
	a->x.frequency = a->o.pipe.sampler.frequency;
	a->x.max_stacks = a->o.push_max_stacks;
	a->x.max_bytes = a->o.push_max_bytes;
	a->o.pipe.metadata.kube_allow_insecure = a->o.allow_insecure_credentials;
	a->o.pipe.tap = tap;
	a->o.pipe.tap_ctx = a;
	if (strcmp(a->o.metrics_addr, "off") && a->o.pull_max_concurrent) {
		a->pulls = pulls__new((unsigned)a->o.pull_max_concurrent,
				      (double)a->o.pull_max_seconds, a->o.pipe.sampler.frequency);
		if (!a->pulls) {
			pr_error("out of memory");
			return 1;
		}
		h.profile = serve_profile;
	}
	if (strcmp(a->o.metrics_addr, "off") && a->o.cpu_metrics_series) {
		a->cpu = cpu_metrics__new(a->o.cpu_metrics_series, (unsigned)a->o.cpu_metrics_functions,
					  1000000000ull / a->o.pipe.sampler.frequency);
		if (!a->cpu) {
			pr_error("out of memory");
			return 1;
		}
	}
	a->pipe = pipeline__open(&a->o.pipe);
	if (!a->pipe)
		return errno == ENOMEM ? 1 : 2;
	if (strcmp(a->o.metrics_addr, "off")) {
		a->http = http_server__start(a->o.metrics_addr, &h, a);
		if (!a->http)
			return 2;
		pr_info("agent: serving /metrics /healthz /ready%s addr=%s port=%u",
			a->pulls ? " /debug/pprof/profile" : "", a->o.metrics_addr,
			http_server__port(a->http));
	}
	if (strcmp(a->o.health_addr, "off")) {
		a->health = http_server__start_probes(a->o.health_addr, &h, a);
		if (!a->health)
			return 2;
		pr_info("agent: serving /healthz /ready addr=%s port=%u", a->o.health_addr,
			http_server__port(a->health));
	}
	return pipeline__attach(a->pipe) ? 2 : 0;
}

static bool stop_or_reload(void *ctx, uint64_t now)
{
	struct agent *a = ctx;

	if (reload_requested) {
		reload_requested = 0;
		pr_info("agent: SIGHUP: re-reading secret files");
		if (a->x.sender)
			sender__reload(a->x.sender);
		if (a->x.otlp)
			sender__reload(a->x.otlp);
	}
	return stop_requested;
}

static void drained(void *ctx)
{
	struct agent *a = ctx;

	publish(a);
	if (a->pulls)
		pulls__drained(a->pulls, monotonic_ns());
}

static int run(struct agent *a)
{
	struct sigaction stop = { .sa_handler = on_stop }, hup = { .sa_handler = on_hup };
	struct pipeline_loop loop = {
		.drain_every_ns = SAMPLER_DRAIN_NS,
		.first_drain_ns = PIPELINE_FIRST_DRAIN_NS,
		.interval_ns = (uint64_t)(a->o.interval * 1e9),
		.stop = stop_or_reload,
		.drained = drained,
		.drain_at = drain_at,
		.interval = export_interval,
		.ctx = a,
	};
	struct sender_stats ss = { 0 }, os = { 0 };
	const struct pipeline_totals *t;
	int status = setup(a), err;

	if (status)
		return status;
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGHUP, &hup, NULL);
	pr_info("agent: profiling every CPU frequency=%u interval=%.0fs exporter=%s%s%s%s%s",
		a->o.pipe.sampler.frequency, a->o.interval,
		a->x.sender ? (a->x.ingest ? "ingest" : "push") : "",
		a->x.sender && a->x.otlp ? "+" : "", a->x.otlp ? "otlp" : "",
		(a->x.sender || a->x.otlp) && a->x.files ? "+" : "", a->x.files ? "files" : "");
	/* Runs until SIGTERM/SIGINT, then exports the last partial interval. */
	err = pipeline__run(a->pipe, &loop);
	if (err) {
		pr_error("agent: reading process events failed: %s", strerror(-err));
		status = 1;
	}
	/* Pulls still running get what they hold, while the sender flushes. */
	pulls__finish_all(a->pulls);
	if (a->x.sender) {
		pr_info("agent: stopping; flushing queued profiles for up to %.1fs",
			a->o.shutdown_timeout);
		sender__shutdown(a->x.sender, a->o.shutdown_timeout);
		sender__stats(a->x.sender, &ss);
	}
	if (a->x.otlp) {
		pr_info("agent: stopping; flushing queued OTLP profiles for up to %.1fs",
			a->o.shutdown_timeout);
		sender__shutdown(a->x.otlp, a->o.shutdown_timeout);
		sender__stats(a->x.otlp, &os);
	}
	/* One line that accounts for every sample and profile. */
	t = pipeline__totals(a->pipe);
	pr_info("agent: stopped drained=%" PRIu64 " filtered=%" PRIu64
		" label_sets_full=%" PRIu64 " out_of_memory=%" PRIu64 " samples=%" PRIu64
		" intervals=%" PRIu64 " profiles=%" PRIu64
		" sent=%" PRIu64 " rejected=%" PRIu64 " dropped_full=%" PRIu64
		" dropped_shutdown=%" PRIu64 " dropped_old=%" PRIu64 " encode_failed=%" PRIu64
		" too_large=%" PRIu64 " capped=%" PRIu64 " otlp_sent=%" PRIu64
		" otlp_rejected=%" PRIu64 " otlp_partial=%" PRIu64 " otlp_dropped_full=%" PRIu64
		" otlp_dropped_shutdown=%" PRIu64 " otlp_dropped_old=%" PRIu64
		" otlp_encode_failed=%" PRIu64 " otlp_too_large=%" PRIu64 " otlp_capped=%" PRIu64,
		t->drained, t->filtered, t->label_sets_full, t->add_failures,
		t->profiled, a->snap.stats.intervals, a->snap.stats.profiles_built,
		ss.profiles_sent, ss.profiles_rejected, ss.profiles_dropped_full,
		ss.profiles_dropped_shutdown, ss.profiles_dropped_old, a->snap.stats.encode_failures,
		a->snap.stats.profiles_too_large, a->snap.stats.profiles_capped, os.profiles_sent,
		os.profiles_rejected, os.profiles_partial, os.profiles_dropped_full,
		os.profiles_dropped_shutdown, os.profiles_dropped_old,
		a->snap.stats.otlp_encode_failures, a->snap.stats.otlp_too_large,
		a->snap.stats.otlp_capped);
	return status;
}

int agent_main(int argc, char **argv)
{
	struct agent *a = calloc(1, sizeof(*a));
	enum log_level level;
	int status;

	if (!a) {
		fprintf(stderr, "kiln: out of memory\n");
		return 1;
	}
	pthread_mutex_init(&a->lock, NULL);
	status = config__parse_command(&agent_command, &a->o, argc, argv, NULL);
	if (status == 1) {
		config__usage(&agent_command, stdout);
		status = 0;
		goto out;
	}
	if (status)
		goto out;
	log_level_parse(a->o.log_level, &level);
	log_level = level;
	log_set_format(strcmp(a->o.log_format, "json") ? LOG_FORMAT_TEXT : LOG_FORMAT_JSON);
	log_route_libbpf();
	a->snap.start_mono_ns = monotonic_ns();
	status = run(a);
out:
	pulls__finish_all(a->pulls);   /* every deferred request answered before the stop */
	http_server__stop(a->http);
	http_server__stop(a->health);
	pulls__free(a->pulls);
	cpu_metrics__free(a->cpu);
	sender__free(a->x.sender);
	sender__free(a->x.otlp);
	files__free(a->x.files);
	pipeline__free(a->pipe);
	free(a->server);
	free(a->otlp_url);
	config__release_command(&agent_command, &a->o, NULL);
	pthread_mutex_destroy(&a->lock);
	free(a);
	curl_global_cleanup();
	return status;
}
