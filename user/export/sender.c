// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: the queue is a doubly-ended list guarded by one mutex. The thread
 * takes the head without unlinking it (so requests leave in order), sends
 * it unlocked, then decides: delivered or refused -> unlink and free;
 * retryable -> keep it at the head and wait out the backoff on the
 * condition variable. Dropping for the bound skips the head while it is
 * in flight. Shutdown sets a deadline; past it, abort makes libcurl
 * abandon the transfer in progress. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/url.h"
#include "export/sender.h"

#define BACKOFF_MIN 1.0
#define BACKOFF_MAX 30.0

struct item {
	struct item *next;
	char *url;
	const char *content_type, *content_encoding;
	uint8_t *body;
	size_t len;
	uint32_t profiles;
	uint64_t begin_unix_ns;
};

struct sender {
	const struct sender_protocol *proto;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool started;
	struct http_client *http;
	struct item *head, *tail;
	bool head_in_flight;
	uint64_t max_bytes;
	bool draining;                  /* shutdown: send what is left, then stop */
	uint64_t deadline_ns;           /* monotonic, when draining */
	volatile int abort;             /* stop now; read by libcurl's progress */
	volatile int reload;
	struct sender_stats st;
	long last_logged_refusal;       /* status of the last refusal logged */
	unsigned failures;              /* consecutive, for backoff and logging */
};

static void item_free(struct item *it)
{
	free(it->url);
	free(it->body);
	free(it);
}

/* Unlinks the head; the lock is held. */
static struct item *pop_head(struct sender *s)
{
	struct item *it = s->head;

	s->head = it->next;
	if (!s->head)
		s->tail = NULL;
	s->head_in_flight = false;
	s->st.queue_bytes -= it->len;
	s->st.queue_items--;
	return it;
}

void sender__enqueue(struct sender *s, char *url, const char *content_type,
		     const char *content_encoding, uint8_t *body, size_t len, uint32_t profiles,
		     uint64_t begin_unix_ns)
{
	struct item *it = calloc(1, sizeof(*it));

	if (!it) {
		free(url);
		free(body);
		pthread_mutex_lock(&s->lock);
		s->st.profiles_dropped_full += profiles;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	it->url = url;
	it->content_type = content_type;
	it->content_encoding = content_encoding;
	it->body = body;
	it->len = len;
	it->profiles = profiles;
	it->begin_unix_ns = begin_unix_ns;
	pthread_mutex_lock(&s->lock);
	/* Make room: drop the oldest requests not being sent right now. */
	while (s->st.queue_bytes + len > s->max_bytes) {
		struct item **pp = s->head_in_flight ? &s->head->next : &s->head;
		struct item *old = *pp;

		if (!old)
			break;
		*pp = old->next;
		if (s->tail == old)
			s->tail = pp == &s->head ? NULL : s->head;
		s->st.queue_bytes -= old->len;
		s->st.queue_items--;
		s->st.profiles_dropped_full += old->profiles;
		pr_warn("sender: queue full (%llu bytes): dropped the oldest request, %u profiles",
			(unsigned long long)s->max_bytes, old->profiles);
		item_free(old);
	}
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
	s->st.queue_bytes += len;
	s->st.queue_items++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

double sender__backoff(unsigned failures, double retry_after, uint32_t r)
{
	double b = backoff__delay(failures, BACKOFF_MIN, BACKOFF_MAX, r);

	if (retry_after > 0)
		b = retry_after < BACKOFF_MAX ? retry_after : BACKOFF_MAX;
	return b;
}

static double backoff_seconds(unsigned failures, double retry_after)
{
	return sender__backoff(failures, retry_after, backoff__random());
}

enum sender_verdict sender__classify(int err, long status, bool rotated)
{
	if (!err && (status == 401 || status == 403))
		return rotated ? SENDER_RETRY : SENDER_REFUSED;
	if (!err && status >= 200 && status < 300)
		return SENDER_DELIVERED;
	if (err || status == 408 || status == 429 || status >= 500)
		return SENDER_RETRY;
	return SENDER_REFUSED;
}

const struct sender_protocol sender_pyroscope = { .classify = sender__classify };

/* Waits until seconds pass, shutdown's deadline, or abort; lock held. */
static void wait_locked(struct sender *s, double seconds)
{
	uint64_t until = monotonic_ns() + (uint64_t)(seconds * 1e9);
	struct timespec ts;

	if (s->draining && until > s->deadline_ns)
		until = s->deadline_ns;
	ts = timespec_at(until);
	while (!s->abort && monotonic_ns() < until)
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

/* After a 2xx: the profiles the server refused all the same (counted,
 * logged once), so those it took. */
static uint32_t accepted(struct sender *s, struct item *it, const struct http_result *res)
{
	char msg[512] = "";
	uint32_t refused = s->proto->refused ? s->proto->refused(res->body, res->body_len,
								   it->profiles, msg, sizeof(msg)) : 0;

	if (refused > it->profiles)
		refused = it->profiles;
	if (refused && !s->st.profiles_partial)
		pr_error("sender: the server took the request but refused %u of its %u profiles message=\"%s\" (dropped; further partial refusals are counted only)",
			 refused, it->profiles, msg);
	s->st.profiles_partial += refused;
	return it->profiles - refused;
}

static void outcome(struct sender *s, struct item *it, int err, struct http_result *res)
{
	enum sender_verdict v = s->proto->classify(err, res->status, res->credentials_changed);

	if (!err && v != SENDER_DELIVERED && s->proto->message)
		s->proto->message(res->body, res->body_len, res->message, sizeof(res->message));
	if (v == SENDER_DELIVERED) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		if (s->failures)
			pr_info("sender: delivered again after %u failed attempts", s->failures);
		s->failures = 0;
		s->st.requests_sent++;
		s->st.profiles_sent += accepted(s, it, res);
		s->st.bytes_sent += it->len;
		s->st.last_success_unix_ns = (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec;
		item_free(pop_head(s));
		return;
	}
	s->st.attempts_failed++;
	if (v == SENDER_RETRY) {
		double wait = backoff_seconds(++s->failures, res->retry_after);

		/* The first failure of a streak is a warning; the rest debug. */
		if (s->failures == 1) {
			char shown[1024];

			/* A user:password in --server never reaches the log. */
			pr_warn("sender: %s failed status=%ld error=\"%s\" message=\"%s\" retry_in=%.1fs",
				url__redact(it->url, shown, sizeof(shown)), res->status, res->error,
				res->message, wait);
		} else {
			pr_debug("sender: attempt %u failed status=%ld error=\"%s\" retry_in=%.1fs",
				 s->failures, res->status, res->error, wait);
		}
		s->st.retries++;
		s->head_in_flight = false;
		wait_locked(s, wait);
		return;
	}
	/* The server will never take it: drop, count, say why once per status. */
	if (res->status != s->last_logged_refusal) {
		pr_error("sender: the server refused %u profiles status=%ld message=\"%s\" (dropped; further refusals with this status are counted only)",
			 it->profiles, res->status, res->message);
		s->last_logged_refusal = res->status;
	}
	s->failures = 0;
	s->st.profiles_rejected += it->profiles;
	item_free(pop_head(s));
}

static void *run(void *arg)
{
	struct sender *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->abort) {
		struct http_result res;
		struct item *it;
		int err;

		if (!s->head) {
			if (s->draining)
				break;
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		it = s->head;
		if (it->begin_unix_ns && realtime_ns() - it->begin_unix_ns > SENDER_MAX_AGE_NS) {
			/* the server would refuse it: drop it unsent */
			if (!s->st.profiles_dropped_old)
				pr_warn("sender: profiles older than %llu minutes dropped unsent (the server refuses them); further ones are counted only",
					SENDER_MAX_AGE_NS / 60000000000ull);
			s->st.profiles_dropped_old += it->profiles;
			item_free(pop_head(s));
			continue;
		}
		s->head_in_flight = true;
		pthread_mutex_unlock(&s->lock);
		if (__atomic_exchange_n(&s->reload, 0, __ATOMIC_RELAXED))
			http_client__reload(s->http);
		err = http_client__post(s->http, it->url, it->content_type, it->content_encoding,
					it->body, it->len,
					&res);
		pthread_mutex_lock(&s->lock);
		s->st.last_status = res.status;
		if (s->abort)
			break;
		outcome(s, it, err, &res);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct sender *sender__new(const struct sender_protocol *proto, const struct http_client_opts *http,
			   uint64_t max_bytes)
{
	struct sender *s = calloc(1, sizeof(*s));
	pthread_condattr_t attr;
	int err;

	if (!s)
		return NULL;
	s->proto = proto;
	pthread_mutex_init(&s->lock, NULL);
	/* wait_locked() computes deadlines on CLOCK_MONOTONIC: the condition
	 * variable must time out on that clock too (the default is realtime,
	 * which would make every backoff wait return at once and spin). */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &attr);
	pthread_condattr_destroy(&attr);
	s->max_bytes = max_bytes;
	s->http = http_client__new(http);
	if (!s->http)
		goto fail;
	http_client__set_abort(s->http, &s->abort);
	err = pthread_create(&s->thread, NULL, run, s);
	if (err) {
		pr_error("sender: cannot start its thread: %s", strerror(err));
		errno = err;
		goto fail;
	}
	s->started = true;
	return s;
fail:
	sender__free(s);
	return NULL;
}

void sender__reload(struct sender *s)
{
	__atomic_store_n(&s->reload, 1, __ATOMIC_RELAXED);
}

void sender__stats(struct sender *s, struct sender_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
}

void sender__shutdown(struct sender *s, double timeout)
{
	struct item *it;

	if (!s || !s->started)
		return;
	pthread_mutex_lock(&s->lock);
	s->draining = true;
	s->deadline_ns = monotonic_ns() + (uint64_t)(timeout * 1e9);
	pthread_cond_broadcast(&s->cond);
	/* Wait for the queue to empty, or the deadline. */
	while (s->head && monotonic_ns() < s->deadline_ns) {
		pthread_mutex_unlock(&s->lock);
		struct timespec ts = { 0, 20 * 1000000L };

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&s->lock);
	}
	__atomic_store_n(&s->abort, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	s->started = false;
	while (s->head) {
		it = pop_head(s);
		s->st.profiles_dropped_shutdown += it->profiles;
		item_free(it);
	}
	if (s->st.profiles_dropped_shutdown)
		pr_warn("sender: %llu profiles not delivered before the shutdown timeout",
			(unsigned long long)s->st.profiles_dropped_shutdown);
}

void sender__free(struct sender *s)
{
	if (!s)
		return;
	sender__shutdown(s, 0);
	http_client__free(s->http);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
