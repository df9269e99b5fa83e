// SPDX-License-Identifier: BSD-2-Clause
/* The sender's decisions: the pure rules (sender__classify,
 * sender__backoff), then the real thing against an HTTP server on
 * 127.0.0.1 (libmicrohttpd, in-process) that answers a scripted sequence
 * of statuses and records what it got. Waits poll the counters under a
 * generous deadline; nothing depends on how fast the host is. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "core/clock.h"
#include "export/sender.h"
#include "unit_helpers.h"

#define MAX_SEEN 32

/* ---- the rules ---- */

Test(sender_rules, which_answers_are_retried_dropped_or_delivered)
{
	static const long delivered[] = { 200, 201, 202, 204 };
	/* Transient: the same request may succeed later (408/429: slow down;
	 * 5xx). */
	static const long retried[] = { 408, 429, 500, 502, 503, 504, 599 };
	/* The server will never take this request: drop and count (401/403
	 * too, unless the credentials were rotated since). */
	static const long refused[] = { 300, 301, 400, 401, 403, 404, 405, 409, 413, 415, 422 };

	for (size_t i = 0; i < sizeof(delivered) / sizeof(*delivered); i++)
		cr_assert_eq(sender__classify(0, delivered[i], false), SENDER_DELIVERED, "%ld",
			     delivered[i]);
	for (size_t i = 0; i < sizeof(retried) / sizeof(*retried); i++)
		cr_assert_eq(sender__classify(0, retried[i], false), SENDER_RETRY, "%ld", retried[i]);
	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
		cr_assert_eq(sender__classify(0, refused[i], false), SENDER_REFUSED, "%ld",
			     refused[i]);
	cr_assert_eq(sender__classify(0, 401, true), SENDER_RETRY);
	cr_assert_eq(sender__classify(0, 403, true), SENDER_RETRY);
	/* No response at all (refused, reset, timed out): retried. */
	cr_assert_eq(sender__classify(-111, 0, false), SENDER_RETRY);
	cr_assert_eq(sender__classify(-110, 0, false), SENDER_RETRY);
}

Test(sender_rules, backoff_doubles_is_jittered_and_bounded)
{
	static const uint32_t rs[] = { 0, 1, UINT32_MAX / 3, UINT32_MAX / 2, UINT32_MAX };
	double prev_max = 0;

	for (unsigned f = 1; f <= 40; f++) {
		double lo = sender__backoff(f, 0, 0), hi = sender__backoff(f, 0, UINT32_MAX);
		double nominal = f >= 6 ? 30.0 : (double)(1u << (f - 1));

		/* The upper half of the nominal step, never past 30 s. */
		cr_assert_float_eq(lo, nominal / 2, 1e-9, "failures %u", f);
		cr_assert_float_eq(hi, nominal, 1e-9, "failures %u", f);
		cr_assert_geq(hi, prev_max, "failures %u: shorter than before", f);
		prev_max = hi;
		for (size_t i = 0; i < sizeof(rs) / sizeof(*rs); i++) {
			double b = sender__backoff(f, 0, rs[i]);

			cr_assert(b >= 0.5 && b <= 30.0, "failures %u r %u: %f", f, rs[i], b);
			cr_assert(b >= lo && b <= hi);
		}
	}
	cr_assert_float_eq(sender__backoff(1, 0, 0), 0.5, 1e-9);
	/* Two agents with different draws wait differently. */
	cr_assert_gt(sender__backoff(3, 0, UINT32_MAX / 2) - sender__backoff(3, 0, 0), 0.9);
	/* Retry-After wins, capped at 30 s; 0 means none. */
	cr_assert_float_eq(sender__backoff(1, 7, 0), 7.0, 1e-9);
	cr_assert_float_eq(sender__backoff(9, 2.5, UINT32_MAX), 2.5, 1e-9);
	cr_assert_float_eq(sender__backoff(1, 3600, 0), 30.0, 1e-9);
}

/* ---- a scripted server ---- */

struct seen {
	char body[64];
	char content_type[64];
	long status;            /* what it was answered */
};

static struct server {
	struct MHD_Daemon *d;
	unsigned port;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	long script[16];        /* statuses answered in turn, then 200 */
	size_t nscript, next;
	bool hold;              /* requests wait in the handler until released */
	size_t arrived;         /* requests whose handler started answering */
	struct seen seen[MAX_SEEN];
	size_t nseen;
} srv;

struct upload {
	char body[64];
	size_t len;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *data_size, void **con_cls)
{
	struct upload *up = *con_cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *ct;
	long status;

	if (!up) {
		up = calloc(1, sizeof(*up));
		*con_cls = up;
		return up ? MHD_YES : MHD_NO;
	}
	if (*data_size) {
		size_t room = sizeof(up->body) - 1 - up->len, n = *data_size < room ? *data_size : room;

		memcpy(up->body + up->len, data, n);
		up->len += n;
		*data_size = 0;
		return MHD_YES;
	}
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	pthread_mutex_lock(&srv.lock);
	srv.arrived++;
	while (srv.hold)
		pthread_cond_wait(&srv.cond, &srv.lock);
	status = srv.next < srv.nscript ? srv.script[srv.next++] : 200;
	if (srv.nseen < MAX_SEEN) {
		struct seen *s = &srv.seen[srv.nseen++];

		snprintf(s->body, sizeof(s->body), "%.*s", (int)up->len, up->body);
		snprintf(s->content_type, sizeof(s->content_type), "%s", ct ? ct : "");
		s->status = status;
	}
	pthread_mutex_unlock(&srv.lock);
	free(up);
	*con_cls = NULL;
	r = MHD_create_response_from_buffer(strlen("{\"code\":\"x\",\"message\":\"scripted\"}"),
					    (void *)"{\"code\":\"x\",\"message\":\"scripted\"}",
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode why)
{
	free(*con_cls);
	*con_cls = NULL;
}

static void server_start(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const union MHD_DaemonInfo *info;

	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	/* A thread per connection: a held request blocks only its own. */
	srv.d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
				 0, NULL, NULL, handle, NULL,
				 MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
	cr_assert_not_null(srv.d, "cannot start the test server");
	info = MHD_get_daemon_info(srv.d, MHD_DAEMON_INFO_BIND_PORT);
	cr_assert_not_null(info);
	srv.port = info->port;
	cr_assert_neq(srv.port, 0);
}

static void server_stop(void)
{
	pthread_mutex_lock(&srv.lock);
	srv.hold = false;
	pthread_cond_broadcast(&srv.cond);
	pthread_mutex_unlock(&srv.lock);
	if (srv.d)
		MHD_stop_daemon(srv.d);
	srv.d = NULL;
}

static void script(const long *statuses, size_t n)
{
	pthread_mutex_lock(&srv.lock);
	memcpy(srv.script, statuses, n * sizeof(*statuses));
	srv.nscript = n;
	srv.next = 0;
	pthread_mutex_unlock(&srv.lock);
}

static void hold(bool on)
{
	pthread_mutex_lock(&srv.lock);
	srv.hold = on;
	pthread_cond_broadcast(&srv.cond);
	pthread_mutex_unlock(&srv.lock);
}

static size_t server_count(size_t *field)
{
	size_t n;

	pthread_mutex_lock(&srv.lock);
	n = *field;
	pthread_mutex_unlock(&srv.lock);
	return n;
}

/* ---- the sender against it ---- */

static const struct http_client_opts http_opts = { .connect_timeout = 5, .request_timeout = 20 };

static struct sender *sender_to_server(uint64_t max_bytes)
{
	struct sender *s = sender__new(&sender_pyroscope, &http_opts, max_bytes);

	cr_assert_not_null(s);
	return s;
}

static char *server_url(unsigned port)
{
	char *url = NULL;

	cr_assert_geq(asprintf(&url, "http://127.0.0.1:%u/push.v1.PusherService/Push", port), 0);
	return url;
}

static void send_text(struct sender *s, unsigned port, const char *text, uint32_t profiles)
{
	uint8_t *body = (uint8_t *)strdup(text);

	cr_assert_not_null(body);
	sender__enqueue(s, server_url(port), "application/proto", NULL, body, strlen(text), profiles,
			realtime_ns());
}

/* Conditions polled until true. */
struct until {
	struct sender *s;
	uint64_t want;
};

static bool settled(void *ctx)
{
	struct until *u = ctx;
	struct sender_stats st;

	sender__stats(u->s, &st);
	return st.queue_items == 0 && st.profiles_sent + st.profiles_rejected == u->want;
}

static bool retried_enough(void *ctx)
{
	struct until *u = ctx;
	struct sender_stats st;

	sender__stats(u->s, &st);
	return st.retries >= u->want;
}

static bool arrived(void *ctx)
{
	return server_count(&srv.arrived) >= *(size_t *)ctx;
}

/* The server got exactly these bodies, in this order. */
static void expect_bodies(size_t n, const char *const *bodies)
{
	cr_assert_eq(server_count(&srv.nseen), n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(srv.seen[i].body, bodies[i], "request %zu", i);
}

static struct sender_stats settle(struct sender *s, uint64_t profiles)
{
	struct until u = { s, profiles };
	struct sender_stats st;

	POLL_UNTIL(settled(&u), "the queue did not settle");
	sender__stats(s, &st);
	return st;
}

TestSuite(sender, .init = server_start, .fini = server_stop);

Test(sender, delivers_in_order)
{
	struct sender *s = sender_to_server(1 << 20);
	struct sender_stats st;

	send_text(s, srv.port, "first", 1);
	send_text(s, srv.port, "second", 2);
	send_text(s, srv.port, "third", 3);
	st = settle(s, 6);
	cr_assert_eq(st.profiles_sent, 6);
	cr_assert_eq(st.requests_sent, 3);
	cr_assert_eq(st.bytes_sent, strlen("first") + strlen("second") + strlen("third"));
	cr_assert_eq(st.attempts_failed, 0);
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(st.profiles_rejected + st.profiles_dropped_full, 0);
	cr_assert_eq(st.queue_bytes, 0);
	cr_assert_eq(st.last_status, 200);
	cr_assert_neq(st.last_success_unix_ns, 0);
	expect_bodies(3, (const char *const[]){ "first", "second", "third" });
	cr_assert_str_eq(srv.seen[0].content_type, "application/proto");
	sender__free(s);
}

Test(sender, transient_failures_are_retried_until_delivered)
{
	/* Two failures a request: the backoff restarts at 0.5-1 s after each
	 * delivery, so the whole test waits a few seconds. */
	static const long statuses[] = { 503, 429, 200, 500, 502, 200, 504, 408, 200 };
	static const char *const bodies[] = { "first", "second", "third" };
	struct sender *s = sender_to_server(1 << 20);
	struct sender_stats st;

	script(statuses, 9);
	for (size_t i = 0; i < 3; i++)
		send_text(s, srv.port, bodies[i], 4);
	st = settle(s, 12);
	cr_assert_eq(st.profiles_sent, 12);
	cr_assert_eq(st.requests_sent, 3);
	cr_assert_eq(st.attempts_failed, 6);
	cr_assert_eq(st.retries, 6);
	cr_assert_eq(st.profiles_rejected, 0);
	/* Each request was sent again until delivered, in order. */
	cr_assert_eq(server_count(&srv.nseen), 9);
	for (size_t i = 0; i < 9; i++) {
		cr_assert_str_eq(srv.seen[i].body, bodies[i / 3], "attempt %zu", i);
		cr_assert_eq(srv.seen[i].status, statuses[i]);
	}
	sender__free(s);
}

Test(sender, refusals_are_dropped_and_counted_once)
{
	static const long statuses[] = { 400, 413, 422, 404 };
	struct sender *s = sender_to_server(1 << 20);
	struct sender_stats st;

	script(statuses, 4);
	send_text(s, srv.port, "a", 1);
	send_text(s, srv.port, "b", 2);
	send_text(s, srv.port, "c", 3);
	send_text(s, srv.port, "d", 4);
	send_text(s, srv.port, "e", 5);
	st = settle(s, 15);
	cr_assert_eq(st.profiles_rejected, 1 + 2 + 3 + 4);
	cr_assert_eq(st.profiles_sent, 5);
	cr_assert_eq(st.requests_sent, 1);
	cr_assert_eq(st.attempts_failed, 4);
	cr_assert_eq(st.retries, 0, "a refused request was sent again");
	/* Each request went exactly once. */
	expect_bodies(5, (const char *const[]){ "a", "b", "c", "d", "e" });
	sender__free(s);
}

Test(sender, no_server_is_retried_then_dropped_at_shutdown)
{
	struct sender *s;
	struct until u;
	struct sender_stats st;
	unsigned port = srv.port;

	/* Nothing listens on the port once the server is gone. */
	server_stop();
	s = sender_to_server(1 << 20);
	u = (struct until){ s, 2 };
	send_text(s, port, "lost", 7);
	POLL_UNTIL(retried_enough(&u), "no retries against a closed port");
	sender__stats(s, &st);
	cr_assert_eq(st.last_status, 0);
	cr_assert_eq(st.profiles_sent + st.profiles_rejected, 0);
	cr_assert_geq(st.attempts_failed, 2);
	cr_assert_eq(st.queue_items, 1);
	sender__shutdown(s, 0);
	sender__stats(s, &st);
	cr_assert_eq(st.profiles_dropped_shutdown, 7);
	cr_assert_eq(st.queue_items, 0);
	cr_assert_eq(st.queue_bytes, 0);
	sender__free(s);
}

Test(sender, full_queue_drops_the_oldest_waiting_request)
{
	/* Room for three 10-byte requests. */
	struct sender *s = sender_to_server(30);
	struct sender_stats st;
	size_t one = 1;

	hold(true);
	send_text(s, srv.port, "req-0-head", 1);
	/* The head is in flight (the server holds its answer) ... */
	POLL_UNTIL(arrived(&one), "the first request never arrived");
	/* ... so the queue bound drops the oldest of those waiting. */
	send_text(s, srv.port, "req-1-drop", 10);
	send_text(s, srv.port, "req-2-keep", 100);
	send_text(s, srv.port, "req-3-keep", 1000);
	sender__stats(s, &st);
	cr_assert_eq(st.profiles_dropped_full, 10);
	cr_assert_eq(st.queue_items, 3, "the head and the two newest");
	cr_assert_eq(st.queue_bytes, 30);
	hold(false);
	st = settle(s, 1101);
	cr_assert_eq(st.profiles_sent, 1101);
	cr_assert_eq(st.profiles_dropped_full, 10);
	expect_bodies(3, (const char *const[]){ "req-0-head", "req-2-keep", "req-3-keep" });
	sender__free(s);
}

Test(sender, shutdown_delivers_what_is_queued)
{
	struct sender *s = sender_to_server(1 << 20);
	struct sender_stats st;

	send_text(s, srv.port, "one", 1);
	send_text(s, srv.port, "two", 1);
	/* A generous timeout: everything queued goes out before it. */
	sender__shutdown(s, UNIT_WAIT_S);
	sender__stats(s, &st);
	cr_assert_eq(st.profiles_sent, 2);
	cr_assert_eq(st.profiles_dropped_shutdown, 0);
	expect_bodies(2, (const char *const[]){ "one", "two" });
	sender__free(s);
}

static bool delivered_and_old(void *ctx)
{
	struct until *u = ctx;
	struct sender_stats st;

	sender__stats(u->s, &st);
	return st.queue_items == 0 && st.profiles_sent + st.profiles_dropped_old == u->want;
}

/* A request whose profiles began more than the server's hour ago (a long
 * outage) is dropped unsent and counted: the server would refuse it. */
Test(sender, old_profiles_are_dropped_unsent)
{
	struct sender *s = sender_to_server(1 << 20);
	struct until u = { s, 5 };
	struct sender_stats st;
	uint8_t *old = (uint8_t *)strdup("old"), *fresh = (uint8_t *)strdup("fresh");

	cr_assert(old && fresh);
	sender__enqueue(s, server_url(srv.port), "application/proto", NULL, old, 3, 2,
			realtime_ns() - 2 * 3600 * 1000000000ull);
	sender__enqueue(s, server_url(srv.port), "application/proto", NULL, fresh, 5, 3, realtime_ns());
	POLL_UNTIL(delivered_and_old(&u), "the queue did not settle");
	sender__stats(s, &st);
	cr_assert_eq(st.profiles_dropped_old, 2);
	cr_assert_eq(st.profiles_sent, 3);
	expect_bodies(1, (const char *const[]){ "fresh" });
	sender__free(s);
}

/* 401/403 are not retried with the same credentials; a rotated token file
 * is read and the request sent again at once. */
Test(sender, auth_refusals_are_dropped_unless_the_token_rotated)
{
	static const long statuses[] = { 401, 401, 200 };
	char dir[] = "/tmp/kiln-sender-XXXXXX", path[64];
	struct http_client_opts o = http_opts;
	struct sender_stats st;
	struct sender *s;
	struct until u;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	f = fopen(path, "w");
	cr_assert(f && fputs("first\n", f) >= 0 && !fclose(f));
	o.bearer_token_file = path;
	s = sender__new(&sender_pyroscope, &o, 1 << 20);
	cr_assert_not_null(s);
	u = (struct until){ s, 1 };
	script(statuses, 3);
	send_text(s, srv.port, "a", 1);
	POLL_UNTIL(settled(&u), "the refusal was not settled");
	sender__stats(s, &st);
	cr_assert_eq(st.profiles_rejected, 1, "a 401 with the same token is dropped");
	cr_assert_eq(st.retries, 0);
	f = fopen(path, "w");
	cr_assert(f && fputs("second\n", f) >= 0 && !fclose(f));
	send_text(s, srv.port, "b", 1);
	u.want = 2;
	POLL_UNTIL(settled(&u), "the rotated request was not settled");
	sender__stats(s, &st);
	cr_assert_eq(st.profiles_sent, 1);
	expect_bodies(3, (const char *const[]){ "a", "b", "b" });
	sender__free(s);
	unlink(path);
	rmdir(dir);
}

/* Retries only what OTLP retries (429, 502-504, no answer). */
static enum sender_verdict otlp_like_classify(int err, long status, bool rotated)
{
	if (err || status == 429 || (status >= 502 && status <= 504))
		return SENDER_RETRY;
	return status >= 200 && status < 300 ? SENDER_DELIVERED : SENDER_REFUSED;
}

/* A protocol whose 2xx answers refuse part of the request (OTLP's partial
 * success): reads the scripted server's JSON message as its reason. */
static uint32_t refuse_two(const uint8_t *body, size_t len, uint32_t profiles, char *msg,
			   size_t n)
{
	snprintf(msg, n, "%.*s", (int)len, (const char *)body);
	return 2;
}

static char failure_seen[64];

static void note_failure(const uint8_t *body, size_t len, char *msg, size_t n)
{
	snprintf(failure_seen, sizeof(failure_seen), "%.*s", (int)len, (const char *)body);
	snprintf(msg, n, "read by the protocol");
}

/* A partial success is delivered, never retried: the refused part counted
 * in profiles_partial, the rest as sent. The protocol's classify rules
 * (never a 500 retried here) and its reading of failures are used. */
Test(sender, partial_success_counted_not_retried)
{
	static const struct sender_protocol partial = {
		.classify = otlp_like_classify, .refused = refuse_two, .message = note_failure,
	};
	static const long statuses[] = { 500, 200 };
	struct sender *s = sender__new(&partial, &http_opts, 1 << 20);
	struct sender_stats st;

	cr_assert_not_null(s);
	script(statuses, 2);
	send_text(s, srv.port, "a", 3);
	send_text(s, srv.port, "b", 5);
	POLL_UNTIL((sender__stats(s, &st), st.queue_items == 0), "the queue did not settle");
	cr_assert_eq(st.profiles_rejected, 3, "the 500 refused the first request");
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(st.profiles_partial, 2);
	cr_assert_eq(st.profiles_sent, 3);
	cr_assert_eq(st.requests_sent, 1);
	cr_assert_str_eq(failure_seen, "{\"code\":\"x\",\"message\":\"scripted\"}");
	expect_bodies(2, (const char *const[]){ "a", "b" });
	sender__free(s);
}
