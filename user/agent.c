/* DESIGN: one loop thread polls the ring buffer every 100 ms, drains the
 * BPF maps every 2 s into the interval's profiles, and at the end of each
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
#include <unistd.h>

#include <bpf/bpf.h>
#include <curl/curl.h>

#include "agent.h"
#include "core/clock.h"
#include "core/elf.h"
#include "core/config.h"
#include "core/file.h"
#include "core/http_server.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/preflight.h"
#include "core/safe_open.h"
#include "export/files.h"
#include "export/pyroscope.h"
#include "export/sender.h"
#include "pipeline.h"
#include "proc/proc.h"
#include "symbolize/symbolizer.h"

#define POLL_MS 100
#define DRAIN_EVERY_NS 2000000000ull

struct agent_opts {
	uint64_t frequency;
	double interval;
	struct config_list tags;
	const char *server;
	const char *server_api;
	const char *output_dir;
	uint64_t output_max_bytes;
	const char *basic_auth_user;
	const char *basic_auth_password_file;
	const char *bearer_token_file;
	const char *tenant_id;
	struct config_list headers;
	const char *ca_file;
	bool tls_insecure_skip_verify;
	double connect_timeout, request_timeout;
	uint64_t queue_max_bytes;
	double shutdown_timeout;
	const char *metrics_addr;
	const char *log_level;
	const char *log_format;
	const char *node_name;
	struct config_list pod_labels;
	struct config_list include_namespaces, exclude_namespaces;
	const char *kube_api, *kube_token_file, *kube_ca_file;
	bool no_kube;
	uint64_t max_pods, max_cgroups;
	bool include_idle;
	uint64_t counts_entries, stack_entries, max_processes, symbol_cache;
	double symbol_cache_ttl;
	uint64_t max_label_sets;
	const char *config;
};

#define OPT(field) offsetof(struct agent_opts, field)

static const struct config_option agent_options[] = {
	{ "frequency", 'F', CONFIG_U64, "HZ", "97", 1, 1000, NULL, OPT(frequency),
	  "samples per second per CPU" },
	{ "interval", 0, CONFIG_SECONDS, "SECONDS", "10", 1, 3600, NULL, OPT(interval),
	  "length of one profile; each interval's profiles are exported at its end" },
	{ "tag", 0, CONFIG_LIST, "KEY=VALUE", NULL, 0, 0, NULL, OPT(tags),
	  "static label on every profile, repeatable (e.g. region=us-east-1)" },
	{ "server", 0, CONFIG_STRING, "URL", NULL, 0, 0, NULL, OPT(server),
	  "Pyroscope server, e.g. http://pyroscope:4040; without it profiles go to files" },
	{ "server-api", 0, CONFIG_CHOICE, "API", "push", 0, 0, "push|ingest", OPT(server_api),
	  "push: /push.v1.PusherService/Push; ingest: legacy /ingest?format=pprof" },
	{ "output-dir", 'o', CONFIG_STRING, "DIR", NULL, 0, 0, NULL, OPT(output_dir),
	  "also write <unix-start>-<service>.pb.gz per label set, <unix-start>-all.folded per interval and latest.html here (default ./profiles when no --server)" },
	{ "output-max-bytes", 0, CONFIG_SIZE, "SIZE", "512M", 1 << 16, 1ull << 50, NULL,
	  OPT(output_max_bytes), "oldest interval files in --output-dir are removed beyond this" },
	{ "basic-auth-user", 0, CONFIG_STRING, "USER", NULL, 0, 0, NULL, OPT(basic_auth_user),
	  "HTTP basic auth user (Grafana Cloud: the instance id)" },
	{ "basic-auth-password-file", 0, CONFIG_STRING, "FILE", NULL, 0, 0, NULL,
	  OPT(basic_auth_password_file), "file holding the basic auth password (re-read on SIGHUP and 401)" },
	{ "bearer-token-file", 0, CONFIG_STRING, "FILE", NULL, 0, 0, NULL, OPT(bearer_token_file),
	  "file holding a bearer token (re-read on SIGHUP and 401)" },
	{ "tenant-id", 0, CONFIG_STRING, "ID", NULL, 0, 0, NULL, OPT(tenant_id),
	  "X-Scope-OrgID for multi-tenant servers" },
	{ "header", 0, CONFIG_LIST, "KEY=VALUE", NULL, 0, 0, NULL, OPT(headers),
	  "extra HTTP header on every request, repeatable" },
	{ "ca-file", 0, CONFIG_STRING, "FILE", NULL, 0, 0, NULL, OPT(ca_file),
	  "CA bundle to verify the server's certificate" },
	{ "tls-insecure-skip-verify", 0, CONFIG_BOOL, NULL, "false", 0, 0, NULL,
	  OPT(tls_insecure_skip_verify), "do not verify the server's certificate (unsafe)" },
	{ "connect-timeout", 0, CONFIG_SECONDS, "SECONDS", "5", 0.1, 300, NULL,
	  OPT(connect_timeout), "TCP + TLS connect timeout" },
	{ "request-timeout", 0, CONFIG_SECONDS, "SECONDS", "30", 0.1, 600, NULL,
	  OPT(request_timeout), "whole-request timeout" },
	{ "queue-max-bytes", 0, CONFIG_SIZE, "SIZE", "64M", 1 << 16, 1ull << 40, NULL,
	  OPT(queue_max_bytes), "profiles waiting for the server; beyond it the oldest is dropped" },
	{ "shutdown-timeout", 0, CONFIG_SECONDS, "SECONDS", "5", 0, 300, NULL,
	  OPT(shutdown_timeout), "on SIGTERM, time to deliver what is queued" },
	{ "metrics-addr", 0, CONFIG_STRING, "HOST:PORT", "127.0.0.1:4041", 0, 0, NULL,
	  OPT(metrics_addr), "serve /metrics, /healthz and /ready here; 'off' disables" },
	{ "log-level", 0, CONFIG_CHOICE, "LEVEL", "info", 0, 0, "error|warn|info|debug",
	  OPT(log_level), "least severe level logged" },
	{ "log-format", 0, CONFIG_CHOICE, "FORMAT", "text", 0, 0, "text|json", OPT(log_format),
	  "text: key=value (logfmt); json: one object per line" },
	{ "node-name", 0, CONFIG_STRING, "NAME", NULL, 0, 0, NULL, OPT(node_name),
	  "the node label and the pods to watch (default $NODE_NAME, else the hostname)" },
	{ "pod-label", 0, CONFIG_LIST, "KEY", NULL, 0, 0, NULL, OPT(pod_labels),
	  "copy this pod label onto profiles, repeatable (name sanitized)" },
	{ "include-namespace", 0, CONFIG_LIST, "GLOB", NULL, 0, 0, NULL, OPT(include_namespaces),
	  "profile only pods in matching namespaces, repeatable" },
	{ "exclude-namespace", 0, CONFIG_LIST, "GLOB", NULL, 0, 0, NULL, OPT(exclude_namespaces),
	  "skip pods in matching namespaces, repeatable" },
	{ "kube-api", 0, CONFIG_STRING, "URL", NULL, 0, 0, NULL, OPT(kube_api),
	  "Kubernetes API server outside a cluster (in a cluster: automatic)" },
	{ "kube-token-file", 0, CONFIG_STRING, "FILE", NULL, 0, 0, NULL, OPT(kube_token_file),
	  "bearer token for --kube-api" },
	{ "kube-ca-file", 0, CONFIG_STRING, "FILE", NULL, 0, 0, NULL, OPT(kube_ca_file),
	  "CA bundle for --kube-api" },
	{ "no-kube", 0, CONFIG_BOOL, NULL, "false", 0, 0, NULL, OPT(no_kube),
	  "never watch pods, even in a cluster (labels from cgroups only)" },
	{ "max-pods", 0, CONFIG_U64, "N", "1024", 16, 1 << 20, NULL, OPT(max_pods),
	  "pods held in the pod index" },
	{ "max-cgroups", 0, CONFIG_U64, "N", "4096", 64, 1 << 22, NULL, OPT(max_cgroups),
	  "cgroups held in the label cache (LRU)" },
	{ "include-idle", 0, CONFIG_BOOL, NULL, "false", 0, 0, NULL, OPT(include_idle),
	  "keep samples of the idle task (pid 0)" },
	{ "counts-entries", 0, CONFIG_U64, "N", "0", 0, 1 << 24, NULL, OPT(counts_entries),
	  "BPF counts map size per generation (0: CPUs x Hz x 10, power of two)" },
	{ "stack-entries", 0, CONFIG_U64, "N", "0", 0, 1 << 22, NULL, OPT(stack_entries),
	  "BPF stack map size per generation (0: half the counts size, at least 8192; ~1 KiB each)" },
	{ "max-processes", 0, CONFIG_U64, "N", "32768", 64, 1 << 22, NULL, OPT(max_processes),
	  "processes tracked at once" },
	{ "symbol-cache", 0, CONFIG_SIZE, "SIZE", "64M", 1 << 20, 1ull << 36, NULL,
	  OPT(symbol_cache), "ELF symbol cache bound (LRU)" },
	{ "symbol-cache-ttl", 0, CONFIG_DURATION, "DURATION", "10m", 0, 604800, NULL,
	  OPT(symbol_cache_ttl),
	  "free a binary's symbols once no sample needed them this long (90s, 10m, 1h; at most 168h; 0: never)" },
	{ "max-label-sets", 0, CONFIG_U64, "N", "4096", 1, 1 << 20, NULL, OPT(max_label_sets),
	  "profiles per interval; samples of further label sets are counted and dropped" },
	{ "config", 'c', CONFIG_STRING, "FILE", NULL, 0, 0, NULL, OPT(config),
	  "read 'key = value' lines (keys = flag names); flags and environment win" },
};

#define NOPTIONS (sizeof(agent_options) / sizeof(agent_options[0]))

/* What /metrics shows from the loop thread, published after every drain. */
struct snapshot {
	struct pipeline_totals totals;
	struct metadata_stats md;
	struct proc_stats procs;
	struct symbolizer_stats sym;
	struct symcache_stats cache;
	struct files_stats files;
	uint64_t events[KILN_EV_STAT_COUNT];
	uint64_t bpf_run_ns, bpf_run_cnt;
	uint64_t intervals, profiles_built, encode_failures;
	uint64_t last_drain_mono_ns;
	uint64_t start_mono_ns;
	bool ready;
};

struct agent {
	struct agent_opts o;
	struct pipeline *pipe;
	struct sender *sender;
	struct files *files;
	struct http_server *http;
	char *server;                   /* without a trailing '/' */
	bool ingest;
	int stats_fd;
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

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: kiln agent [OPTIONS]\n"
		"\n"
		"Profiles every CPU of this host continuously. Every --interval it builds one\n"
		"pprof per label set (service_name, namespace, pod, container, node,\n"
		"systemd_unit, --tag's) and pushes them to a Pyroscope server, or writes them\n"
		"to --output-dir. Runs until SIGTERM or SIGINT (then exports the last partial\n"
		"interval and flushes for up to --shutdown-timeout); SIGHUP re-reads secret\n"
		"files. Needs root, or CAP_BPF + CAP_PERFMON to sample and CAP_SYS_PTRACE,\n"
		"CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE + CAP_SYSLOG to name every frame.\n"
		"\n"
		"Every option can also be set in the environment (the name shown) or in a\n"
		"--config file; flags override the environment, which overrides the file.\n"
		"Secrets are only ever read from files and never logged.\n"
		"\n"
		"Options:\n");
	config__help(agent_options, NOPTIONS, f);
	fprintf(f,
		"  -h, --help                         this help\n"
		"\n"
		"Bounds: BPF maps (--counts-entries, --stack-entries), --max-processes,\n"
		"--symbol-cache, --max-label-sets, --queue-max-bytes, --output-max-bytes.\n"
		"Exit status: 0 after SIGTERM/SIGINT; 2 for bad options or a host that\n"
		"cannot run kiln (the message says what to do); 1 for other failures.\n");
}

/* ---- exporting one interval ---- */

struct encoded {
	struct profile_set_entry *e;
	uint8_t *pprof;
	size_t len;
};

struct page {
	const struct profile *profile;
	struct html_meta meta;
};

static int fill_html(FILE *f, void *ctx)
{
	const struct page *pg = ctx;

	return html__write(pg->profile, &pg->meta, f);
}

/* latest.html: the last interval, every label set merged, rewritten in
 * place. Merged by reading back the encoded profiles, bounded like view. */
static void write_latest_html(struct agent *a, const struct encoded *enc, size_t n)
{
	struct read_limits lim = { .max_bytes = 64u << 20, .max_nodes = 1u << 20 };
	struct page pg = { .meta = { .title = "kiln agent: the last interval" } };
	struct profile *merged = profile__new();
	struct read_info info;

	for (size_t i = 0; merged && i < n; i++) {
		memset(&info, 0, sizeof(info));
		if (profile__read(merged, enc[i].pprof, enc[i].len, &lim, &info)) {
			pr_warn("files: latest.html: cannot merge a profile: %s", info.why);
			break;
		}
		pg.meta.time_nanos = info.time_nanos;
		pg.meta.duration_nanos = info.duration_nanos;
	}
	pg.profile = merged;
	if (merged)
		files__write(a->files, "latest.html", fill_html, &pg);
	profile__free(merged);
}

static void write_files(struct agent *a, struct profile_set *set, struct encoded *enc,
			size_t n, uint64_t start_s)
{
	struct files_profile *p = calloc(n, sizeof(*p));

	if (!p) {
		pr_error("files: out of memory, interval %" PRIu64 " not written", start_s);
		return;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (struct files_profile){ &enc[i].e->labels, enc[i].pprof, enc[i].len };
	files__write_interval(a->files, start_s, p, n, set);
	free(p);
	write_latest_html(a, enc, n);
}

static int cmp_service(const void *x, const void *y)
{
	const char *a = labels__get(&((const struct encoded *)x)->e->labels, "service_name");
	const char *b = labels__get(&((const struct encoded *)y)->e->labels, "service_name");

	return strcmp(a ? a : "", b ? b : "");
}

static void send_push(struct agent *a, struct encoded *enc, size_t n)
{
	struct pyroscope_series *series = calloc(n, sizeof(*series));
	uint8_t *body = NULL;
	size_t len = 0;
	char *url = NULL;

	for (size_t i = 0; series && i < n; i++) {
		series[i].labels = &enc[i].e->labels;
		series[i].pprof = enc[i].pprof;
		series[i].len = enc[i].len;
	}
	if (!series || pyroscope__push_request(series, n, &body, &len) ||
	    asprintf(&url, "%s%s", a->server, PYROSCOPE_PUSH_PATH) < 0) {
		pr_error("push: cannot build the request for %zu profiles: out of memory", n);
		free(series);
		free(body);
		return;
	}
	free(series);
	sender__enqueue(a->sender, url, "application/proto", body, len, (uint32_t)n);
}

static void send_ingest(struct agent *a, struct encoded *enc, size_t n, uint64_t start_ns,
			uint64_t end_ns)
{
	for (size_t i = 0; i < n; i++) {
		char *url = NULL;

		if (pyroscope__ingest_url(a->server, &enc[i].e->labels,
					  (int64_t)(start_ns / 1000000000ull),
					  (int64_t)((end_ns + 999999999ull) / 1000000000ull),
					  (unsigned)a->o.frequency, &url)) {
			pr_error("ingest: cannot build the request: out of memory");
			continue;
		}
		/* The sender takes the body; the files exporter already wrote it. */
		sender__enqueue(a->sender, url, "application/octet-stream", enc[i].pprof,
				enc[i].len, 1);
		enc[i].pprof = NULL;
	}
}

static void export_interval(struct agent *a, struct profile_set *set, uint64_t start_ns,
			    uint64_t end_ns)
{
	size_t n = profile_set__count(set), built = 0;
	struct encoded *enc = calloc(n ? n : 1, sizeof(*enc));
	struct pprof_meta meta = {
		.period_ns = 1000000000ull / a->o.frequency,
		.time_nanos = (int64_t)start_ns,
		.duration_nanos = (int64_t)(end_ns - start_ns),
	};
	uint64_t failures = 0;

	if (!enc) {
		pr_error("interval: out of memory, %zu profiles lost", n);
		failures = n;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct profile_set_entry *e = profile_set__entry(set, i);

		if (!profile__total(e->profile))
			continue;
		if (pprof__encode(e->profile, &meta, true, &enc[built].pprof, &enc[built].len)) {
			failures++;
			continue;
		}
		enc[built++].e = e;
	}
	/* Files with one service_name in a row, so duplicates get numbered. */
	qsort(enc, built, sizeof(*enc), cmp_service);
	if (a->files && built)
		write_files(a, set, enc, built, start_ns / 1000000000ull);
	if (a->sender && built) {
		if (a->ingest)
			send_ingest(a, enc, built, start_ns, end_ns);
		else
			send_push(a, enc, built);
	}
	for (size_t i = 0; i < built; i++)
		free(enc[i].pprof);
	free(enc);
	pr_debug("interval: %zu profiles, %" PRIu64 " samples", built, profile_set__total(set));
out:
	pthread_mutex_lock(&a->lock);
	a->snap.intervals++;
	a->snap.profiles_built += built;
	a->snap.encode_failures += failures;
	pthread_mutex_unlock(&a->lock);
}

/* ---- health and metrics (server thread) ---- */

static void publish(struct agent *a)
{
	struct snapshot s;

	pthread_mutex_lock(&a->lock);
	s = a->snap;
	pthread_mutex_unlock(&a->lock);
	s.totals = *pipeline__totals(a->pipe);
	metadata__stats(pipeline__metadata(a->pipe), &s.md);
	proc_table__stats(pipeline__procs(a->pipe), &s.procs);
	symbolizer__stats(pipeline__symbolizer(a->pipe), &s.sym);
	symbolizer__cache_stats(pipeline__symbolizer(a->pipe), &s.cache);
	sampler__event_stats(pipeline__sampler(a->pipe), s.events);
	sampler__prog_stats(pipeline__sampler(a->pipe), &s.bpf_run_ns, &s.bpf_run_cnt);
	if (a->files)
		files__stats(a->files, &s.files);
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
	uint64_t last, limit = (uint64_t)(3 * a->o.interval * 1e9);
	bool ok;

	/* Alive while a drain completed within 3 intervals (of start-up,
	 * before the first). */
	pthread_mutex_lock(&a->lock);
	last = a->snap.ready ? a->snap.last_drain_mono_ns : a->snap.start_mono_ns;
	pthread_mutex_unlock(&a->lock);
	ok = monotonic_ns() - last <= limit;
	if (!ok)
		snprintf(reason, n, "no drain completed in the last %.0f s (3 intervals)",
			 3 * a->o.interval);
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

struct family {
	struct metrics_buf *b;
	int err;
};

static void fam(struct family *f, const char *name, enum metrics_type t, const char *help)
{
	if (!f->err)
		f->err = metrics_buf__family(f->b, name, t, help);
}

static void val(struct family *f, const char *lname, const char *lvalue, uint64_t v)
{
	struct metrics_label l = { lname, lvalue };

	if (!f->err)
		f->err = metrics_buf__u64(f->b, lname ? &l : NULL, lname ? 1 : 0, v);
}

static void dval(struct family *f, double v)
{
	if (!f->err)
		f->err = metrics_buf__double(f->b, NULL, 0, v);
}

static void one(struct family *f, const char *name, enum metrics_type t, const char *help,
		uint64_t v)
{
	fam(f, name, t, help);
	val(f, NULL, NULL, v);
}

static int write_metrics(struct metrics_buf *b, void *ctx)
{
	struct agent *a = ctx;
	struct family f = { b, 0 };
	struct sender_stats ss = { 0 };
	struct snapshot s;
	struct safe_open_stats so;
	uint64_t lookups, elf_refused[ELF_REFUSAL_COUNT];

	pthread_mutex_lock(&a->lock);
	s = a->snap;
	pthread_mutex_unlock(&a->lock);
	if (a->sender)
		sender__stats(a->sender, &ss);

	fam(&f, "kiln_build_info", METRICS_GAUGE, "kiln's version, as a label");
	val(&f, "version", KILN_VERSION, 1);
	one(&f, "kiln_samples_total", METRICS_COUNTER, "samples added to profiles",
	    s.totals.profiled);
	fam(&f, "kiln_samples_dropped_total", METRICS_COUNTER,
	    "samples lost, by reason (BPF outcomes, label-set bound, memory)");
	for (int i = KILN_DROP_STACK_COLLISION; i < KILN_OUTCOME_COUNT; i++)
		val(&f, "reason", kiln_outcome_names[i], s.totals.outcomes[i]);
	val(&f, "reason", "label_sets_full", s.totals.label_sets_full);
	val(&f, "reason", "out_of_memory", s.totals.add_failures);
	fam(&f, "kiln_samples_filtered_total", METRICS_COUNTER,
	    "samples not profiled on purpose, by reason");
	val(&f, "reason", "idle", s.totals.outcomes[KILN_SKIP_IDLE]);
	for (int i = 1; i < METADATA_VERDICT_COUNT; i++)
		val(&f, "reason", metadata_verdict_names[i], s.md.filtered[i]);
	fam(&f, "kiln_process_events_total", METRICS_COUNTER,
	    "process lifecycle events from BPF, by result");
	val(&f, "result", "sent", s.events[KILN_EV_SENT]);
	val(&f, "result", "dropped", s.events[KILN_EV_DROPPED]);
	one(&f, "kiln_drains_total", METRICS_COUNTER, "drains of the BPF maps", s.totals.drains);
	one(&f, "kiln_drain_conservation_failures_total", METRICS_COUNTER,
	    "drains where drained != sampled", s.totals.invariant_failures);
	fam(&f, "kiln_drain_duration_seconds", METRICS_GAUGE, "duration of the last drain");
	dval(&f, s.totals.drain_ns_last / 1e9);
	fam(&f, "kiln_drain_duration_seconds_max", METRICS_GAUGE, "longest drain so far");
	dval(&f, s.totals.drain_ns_max / 1e9);
	one(&f, "kiln_intervals_total", METRICS_COUNTER, "intervals exported", s.intervals);
	one(&f, "kiln_profiles_built_total", METRICS_COUNTER, "pprof profiles built",
	    s.profiles_built);
	one(&f, "kiln_profiles_sent_total", METRICS_COUNTER, "profiles the server accepted",
	    ss.profiles_sent);
	one(&f, "kiln_push_requests_total", METRICS_COUNTER, "requests the server accepted",
	    ss.requests_sent);
	one(&f, "kiln_push_bytes_total", METRICS_COUNTER, "request bytes the server accepted",
	    ss.bytes_sent);
	one(&f, "kiln_push_failures_total", METRICS_COUNTER,
	    "failed send attempts (retried or refused)", ss.attempts_failed);
	fam(&f, "kiln_profiles_dropped_total", METRICS_COUNTER,
	    "profiles that will never reach the server, by reason");
	val(&f, "reason", "rejected", ss.profiles_rejected);
	val(&f, "reason", "queue_full", ss.profiles_dropped_full);
	val(&f, "reason", "shutdown", ss.profiles_dropped_shutdown);
	val(&f, "reason", "encode_failed", s.encode_failures);
	one(&f, "kiln_queue_bytes", METRICS_GAUGE, "bytes waiting to be sent", ss.queue_bytes);
	one(&f, "kiln_queue_requests", METRICS_GAUGE, "requests waiting to be sent",
	    ss.queue_items);
	one(&f, "kiln_queue_max_bytes", METRICS_GAUGE, "--queue-max-bytes",
	    a->sender ? a->o.queue_max_bytes : 0);
	fam(&f, "kiln_last_push_timestamp_seconds", METRICS_GAUGE,
	    "unix time of the last accepted request (0: none yet)");
	dval(&f, ss.last_success_unix_ns / 1e9);
	one(&f, "kiln_files_written_total", METRICS_COUNTER, "files written to --output-dir",
	    s.files.written);
	one(&f, "kiln_files_removed_total", METRICS_COUNTER,
	    "files removed by --output-max-bytes", s.files.removed);
	one(&f, "kiln_files_errors_total", METRICS_COUNTER, "file write or remove errors",
	    s.files.errors);
	one(&f, "kiln_output_bytes", METRICS_GAUGE, "bytes held in --output-dir",
	    s.files.bytes_held);
	one(&f, "kiln_processes_tracked", METRICS_GAUGE, "process snapshots held",
	    s.procs.live);
	one(&f, "kiln_process_snapshots_total", METRICS_COUNTER, "process snapshots taken",
	    s.procs.snapshots);
	one(&f, "kiln_process_table_full_total", METRICS_COUNTER,
	    "processes not tracked: --max-processes reached", s.procs.table_full);
	one(&f, "kiln_process_snapshots_after_exec_total", METRICS_COUNTER,
	    "snapshots read after the process exec'd, discarded (its samples keep the name BPF saw)",
	    s.procs.read_after_exec);
	one(&f, "kiln_symbol_cache_bytes", METRICS_GAUGE, "ELF symbol cache size",
	    s.cache.bytes);
	one(&f, "kiln_symbol_cache_evictions_total", METRICS_COUNTER,
	    "symbol tables evicted to stay within --symbol-cache", s.cache.evictions);
	one(&f, "kiln_symbol_cache_expired_total", METRICS_COUNTER,
	    "symbol tables freed after --symbol-cache-ttl unused", s.cache.expired);
	lookups = s.cache.hits + s.cache.misses;
	fam(&f, "kiln_symbol_cache_hit_ratio", METRICS_GAUGE,
	    "symbol cache hits / lookups since start");
	dval(&f, lookups ? (double)s.cache.hits / (double)lookups : 0);
	fam(&f, "kiln_frames_total", METRICS_COUNTER, "frames symbolized, by kind");
	val(&f, "kind", "kernel", s.sym.kernel_frames);
	val(&f, "kind", "user", s.sym.user_frames);
	fam(&f, "kiln_frames_resolved_total", METRICS_COUNTER, "frames given a name, by kind");
	val(&f, "kind", "kernel", s.sym.kernel_resolved);
	val(&f, "kind", "user", s.sym.user_resolved);
	fam(&f, "kiln_user_stacks_incomplete_total", METRICS_COUNTER,
	    "samples whose user stack is not whole, by reason");
	val(&f, "reason", "unwind_left_mappings", s.sym.user_stacks_cut);
	val(&f, "reason", "inside_execve", s.events[KILN_EV_EXEC_USER_SKIPPED]);
	one(&f, "kiln_symtab_loads_total", METRICS_COUNTER, "ELF symbol tables loaded",
	    s.sym.symtab_loads);
	one(&f, "kiln_symtab_failures_total", METRICS_COUNTER,
	    "mapped files whose symbols could not be loaded (not ELF, or refused)",
	    s.sym.symtab_failures);
	/* Process-wide atomic counters of the safe opener and the ELF readers. */
	safe_open__stats(&so);
	elf__refusal_stats(elf_refused);
	fam(&f, "kiln_files_refused_total", METRICS_COUNTER,
	    "files a process controls that kiln refused to open, by reason");
	for (int i = 0; i < SAFE_OPEN_REFUSAL_COUNT; i++)
		val(&f, "reason", safe_open_refusal_names[i], so.refused[i]);
	fam(&f, "kiln_elf_refused_total", METRICS_COUNTER,
	    "ELF files, or parts of them, refused for exceeding a bound, by reason");
	for (int i = 0; i < ELF_REFUSAL_COUNT; i++)
		val(&f, "reason", elf_refusal_names[i], elf_refused[i]);
	one(&f, "kiln_cgroups_cached", METRICS_GAUGE, "cgroups in the metadata cache",
	    s.md.cgroups);
	one(&f, "kiln_kube_pods", METRICS_GAUGE, "pods known on this node", s.md.pods);
	one(&f, "kiln_kube_synced", METRICS_GAUGE, "1 when the pod list has been read",
	    s.md.kube_synced);
	one(&f, "kiln_kube_errors_total", METRICS_COUNTER, "Kubernetes API errors",
	    s.md.kube_errors);
	one(&f, "kiln_kube_relists_total", METRICS_COUNTER, "pod relists (410 Gone)",
	    s.md.kube_relists);
	if (a->stats_fd >= 0) {
		fam(&f, "kiln_bpf_run_seconds_total", METRICS_COUNTER,
		    "time the BPF programs ran (kernel run-time stats)");
		dval(&f, s.bpf_run_ns / 1e9);
		one(&f, "kiln_bpf_runs_total", METRICS_COUNTER, "BPF program invocations",
		    s.bpf_run_cnt);
	}
	return f.err;
}

/* ---- the loop ---- */

static int setup(struct agent *a)
{
	struct pipeline_opts po = {
		.sampler = {
			.frequency = (unsigned)a->o.frequency,
			.include_idle = a->o.include_idle,
			.counts_entries = (uint32_t)a->o.counts_entries,
			.stack_entries = (uint32_t)a->o.stack_entries,
			.process_entries = (uint32_t)a->o.max_processes,
		},
		.metadata = {
			.node_name = a->o.node_name,
			.tags = a->o.tags.items, .ntags = a->o.tags.n,
			.pod_labels = a->o.pod_labels.items, .npod_labels = a->o.pod_labels.n,
			.include_namespaces = a->o.include_namespaces.items,
			.ninclude_namespaces = a->o.include_namespaces.n,
			.exclude_namespaces = a->o.exclude_namespaces.items,
			.nexclude_namespaces = a->o.exclude_namespaces.n,
			.kube_api = a->o.kube_api,
			.kube_token_file = a->o.kube_token_file,
			.kube_ca_file = a->o.kube_ca_file,
			.kube_disabled = a->o.no_kube,
			.max_cgroups = a->o.max_cgroups,
			.max_pods = a->o.max_pods,
		},
		.max_processes = a->o.max_processes,
		.cache_bytes = a->o.symbol_cache,
		.cache_ttl_ns = (uint64_t)(a->o.symbol_cache_ttl * 1e9),
		.max_label_sets = a->o.max_label_sets,
		.group_by = NULL,
	};
	struct http_handlers h = { write_metrics, healthy, ready };
	int status;

	if (a->o.server) {
		struct http_client_opts ho = {
			.basic_auth_user = a->o.basic_auth_user,
			.basic_auth_password_file = a->o.basic_auth_password_file,
			.bearer_token_file = a->o.bearer_token_file,
			.tenant_id = a->o.tenant_id,
			.headers = a->o.headers.items, .nheaders = a->o.headers.n,
			.ca_file = a->o.ca_file,
			.insecure_skip_verify = a->o.tls_insecure_skip_verify,
			.connect_timeout = a->o.connect_timeout,
			.request_timeout = a->o.request_timeout,
		};
		size_t len = strlen(a->o.server);

		if (strncmp(a->o.server, "http://", 7) && strncmp(a->o.server, "https://", 8)) {
			fprintf(stderr, "kiln agent: invalid value '%s' for --server: want an http:// or https:// URL\n",
				a->o.server);
			return 2;
		}
		a->server = strndup(a->o.server, len);
		while (a->server && len > 8 && a->server[len - 1] == '/')
			a->server[--len] = '\0';
		a->ingest = strcmp(a->o.server_api, "ingest") == 0;
		a->sender = a->server ? sender__new(&ho, a->o.queue_max_bytes) : NULL;
		if (!a->sender)
			return 2;
	}
	if (a->o.output_dir || !a->o.server) {
		a->files = files__new(a->o.output_dir ? a->o.output_dir : "profiles",
				      a->o.output_max_bytes);
		if (!a->files)
			return 2;
	}
	if (preflight__check())
		return 2;
	a->pipe = pipeline__open(&po, &status);
	if (!a->pipe)
		return status;
	/* Metrics report BPF run time: keep the kernel's counting on while we
	 * run, whatever kernel.bpf_stats_enabled says. */
	a->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (a->stats_fd < 0)
		pr_debug("agent: BPF run-time statistics unavailable: %s", strerror(-a->stats_fd));
	if (strcmp(a->o.metrics_addr, "off")) {
		a->http = http_server__start(a->o.metrics_addr, &h, a);
		if (!a->http)
			return 2;
		pr_info("agent: serving /metrics /healthz /ready addr=%s port=%u", a->o.metrics_addr,
			http_server__port(a->http));
	}
	return pipeline__attach(a->pipe) ? 2 : 0;
}

static int run(struct agent *a)
{
	struct sigaction stop = { .sa_handler = on_stop }, hup = { .sa_handler = on_hup };
	uint64_t interval_ns = (uint64_t)(a->o.interval * 1e9);
	uint64_t mono_start, wall_start, next_drain, next_interval;
	int status = setup(a);

	if (status)
		return status;
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGHUP, &hup, NULL);
	mono_start = monotonic_ns();
	wall_start = realtime_ns();
	next_drain = mono_start + (interval_ns < DRAIN_EVERY_NS ? interval_ns : DRAIN_EVERY_NS);
	next_interval = mono_start + interval_ns;
	pr_info("agent: profiling every CPU frequency=%" PRIu64 " interval=%.0fs exporter=%s%s%s",
		a->o.frequency, a->o.interval,
		a->sender ? (a->ingest ? "ingest" : "push") : "",
		a->sender && a->files ? "+" : "", a->files ? "files" : "");
	while (!stop_requested) {
		uint64_t now;
		int err = pipeline__poll(a->pipe, POLL_MS);

		if (err) {
			pr_error("agent: reading process events failed: %s", strerror(-err));
			status = 1;
			break;
		}
		if (reload_requested) {
			reload_requested = 0;
			pr_info("agent: SIGHUP: re-reading secret files");
			if (a->sender)
				sender__reload(a->sender);
		}
		now = monotonic_ns();
		if (now < next_drain && now < next_interval)
			continue;
		pipeline__drain(a->pipe);
		publish(a);
		next_drain = now + DRAIN_EVERY_NS;
		if (now >= next_interval) {
			uint64_t wall_end = wall_start + (now - mono_start);
			struct profile_set *set = pipeline__take(a->pipe);

			if (set) {
				export_interval(a, set, wall_start, wall_end);
				profile_set__free(set);
				mono_start = now;
				wall_start = wall_end;
			}
			next_interval += interval_ns;
			if (next_interval <= now)       /* fell behind: skip, don't burst */
				next_interval = now + interval_ns;
		}
		if (next_drain > next_interval)
			next_drain = next_interval;
	}
	/* The last partial interval: stop sampling, drain everything, export. */
	pipeline__stop(a->pipe);
	pipeline__drain(a->pipe);
	publish(a);
	{
		uint64_t now = monotonic_ns();
		struct profile_set *set = pipeline__take(a->pipe);

		if (set) {
			export_interval(a, set, wall_start, wall_start + (now - mono_start));
			profile_set__free(set);
		}
	}
	if (a->sender) {
		pr_info("agent: stopping; flushing queued profiles for up to %.1fs",
			a->o.shutdown_timeout);
		sender__shutdown(a->sender, a->o.shutdown_timeout);
	}
	{
		struct sender_stats ss = { 0 };

		if (a->sender)
			sender__stats(a->sender, &ss);
		/* One line that accounts for every sample and profile. */
		const struct pipeline_totals *t = pipeline__totals(a->pipe);

		pr_info("agent: stopped drained=%" PRIu64 " filtered=%" PRIu64
			" label_sets_full=%" PRIu64 " out_of_memory=%" PRIu64 " samples=%" PRIu64
			" intervals=%" PRIu64 " profiles=%" PRIu64
			" sent=%" PRIu64 " rejected=%" PRIu64 " dropped_full=%" PRIu64
			" dropped_shutdown=%" PRIu64 " encode_failed=%" PRIu64,
			t->drained, t->filtered, t->label_sets_full, t->add_failures,
			t->profiled, a->snap.intervals, a->snap.profiles_built,
			ss.profiles_sent, ss.profiles_rejected, ss.profiles_dropped_full,
			ss.profiles_dropped_shutdown, a->snap.encode_failures);
	}
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
	a->stats_fd = -1;
	pthread_mutex_init(&a->lock, NULL);
	status = config__parse("agent", agent_options, NOPTIONS, &a->o, argc, argv);
	if (status == 1) {
		usage(stdout);
		status = 0;
		goto out;
	}
	if (status)
		goto out;
	log_level_parse(a->o.log_level, &level);
	log_level = level;
	log_set_format(strcmp(a->o.log_format, "json") ? LOG_FORMAT_TEXT : LOG_FORMAT_JSON);
	log_route_libbpf();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	a->snap.start_mono_ns = monotonic_ns();
	status = run(a);
out:
	http_server__stop(a->http);
	sender__free(a->sender);
	files__free(a->files);
	pipeline__free(a->pipe);
	if (a->stats_fd >= 0)
		close(a->stats_fd);
	free(a->server);
	config__release(agent_options, NOPTIONS, &a->o);
	pthread_mutex_destroy(&a->lock);
	free(a);
	curl_global_cleanup();
	return status;
}
