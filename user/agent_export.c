/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's exporters for one interval: one pprof per label set, then
 * written to files (and latest.html) and queued for the server, and one
 * OTLP request per label set queued for --otlp-endpoint (push: one
 * request a series, as Pyroscope stores each series on its own and answers
 * for the first that fails, so a resent request would store the others
 * twice; ingest: one request each). A file's pprof carries the
 * set's labels on every sample (go tool pprof -tags, kiln view --match);
 * the server's does not: there they are the series' labels, and sample
 * labels would split the series. Runs on the loop thread; sending happens
 * on the sender's thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_export.h"
#include "core/log.h"
#include "export/otlp.h"
#include "export/pyroscope.h"
#include "profile/otlp.h"
#include "profile/profile.h"
#include "symbolize/symbolizer.h"

/* Pyroscope keeps 1000 frames of a stack, dropping the root side's
 * opposite; kiln's stacks (and their label frame) never reach that. */
_Static_assert(SYMBOLIZER_MAX_FRAMES + 1 <= 1000, "stacks longer than Pyroscope keeps");

struct encoded {
	struct profile_set_entry *e;
	uint8_t *pprof;                 /* for the server */
	size_t len;
	uint8_t *file_pprof;            /* for files: with sample labels */
	size_t file_len;
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

/* latest.html: the last interval, every label set merged, each under a
 * frame of its labels (as view shows a file's), rewritten in place; at
 * most LATEST_MAX_NODES stack nodes merged, as view reads a file. */
#define LATEST_MAX_NODES (1u << 20)

static void write_latest_html(const struct agent_exporters *x, const struct encoded *enc, size_t n,
			      const struct pprof_meta *meta)
{
	struct page pg = { .meta = { .title = "kiln agent: the last interval",
				     .time_nanos = meta->time_nanos,
				     .duration_nanos = meta->duration_nanos } };
	struct profile *merged = profile__new();
	char *text = malloc(LABELS_TEXT_MAX);
	struct frame top = { .kind = FRAME_LABELS, .name = text };

	for (size_t i = 0; merged && text && i < n; i++) {
		if (labels__to_text(&enc[i].e->labels, text, LABELS_TEXT_MAX) < 0 ||
		    profile__merge_under(merged, enc[i].e->profile, &top)) {
			pr_warn("files: latest.html: cannot merge a profile: out of memory");
			break;
		}
		if (profile__nodes(merged) > LATEST_MAX_NODES) {
			pr_warn("files: latest.html: over %u stack nodes, the last label sets left out",
				LATEST_MAX_NODES);
			break;
		}
	}
	pg.profile = merged;
	if (merged && text)
		files__write(x->files, "latest.html", fill_html, &pg);
	profile__free(merged);
	free(text);
}

static void write_files(const struct agent_exporters *x, struct profile_set *set, struct encoded *enc,
			size_t n, const struct pprof_meta *meta, bool page)
{
	struct files_profile *p = calloc(n, sizeof(*p));
	uint64_t start_s = (uint64_t)meta->time_nanos / 1000000000ull;

	if (!p) {
		pr_error("files: out of memory, interval %" PRIu64 " not written", start_s);
		return;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (struct files_profile){ &enc[i].e->labels, enc[i].file_pprof, enc[i].file_len };
	files__write_interval(x->files, start_s, p, n, set);
	free(p);
	if (page)
		write_latest_html(x, enc, n, meta);
}

static int cmp_service(const void *x, const void *y)
{
	const char *a = labels__get(&((const struct encoded *)x)->e->labels, "service_name");
	const char *b = labels__get(&((const struct encoded *)y)->e->labels, "service_name");

	return strcmp(a ? a : "", b ? b : "");
}

static void send_push(const struct agent_exporters *x, struct encoded *enc, size_t n,
		      uint64_t start_ns)
{
	for (size_t i = 0; i < n; i++) {
		struct pyroscope_series series = { &enc[i].e->labels, enc[i].pprof, enc[i].len };
		uint8_t *body = NULL;
		size_t len = 0;
		char *url = NULL;

		if (pyroscope__push_request(&series, 1, &body, &len) ||
		    asprintf(&url, "%s%s", x->server, PYROSCOPE_PUSH_PATH) < 0) {
			pr_error("push: cannot build the request: out of memory");
			free(body);
			continue;
		}
		sender__enqueue(x->sender, url, "application/proto", NULL, body, len, 1, start_ns);
	}
}

/* One encoding of a profile for a server: *len is what counts against
 * its byte bound. */
typedef int (*server_encoder)(const struct profile *p, const struct pprof_meta *meta,
			      const struct labels *l, uint8_t **out, size_t *len);

static int pprof_for_server(const struct profile *p, const struct pprof_meta *meta,
			    const struct labels *l, uint8_t **out, size_t *len)
{
	return pprof__encode(p, meta, false, out, len);
}

static int otlp_for_server(const struct profile *p, const struct pprof_meta *meta,
			   const struct labels *l, uint8_t **out, size_t *len)
{
	struct otlp_meta om = {
		.period_ns = meta->period_ns, .time_nanos = meta->time_nanos,
		.duration_nanos = meta->duration_nanos,
		.scope_name = "kiln", .scope_version = KILN_VERSION,
	};
	struct otlp_resource_profile rp = { p, l };

	return otlp__encode(&rp, 1, &om, out, len);
}

/* Profile e for a server, by encode: at most max_stacks stacks and, with
 * extra bytes beside it, max_bytes; beyond either the lightest stacks are
 * folded into "[other]", as few as a few tries of shrinking find. 0,
 * -E2BIG (does not fit: counted in caps), -ENOMEM. */
static int encode_capped(struct profile_set_entry *e, const struct pprof_meta *meta,
			 uint64_t max_stacks, uint64_t max_bytes, size_t extra,
			 server_encoder encode, const char *what, uint8_t **out, size_t *len,
			 struct agent_export_caps *caps)
{
	size_t stacks = profile__stacks(e->profile), keep = stacks;
	const struct profile *cur = e->profile;
	struct profile *capped = NULL;
	uint64_t folded = 0;
	int err = 0;

	if (keep > max_stacks)
		keep = max_stacks;
	for (int tries = 0;; tries++) {
		if (keep < stacks) {
			profile__free(capped);
			cur = capped = profile__top(e->profile, keep, &folded);
			if (!capped) {
				err = -ENOMEM;
				break;
			}
		}
		err = encode(cur, meta, &e->labels, out, len);
		if (err || *len + extra <= max_bytes)
			break;
		free(*out);
		*out = NULL;
		if (tries == 4 || keep <= 1) {
			err = -E2BIG;
			break;
		}
		keep = (size_t)((double)keep * max_bytes / (*len + extra) * 0.9);
		if (!keep)
			keep = 1;
	}
	if (!err && capped) {
		caps->capped++;
		caps->samples_folded += folded;
	}
	if (err == -E2BIG) {
		caps->too_large++;
		pr_warn("%s: a profile of %zu stacks does not fit %" PRIu64 " bytes even with its lightest stacks folded: dropped",
			what, stacks, max_bytes);
	}
	if (err)
		caps->failures++;
	profile__free(capped);
	return err;
}

/* The server's pprof of e, gzipped into en; its bound counts the labels
 * sent beside it. */
static int encode_for_server(const struct agent_exporters *x, const struct pprof_meta *meta,
			     struct profile_set_entry *e, struct encoded *en,
			     struct agent_export_caps *caps)
{
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	int err = encode_capped(e, meta, x->max_stacks, x->max_bytes, e->labels.len,
				pprof_for_server, "push", &raw, &raw_len, caps);

	if (!err && (err = pprof__gzip(raw, raw_len, &en->pprof, &en->len)))
		caps->failures++;
	free(raw);
	return err;
}

/* e's OTLP request, gzipped (Content-Encoding: its bound is on the bytes
 * before), queued. */
static void send_otlp(const struct agent_exporters *x, const struct pprof_meta *meta,
		      struct profile_set_entry *e, uint64_t start_ns, struct agent_export_caps *caps)
{
	uint8_t *raw = NULL, *body = NULL;
	size_t raw_len = 0, len = 0;
	char *url = NULL;

	if (encode_capped(e, meta, x->otlp_max_stacks, x->otlp_max_bytes, 0, otlp_for_server,
			  "otlp", &raw, &raw_len, caps))
		return;
	if (pprof__gzip(raw, raw_len, &body, &len) || !(url = strdup(x->otlp_url))) {
		pr_error("otlp: cannot build the request: out of memory");
		caps->failures++;
		free(raw);
		free(body);
		return;
	}
	free(raw);
	sender__enqueue(x->otlp, url, OTLP_CONTENT_TYPE, "gzip", body, len, 1, start_ns);
}

static void send_ingest(const struct agent_exporters *x, struct encoded *enc, size_t n, uint64_t start_ns,
			uint64_t end_ns)
{
	for (size_t i = 0; i < n; i++) {
		char *url = NULL;

		if (pyroscope__ingest_url(x->server, &enc[i].e->labels,
					  (int64_t)(start_ns / 1000000000ull),
					  (int64_t)((end_ns + 999999999ull) / 1000000000ull),
					  x->frequency, &url)) {
			pr_error("ingest: cannot build the request: out of memory");
			continue;
		}
		/* The sender takes the body; the files exporter already wrote it. */
		sender__enqueue(x->sender, url, "application/octet-stream", NULL, enc[i].pprof,
				enc[i].len, 1, start_ns);
		enc[i].pprof = NULL;
	}
}

struct agent_export_result agent_export__interval(const struct agent_exporters *x,
						  struct profile_set *set, uint64_t start_ns,
						  uint64_t end_ns, bool page)
{
	size_t n = profile_set__count(set), built = 0;
	struct encoded *enc = calloc(n ? n : 1, sizeof(*enc));
	struct pprof_meta meta = {
		.period_ns = 1000000000ull / x->frequency,
		.time_nanos = (int64_t)start_ns,
		.duration_nanos = (int64_t)(end_ns - start_ns),
	};
	struct agent_export_result r = { 0 };

	if (!enc) {
		pr_error("interval: out of memory, %zu profiles lost", n);
		r.push.failures = n;
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		struct profile_set_entry *e = profile_set__entry(set, i);
		struct pprof_meta labeled = meta;
		struct encoded *en = &enc[built];

		if (!profile__total(e->profile))
			continue;
		if (x->otlp)
			send_otlp(x, &meta, e, start_ns, &r.otlp);
		labeled.labels = &e->labels;
		if (x->sender && encode_for_server(x, &meta, e, en, &r.push)) {
			*en = (struct encoded){ 0 };
			continue;
		}
		if (x->files && pprof__encode(e->profile, &labeled, true, &en->file_pprof,
					      &en->file_len)) {
			free(en->pprof);
			*en = (struct encoded){ 0 };
			r.push.failures++;
			continue;
		}
		en->e = e;
		built++;
	}
	/* Files with one service_name in a row, so duplicates get numbered. */
	qsort(enc, built, sizeof(*enc), cmp_service);
	if (x->files && built) {
		write_files(x, set, enc, built, &meta, page);
		r.page = page;
	}
	if (x->sender && built) {
		if (x->ingest)
			send_ingest(x, enc, built, start_ns, end_ns);
		else
			send_push(x, enc, built, start_ns);
	}
	for (size_t i = 0; i < built; i++) {
		free(enc[i].pprof);
		free(enc[i].file_pprof);
	}
	free(enc);
	pr_debug("interval: %zu profiles, %" PRIu64 " samples", built, profile_set__total(set));
	r.built = built;
	return r;
}
