// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_pull.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/parse.h"
#include "profile/label_match.h"
#include "profile/profile.h"
#include "symbolize/symbolizer.h"

#define PPROF_TYPE "application/octet-stream"
#define TEXT_TYPE "text/plain; charset=utf-8"

struct pull {
	struct pull *next;
	struct http_deferred *d;
	struct label_match *match;      /* NULL: every sample */
	struct profile *profile;
	uint64_t length_ns;             /* seconds= */
	uint64_t start_ns, start_wall_ns; /* at its first drain; 0: waiting */
};

enum pull_result { PULL_SERVED, PULL_BUSY, PULL_BAD_REQUEST, PULL_FAILED, PULL_RESULTS };
static const char *const result_names[PULL_RESULTS] = {
	"served", "busy", "bad_request", "failed",
};

struct pulls {
	pthread_mutex_t lock;           /* guards everything below but the scratch */
	struct pull *head;
	unsigned n, running;            /* running: started, read by the tap */
	unsigned max_concurrent;
	double max_seconds;
	uint64_t period_ns;
	uint64_t results[PULL_RESULTS];
	uint64_t samples_dropped;       /* beyond PULL_MAX_NODES */
	/* Loop thread's scratch: a label frame, then the sample's frames. */
	struct frame *frames;
	char *label_text;
};

struct pulls *pulls__new(unsigned max_concurrent, double max_seconds, unsigned frequency)
{
	struct pulls *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	p->frames = calloc(SYMBOLIZER_MAX_FRAMES + 1, sizeof(*p->frames));
	p->label_text = malloc(LABELS_TEXT_MAX);
	if (!p->frames || !p->label_text) {
		pulls__free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->max_concurrent = max_concurrent;
	p->max_seconds = max_seconds;
	p->period_ns = 1000000000ull / frequency;
	return p;
}

static void free_pull(struct pull *u)
{
	if (!u)
		return;
	label_match__free(u->match);
	profile__free(u->profile);
	free(u);
}

/* Answers d with a one-line text body and counts the result. */
static void refuse(struct pulls *p, struct http_deferred *d, enum pull_result res,
		   unsigned status, unsigned retry_after_s, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void refuse(struct pulls *p, struct http_deferred *d, enum pull_result res,
		   unsigned status, unsigned retry_after_s, const char *fmt, ...)
{
	char *body = NULL;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vasprintf(&body, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&p->lock);
	p->results[res]++;
	pthread_mutex_unlock(&p->lock);
	http_deferred__reply(d, status, TEXT_TYPE, len < 0 ? NULL : body, len < 0 ? 0 : (size_t)len,
			     retry_after_s);
}

/* Seconds until the first running pull ends (at least 1): when a slot
 * frees. Under p->lock. */
static unsigned retry_after(const struct pulls *p, uint64_t now)
{
	uint64_t first = UINT64_MAX;

	for (const struct pull *u = p->head; u; u = u->next) {
		uint64_t end = u->start_ns ? u->start_ns + u->length_ns : now + u->length_ns;

		if (end < first)
			first = end;
	}
	return first > now ? (unsigned)((first - now + 999999999ull) / 1000000000ull) : 1;
}

void pulls__request(struct pulls *p, const struct http_arg *args, size_t nargs,
		    struct http_deferred *d)
{
	uint64_t seconds = PULL_DEFAULT_SECONDS < p->max_seconds ? PULL_DEFAULT_SECONDS :
			   (uint64_t)p->max_seconds;
	struct pull *u = calloc(1, sizeof(*u));
	char why[160], *sel;
	unsigned wait;
	int err;

	if (!u || !(u->profile = profile__new())) {
		free_pull(u);
		refuse(p, d, PULL_FAILED, 500, 0, "out of memory\n");
		return;
	}
	for (size_t i = 0; i < nargs; i++) {
		if (strcmp(args[i].name, "seconds") == 0) {
			if (parse_u64(args[i].value, 1, (uint64_t)p->max_seconds, &seconds)) {
				refuse(p, d, PULL_BAD_REQUEST, 400, 0,
				       "seconds: want a whole number from 1 to %.0f (--pull-max-seconds)\n",
				       p->max_seconds);
				goto out;
			}
			continue;
		}
		/* name=value is a selector: "pod" "~web-.*" -> pod=~web-.*. */
		if (asprintf(&sel, "%s=%s", args[i].name, args[i].value) < 0) {
			refuse(p, d, PULL_FAILED, 500, 0, "out of memory\n");
			goto out;
		}
		err = label_match__add(&u->match, sel, why, sizeof(why));
		free(sel);
		if (err) {
			refuse(p, d, err == -ENOMEM ? PULL_FAILED : PULL_BAD_REQUEST,
			       err == -ENOMEM ? 500 : 400, 0, "%s\n",
			       err == -ENOMEM ? "out of memory" : why);
			goto out;
		}
	}
	u->length_ns = seconds * 1000000000ull;
	u->d = d;
	pthread_mutex_lock(&p->lock);
	if (p->n >= p->max_concurrent) {
		wait = retry_after(p, monotonic_ns());
		pthread_mutex_unlock(&p->lock);
		refuse(p, d, PULL_BUSY, 429, wait,
		       "%u profiles are being pulled, the most at once (--pull-max-concurrent)\n",
		       p->max_concurrent);
		goto out;
	}
	u->next = p->head;
	p->head = u;
	p->n++;
	pthread_mutex_unlock(&p->lock);
	pr_debug("pull: %" PRIu64 " s profile requested", seconds);
	return;
out:
	free_pull(u);
}

uint64_t pulls__drain_at(struct pulls *p)
{
	uint64_t at = UINT64_MAX;

	pthread_mutex_lock(&p->lock);
	for (const struct pull *u = p->head; u && at; u = u->next) {
		uint64_t t = u->start_ns ? u->start_ns + u->length_ns : 0;

		if (t < at)
			at = t;
	}
	pthread_mutex_unlock(&p->lock);
	return at;
}

void pulls__add(struct pulls *p, const struct labels *labels, const struct frame *frames,
		size_t n, uint64_t count)
{
	bool framed = false;

	/* The loop thread alone changes running: a plain read is its own. */
	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	for (struct pull *u = p->head; u; u = u->next) {
		if (!u->start_ns || !label_match__test(u->match, labels))
			continue;
		if (profile__nodes(u->profile) >= PULL_MAX_NODES) {
			p->samples_dropped += count;
			continue;
		}
		/* Each sample keeps its labels: go tool pprof -tags shows them. */
		if (!framed) {
			if (n > SYMBOLIZER_MAX_FRAMES ||
			    labels__to_text(labels, p->label_text, LABELS_TEXT_MAX) < 0)
				break;
			p->frames[0] = (struct frame){ .kind = FRAME_LABELS, .name = p->label_text };
			memcpy(p->frames + 1, frames, n * sizeof(*frames));
			framed = true;
		}
		if (profile__add(u->profile, p->frames, n + 1, count))
			p->samples_dropped += count;
	}
	pthread_mutex_unlock(&p->lock);
}

/* Encodes u's profile, answers and frees it. now: the end of its window. */
static void finish(struct pulls *p, struct pull *u, uint64_t now)
{
	struct pprof_meta meta = {
		.period_ns = p->period_ns,
		.time_nanos = (int64_t)u->start_wall_ns,
		.duration_nanos = u->start_ns ? (int64_t)(now - u->start_ns) : 0,
	};
	uint8_t *out = NULL;
	size_t len = 0;
	int err;

	err = pprof__encode(u->profile, &meta, true, &out, &len);
	if (err) {
		pr_warn("pull: cannot encode the profile: %s", strerror(-err));
		refuse(p, u->d, PULL_FAILED, 500, 0, "cannot encode the profile: %s\n", strerror(-err));
	} else {
		pthread_mutex_lock(&p->lock);
		p->results[PULL_SERVED]++;
		pthread_mutex_unlock(&p->lock);
		pr_debug("pull: served %" PRIu64 " samples over %.1f s", profile__total(u->profile),
			 meta.duration_nanos / 1e9);
		http_deferred__reply(u->d, 200, PPROF_TYPE, out, len, 0);
	}
	free_pull(u);
}

/* Takes the pulls to answer out of the list (all of them with all):
 * those past their time; the waiting ones start at now. */
static struct pull *take_done(struct pulls *p, uint64_t now, bool all)
{
	struct pull *done = NULL, **link = &p->head, *u;

	pthread_mutex_lock(&p->lock);
	while ((u = *link)) {
		if (!all && !u->start_ns) {
			u->start_ns = now;
			u->start_wall_ns = realtime_ns();
			p->running++;
		} else if (all || now >= u->start_ns + u->length_ns) {
			*link = u->next;
			u->next = done;
			done = u;
			p->n--;
			p->running -= u->start_ns != 0;
			continue;
		}
		link = &u->next;
	}
	pthread_mutex_unlock(&p->lock);
	return done;
}

static void finish_list(struct pulls *p, struct pull *u, uint64_t now)
{
	struct pull *next;

	/* Encoded outside the lock: the server thread keeps taking requests. */
	for (; u; u = next) {
		next = u->next;
		finish(p, u, now);
	}
}

void pulls__drained(struct pulls *p, uint64_t now)
{
	finish_list(p, take_done(p, now, false), now);
}

void pulls__finish_all(struct pulls *p)
{
	uint64_t now = monotonic_ns();

	if (p)
		finish_list(p, take_done(p, now, true), now);
}

int pulls__write_metrics(struct pulls *p, struct metrics_buf *b)
{
	uint64_t results[PULL_RESULTS], dropped;
	unsigned n;
	int err;

	pthread_mutex_lock(&p->lock);
	memcpy(results, p->results, sizeof(results));
	dropped = p->samples_dropped;
	n = p->n;
	pthread_mutex_unlock(&p->lock);
	err = metrics_buf__family(b, "kiln_pull_requests_total", METRICS_COUNTER,
				  "Requests of /debug/pprof/profile by result (busy: past --pull-max-concurrent)");
	for (int i = 0; !err && i < PULL_RESULTS; i++)
		err = metrics_buf__u64(b, &(struct metrics_label){ "result", result_names[i] }, 1,
				       results[i]);
	if (!err)
		err = metrics_buf__family(b, "kiln_pulls", METRICS_GAUGE,
					  "Profiles being pulled (waiting for their window or in it)");
	if (!err)
		err = metrics_buf__u64(b, NULL, 0, n);
	if (!err)
		err = metrics_buf__family(b, "kiln_pull_samples_dropped_total", METRICS_COUNTER,
					  "Samples not added to a pulled profile: it held its bound of stack-tree nodes, or out of memory");
	if (!err)
		err = metrics_buf__u64(b, NULL, 0, dropped);
	return err;
}

void pulls__free(struct pulls *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	for (struct pull *u = p->head, *next; u; u = next) {
		next = u->next;
		free_pull(u);
	}
	free(p->frames);
	free(p->label_text);
	free(p);
}
