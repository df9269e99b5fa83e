// SPDX-License-Identifier: BSD-2-Clause
/* The /metrics, /healthz, /ready server, fetched over real sockets with
 * libcurl; address parsing and bind errors. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/http_server.h"
#include "unit_helpers.h"

/* What an agent would share with the handlers: written by its threads,
 * read on the server's thread, so atomics. */
struct agent {
	atomic_bool healthy, ready;
	atomic_uint_fast64_t samples, scrapes;
	int metrics_err;        /* set before start, read-only after */
	bool overflow;
	char reason[64];        /* set before the flip, read after */
};

static int agent_metrics(struct metrics_buf *b, void *ctx)
{
	struct agent *a = ctx;
	const struct metrics_label l[] = { { "mode", "cpu \"on\"" } };
	int err;

	atomic_fetch_add(&a->scrapes, 1);
	if (a->metrics_err)
		return a->metrics_err;
	err = metrics_buf__family(b, "kiln_samples_total", METRICS_COUNTER, "Samples taken.");
	if (!err)
		err = metrics_buf__u64(b, l, 1, atomic_load(&a->samples));
	if (!err)
		err = metrics_buf__family(b, "kiln_up", METRICS_GAUGE, "1 while sampling.");
	if (!err)
		err = metrics_buf__double(b, NULL, 0, 1.0);
	while (!err && a->overflow)
		err = metrics_buf__u64(b, l, 1, UINT64_MAX);
	/* Past the bound the writer fails; a handler ignoring that still gets
	 * a 500 because the output is marked truncated. */
	return a->overflow ? 0 : err;
}

static bool agent_healthy(void *ctx, char *reason, size_t n)
{
	struct agent *a = ctx;

	if (atomic_load(&a->healthy))
		return true;
	snprintf(reason, n, "%s", a->reason);
	return false;
}

static bool agent_ready(void *ctx, char *reason, size_t n)
{
	struct agent *a = ctx;

	return atomic_load(&a->ready);
}

static const struct http_handlers handlers = {
	.metrics = agent_metrics,
	.healthy = agent_healthy,
	.ready = agent_ready,
};

static void agent_init(struct agent *a)
{
	memset(a, 0, sizeof(*a));
	atomic_init(&a->healthy, true);
	atomic_init(&a->ready, true);
	atomic_init(&a->samples, 12345);
	atomic_init(&a->scrapes, 0);
}

struct reply {
	long status;
	char ctype[128];
	char allow[64];
	char retry[16];
	char body[8192];
	size_t len;
	bool overflow;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;

	if (len > sizeof(r->body) - 1 - r->len) {
		r->overflow = true;
		len = sizeof(r->body) - 1 - r->len;
	}
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = '\0';
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;

	if (len > 7 && strncasecmp(p, "Allow: ", 7) == 0)
		snprintf(r->allow, sizeof(r->allow), "%.*s", (int)(len - 7 - 2), p + 7);
	if (len > 13 && strncasecmp(p, "Retry-After: ", 13) == 0)
		snprintf(r->retry, sizeof(r->retry), "%.*s", (int)(len - 13 - 2), p + 13);
	return len;
}

/* method "GET", "HEAD", "POST" (with a small body) or any other verb. */
static void fetch(const char *host, uint16_t port, const char *method, const char *path,
		  struct reply *r)
{
	CURL *c = curl_easy_init();
	char url[640];
	char *ctype = NULL;
	CURLcode rc;

	cr_assert_not_null(c);
	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://%s:%u%s", host, port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)UNIT_WAIT_S);   /* a hang guard */
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "a=1&b=2");
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, url, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
	snprintf(r->ctype, sizeof(r->ctype), "%s", ctype ? ctype : "");
	curl_easy_cleanup(c);
	cr_assert_not(r->overflow, "%s %s: body larger than the test buffer", method, url);
}

static void expect(struct http_server *s, const char *method, const char *path,
		   long status, const char *ctype, const char *body)
{
	struct reply r;

	fetch("127.0.0.1", http_server__port(s), method, path, &r);
	cr_assert_eq(r.status, status, "%s %s: status %ld, want %ld (body '%s')", method, path,
		     r.status, status, r.body);
	if (ctype)
		cr_assert_str_eq(r.ctype, ctype, "%s %s", method, path);
	if (body)
		cr_assert_str_eq(r.body, body, "%s %s", method, path);
}

#define TEXT "text/plain; charset=utf-8"

static const char metrics_text[] =
	"# HELP kiln_samples_total Samples taken.\n"
	"# TYPE kiln_samples_total counter\n"
	"kiln_samples_total{mode=\"cpu \\\"on\\\"\"} 12345\n"
	"# HELP kiln_up 1 while sampling.\n"
	"# TYPE kiln_up gauge\n"
	"kiln_up 1\n";

static void setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Criterion's timeout only turns a hang into a failure: longer than any
 * POLL_UNTIL or curl request (UNIT_WAIT_S) a test makes. */
TestSuite(metrics_http, .init = setup, .timeout = 4 * UNIT_WAIT_S);

Test(metrics_http, serves_metrics_health_ready_and_errors)
{
	struct agent a;
	struct http_server *s;
	struct reply r;

	agent_init(&a);
	s = http_server__start("127.0.0.1:0", &handlers, &a);
	cr_assert_not_null(s, "start: %s", strerror(errno));
	cr_assert_neq(http_server__port(s), 0);

	expect(s, "GET", "/metrics", 200, METRICS_CONTENT_TYPE, metrics_text);
	cr_assert_str_eq(METRICS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	expect(s, "GET", "/ready", 200, TEXT, "ok\n");
	expect(s, "GET", "/ready?verbose=1", 200, TEXT, "ok\n");
	expect(s, "GET", "/nope", 404, TEXT, "not found\n");
	expect(s, "GET", "/", 404, NULL, NULL);
	expect(s, "GET", "/metrics/", 404, NULL, NULL);
	expect(s, "HEAD", "/metrics", 200, METRICS_CONTENT_TYPE, "");
	expect(s, "DELETE", "/healthz", 405, TEXT, "method not allowed\n");
	fetch("127.0.0.1", http_server__port(s), "POST", "/metrics", &r);
	cr_assert_eq(r.status, 405);
	cr_assert_str_eq(r.allow, "GET, HEAD");
	/* The server still answers after a refused body. */
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	cr_assert_eq(atomic_load(&a.scrapes), 2); /* GET and HEAD */
	http_server__stop(s);
}

Test(metrics_http, health_and_readiness_flip_to_503_with_reason)
{
	struct agent a;
	struct http_server *s;

	agent_init(&a);
	s = http_server__start("127.0.0.1:0", &handlers, &a);
	cr_assert_not_null(s);
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");

	snprintf(a.reason, sizeof(a.reason), "sampler stalled for 12 s\nsecond line");
	atomic_store(&a.healthy, false);
	expect(s, "GET", "/healthz", 503, TEXT, "sampler stalled for 12 s second line\n");
	expect(s, "GET", "/ready", 200, TEXT, "ok\n");

	atomic_store(&a.ready, false);   /* no reason given */
	expect(s, "GET", "/ready", 503, TEXT, "not ready\n");
	a.reason[0] = '\0';
	expect(s, "GET", "/healthz", 503, TEXT, "unhealthy\n");

	atomic_store(&a.healthy, true);
	atomic_store(&a.ready, true);
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	expect(s, "GET", "/ready", 200, TEXT, "ok\n");
	http_server__stop(s);
}

Test(metrics_http, failing_or_oversized_metrics_give_500)
{
	struct agent a;
	struct http_server *s;

	agent_init(&a);
	s = http_server__start("127.0.0.1:0", &handlers, &a);
	cr_assert_not_null(s);
	a.metrics_err = -EIO;
	expect(s, "GET", "/metrics", 500, TEXT, "metrics: Input/output error\n");
	a.metrics_err = 0;
	a.overflow = true;
	expect(s, "GET", "/metrics", 500, TEXT, "metrics: No space left on device\n");
	a.overflow = false;
	/* The buffer is reset between scrapes. */
	expect(s, "GET", "/metrics", 200, METRICS_CONTENT_TYPE, metrics_text);
	http_server__stop(s);
}

Test(metrics_http, null_handlers)
{
	struct http_server *s = http_server__start("127.0.0.1:0", NULL, NULL);

	cr_assert_not_null(s);
	expect(s, "GET", "/metrics", 200, METRICS_CONTENT_TYPE, "");
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	expect(s, "GET", "/ready", 200, TEXT, "ok\n");
	http_server__stop(s);
}

Test(metrics_http, second_server_on_same_port_is_eaddrinuse)
{
	struct http_server *s, *s2;
	char addr[64];

	s = http_server__start("127.0.0.1:0", NULL, NULL);
	cr_assert_not_null(s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", http_server__port(s));
	errno = 0;
	s2 = http_server__start(addr, NULL, NULL);
	cr_assert_null(s2);
	cr_assert_eq(errno, EADDRINUSE, "errno %d (%s)", errno, strerror(errno));
	/* The wildcard forms collide with it too. */
	snprintf(addr, sizeof(addr), "0.0.0.0:%u", http_server__port(s));
	cr_assert_null(http_server__start(addr, NULL, NULL));
	cr_assert_eq(errno, EADDRINUSE);
	/* The first one is unharmed. */
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	http_server__stop(s);
}

Test(metrics_http, rebinds_after_stop_with_served_connections)
{
	struct http_server *s = http_server__start("127.0.0.1:0", NULL, NULL);
	char addr[64];
	uint16_t port;

	cr_assert_not_null(s);
	port = http_server__port(s);
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	http_server__stop(s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	s = http_server__start(addr, NULL, NULL);
	cr_assert_not_null(s, "rebind %s: %s", addr, strerror(errno));
	cr_assert_eq(http_server__port(s), port);
	http_server__stop(s);
}

Test(metrics_http, bad_addresses_fail_cleanly)
{
	static const char *const bad[] = {
		"nope", "1.2.3.4:99999", "[::1", "", "127.0.0.1:", "127.0.0.1", "::1:4041",
		"[::1]4041", "[::1]:", "localhost:http", "256.1.1.1:80", "1.2.3:80",
		"127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "[]:80", "[127.0.0.1]:80",
		"example.com:80",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(http_server__start(bad[i], NULL, NULL), "'%s' accepted", bad[i]);
		cr_assert_eq(errno, EINVAL, "'%s': errno %d", bad[i], errno);
	}
	errno = 0;
	cr_assert_null(http_server__start(NULL, NULL, NULL));
	cr_assert_eq(errno, EINVAL);
	/* Well formed, but not an address of this host (TEST-NET-1). */
	cr_assert_null(http_server__start("192.0.2.1:0", NULL, NULL));
	cr_assert_eq(errno, EADDRNOTAVAIL, "errno %d", errno);
	http_server__stop(NULL);
}

Test(metrics_http, address_forms_parse)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	const char *why = NULL;
	socklen_t len;
	bool dual;

	cr_assert_eq(http_addr__parse("127.0.0.1:4041", &ss, &len, &dual, &why), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(ntohs(sin->sin_port), 4041);
	cr_assert_eq(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
	cr_assert_eq(len, sizeof(*sin));
	cr_assert_not(dual);

	cr_assert_eq(http_addr__parse("localhost:80", &ss, &len, &dual, NULL), 0);
	cr_assert_eq(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);

	cr_assert_eq(http_addr__parse("0.0.0.0:65535", &ss, &len, &dual, NULL), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(sin->sin_addr.s_addr, htonl(INADDR_ANY));
	cr_assert_eq(ntohs(sin->sin_port), 65535);
	cr_assert_not(dual);

	cr_assert_eq(http_addr__parse("[::1]:4041", &ss, &len, &dual, NULL), 0);
	cr_assert_eq(ss.ss_family, AF_INET6);
	cr_assert(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	cr_assert_eq(ntohs(sin6->sin6_port), 4041);
	cr_assert_eq(len, sizeof(*sin6));
	cr_assert_not(dual);

	cr_assert_eq(http_addr__parse("[::]:4041", &ss, &len, &dual, NULL), 0);
	cr_assert(IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr));
	cr_assert_not(dual);

	cr_assert_eq(http_addr__parse(":4041", &ss, &len, &dual, NULL), 0);
	cr_assert_eq(ss.ss_family, AF_INET6);
	cr_assert(IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr));
	cr_assert_eq(ntohs(sin6->sin6_port), 4041);
	cr_assert(dual);

	cr_assert_eq(http_addr__parse("[::1", &ss, &len, &dual, &why), -EINVAL);
	cr_assert_str_eq(why, "missing ']' after the IPv6 address");
	cr_assert_eq(http_addr__parse("1.2.3.4:99999", &ss, &len, &dual, &why), -EINVAL);
	cr_assert_str_eq(why, "the port must be a number from 0 to 65535");
	cr_assert_eq(http_addr__parse("nope", &ss, &len, &dual, &why), -EINVAL);
	cr_assert_str_eq(why, "expected host:port, [IPv6]:port or :port");
}

Test(metrics_http, all_interfaces_and_ipv6_loopback)
{
	struct http_server *s;
	struct reply r;

	/* ":0": IPv4 and IPv6 wildcard (IPv4 alone on hosts without IPv6). */
	s = http_server__start(":0", NULL, NULL);
	cr_assert_not_null(s, "start ':0': %s", strerror(errno));
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	http_server__stop(s);

	s = http_server__start("[::1]:0", NULL, NULL);
	if (!s && (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT))
		cr_skip_test("no IPv6 loopback on this host (binding [::1]: %s); the IPv4 and "
			     "wildcard parts passed", strerror(errno));
	cr_assert_not_null(s, "start '[::1]:0': %s", strerror(errno));
	fetch("[::1]", http_server__port(s), "GET", "/ready", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, "ok\n");
	http_server__stop(s);
}

/* Prometheus scrapes over a kept-alive connection: the server must not
 * close it after each answer. */
Test(metrics_http, keeps_connections_alive)
{
	struct http_server *s = http_server__start("127.0.0.1:0", NULL, NULL);
	struct reply r;
	CURL *c = curl_easy_init();
	char url[64];
	long connects = -1, status = 0;

	cr_assert_not_null(s);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", http_server__port(s));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)UNIT_WAIT_S);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	for (int i = 0; i < 3; i++) {
		memset(&r, 0, sizeof(r));
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
		cr_assert_eq(curl_easy_perform(c), CURLE_OK);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
		cr_assert_eq(status, 200);
		cr_assert_eq(connects, i == 0 ? 1 : 0, "request %d opened %ld connections",
			     i, connects);
	}
	curl_easy_cleanup(c);
	http_server__stop(s);
}

/* A raw client connection to port on 127.0.0.1 from 127.0.0.<from> (all
 * of 127.0.0.0/8 is this host's loopback: many client addresses for the
 * per-address limit). */
static int raw_connect_port_from(uint16_t port, int from)
{
	struct sockaddr_in sin = { .sin_family = AF_INET }, src = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	src.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)(from - 1));
	cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0, "bind 127.0.0.%d: %s",
		     from, strerror(errno));
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0, "connect: %s",
		     strerror(errno));
	return fd;
}

static int raw_connect_from(struct http_server *s, int from)
{
	return raw_connect_port_from(http_server__port(s), from);
}

static int raw_connect(struct http_server *s)
{
	return raw_connect_from(s, 1);
}

static void send_all(int fd, const char *text)
{
	size_t len = strlen(text);

	cr_assert_eq(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len, "send: %s", strerror(errno));
}

static const char healthz_request[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

/* True once fd has what the server sent so far (up to size - 1 bytes, in
 * buf, NUL-terminated) ending in the /healthz answer's body. */
static bool got_healthz(int fd, char *buf, size_t size, size_t *len)
{
	ssize_t r = recv(fd, buf + *len, size - 1 - *len, MSG_DONTWAIT);

	if (r > 0)
		*len += (size_t)r;
	buf[*len] = '\0';
	return *len >= 5 && strstr(buf, "\r\n\r\nok\n");
}

/* Sends GET /healthz on fd and reads the whole answer: the server has
 * been through its loop since the request was sent. */
static void healthz_roundtrip(int fd)
{
	char buf[1024];
	size_t len = 0;

	send_all(fd, healthz_request);
	POLL_UNTIL(got_healthz(fd, buf, sizeof(buf), &len), "no answer to GET /healthz (got '%s')",
		   buf);
	cr_assert(!strncmp(buf, "HTTP/1.1 200 ", 13), "answer '%s'", buf);
}

/* True when the server has closed fd (end of file or reset). */
static bool closed_by_peer(int fd)
{
	char c;
	ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);

	return r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE));
}

/* A client that keeps its request half-sent and busy: one header byte
 * every 20 ms, so the server's idle timeout never closes it. */
struct trickler {
	int fd;
	atomic_bool quit;
	atomic_uint bytes;
};

static void *trickle(void *arg)
{
	struct trickler *t = arg;

	while (!atomic_load(&t->quit) && send(t->fd, "a", 1, MSG_NOSIGNAL) == 1) {
		atomic_fetch_add(&t->bytes, 1);
		usleep(20 * 1000);
	}
	return NULL;
}

/* Many clients, each with a request half-sent and kept busy: a header
 * byte on every connection every 20 ms (the slow clients of a slowloris). */
struct slow_clients {
	int fds[2 * HTTP_SERVER_MAX_CONNECTIONS];
	int n;
	atomic_bool quit;
	atomic_uint rounds;
};

static void *trickle_all(void *arg)
{
	struct slow_clients *c = arg;

	while (!atomic_load(&c->quit)) {
		for (int i = 0; i < c->n; i++)
			send(c->fds[i], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		atomic_fetch_add(&c->rounds, 1);
		usleep(20 * 1000);
	}
	return NULL;
}

/* n slow clients to port, per_addr of them from each of 127.0.0.<first>,
 * <first + 1>, ...; each has sent the start of a request. */
static void slow_clients_start(struct slow_clients *c, pthread_t *t, uint16_t port, int n,
			       int first, int per_addr)
{
	static const char start[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ";

	cr_assert_leq(n, (int)(sizeof(c->fds) / sizeof(c->fds[0])));
	c->n = n;
	atomic_init(&c->quit, false);
	atomic_init(&c->rounds, 0);

	for (int i = 0; i < n; i++) {
		c->fds[i] = raw_connect_port_from(port, first + i / per_addr);
		send(c->fds[i], start, sizeof(start) - 1, MSG_NOSIGNAL);
	}
	cr_assert_eq(pthread_create(t, NULL, trickle_all, c), 0);
	POLL_UNTIL(atomic_load(&c->rounds) >= 2, "the slow clients never trickled");
}

static void slow_clients_stop(struct slow_clients *c, pthread_t t)
{
	atomic_store(&c->quit, true);
	pthread_join(t, NULL);
	for (int i = 0; i < c->n; i++)
		close(c->fds[i]);
}

struct stopper {
	struct http_server *s;
	atomic_bool done;
};

static void *stop_server(void *arg)
{
	struct stopper *st = arg;

	http_server__stop(st->s);
	atomic_store(&st->done, true);
	return NULL;
}

/* Idle and half-sent connections must not hold the stop up: one client
 * keeps its request alive for as long as the server reads it, so a stop
 * that waited for connections to end would never return; the hang guard
 * (UNIT_WAIT_S) fails the test then. Every client sees its connection
 * closed by the server. */
Test(metrics_http, stop_is_prompt_with_open_connections)
{
	struct http_server *s = http_server__start("127.0.0.1:0", NULL, NULL);
	struct trickler t = { .fd = -1 };
	struct stopper st = { 0 };
	pthread_t tt, stt;
	int fds[3];

	cr_assert_not_null(s);
	atomic_init(&t.quit, false);
	atomic_init(&t.bytes, 0);
	atomic_init(&st.done, false);
	st.s = s;
	for (int i = 0; i < 3; i++)
		fds[i] = raw_connect(s);
	send_all(fds[1], "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ");
	t.fd = fds[1];
	cr_assert_eq(pthread_create(&tt, NULL, trickle, &t), 0);
	/* Served after the three were accepted (the accept queue is FIFO). */
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	POLL_UNTIL(atomic_load(&t.bytes) >= 2, "the half-sent request never grew");

	cr_assert_eq(pthread_create(&stt, NULL, stop_server, &st), 0);
	POLL_UNTIL(atomic_load(&st.done),
		   "http_server__stop never returned with an idle, a busy half-sent and an "
		   "unused connection open");
	pthread_join(stt, NULL);
	for (int i = 0; i < 3; i++)
		POLL_UNTIL(closed_by_peer(fds[i]), "connection %d still open after the stop", i);
	atomic_store(&t.quit, true);
	pthread_join(tt, NULL);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

/* Past HTTP_SERVER_MAX_CONNECTIONS the server stops accepting; a slot
 * freed, the waiting client is served. No timeout decides: the held
 * connections' own requests, answered after the extra client's request was
 * sent, show the server went round its loop without serving it. The
 * connections come from several addresses (the per-address limit is
 * lower) and all but one trickle a half-sent request, so the idle timeout
 * frees none of them. */
Test(metrics_http, connection_limit_is_enforced)
{
	struct http_server *s = http_server__start("127.0.0.1:0", NULL, NULL);
	const int per = HTTP_SERVER_PER_IP_CONNECTIONS;
	struct slow_clients slow;
	int last, extra;
	char buf[1024];
	size_t len = 0;
	pthread_t t;

	cr_assert_not_null(s);
	/* 127.0.0.2 onwards: the slow ones; the last slot, from 127.0.0.1. */
	slow_clients_start(&slow, &t, http_server__port(s), HTTP_SERVER_MAX_CONNECTIONS - 1, 2, per);
	last = raw_connect(s);
	/* The last answered: all of them were accepted (FIFO). */
	healthz_roundtrip(last);

	extra = raw_connect_from(s, 200);
	send_all(extra, healthz_request);
	for (int round = 0; round < 5; round++) {
		healthz_roundtrip(last);
		cr_assert_not(got_healthz(extra, buf, sizeof(buf), &len),
			      "served past the limit of %d connections (round %d): '%s'",
			      HTTP_SERVER_MAX_CONNECTIONS, round, buf);
		cr_assert_eq(len, 0, "the extra client got '%s' past the limit", buf);
		cr_assert_not(closed_by_peer(extra), "the extra client was turned away, not kept "
			      "waiting");
	}

	close(last);
	POLL_UNTIL(got_healthz(extra, buf, sizeof(buf), &len),
		   "the waiting client was not served once a slot was free (got '%s')", buf);
	cr_assert(!strncmp(buf, "HTTP/1.1 200 ", 13), "answer '%s'", buf);
	close(extra);
	slow_clients_stop(&slow, t);
	http_server__stop(s);
}

/* One address holds at most HTTP_SERVER_PER_IP_CONNECTIONS: the next
 * connection from it is closed at once, while a client from another
 * address is served. Sixteen slow clients from one address thus cannot
 * starve anyone else. */
Test(metrics_http, per_address_limit)
{
	struct http_server *s = http_server__start("127.0.0.1:0", NULL, NULL);
	struct slow_clients slow;
	pthread_t t;
	int extra;

	cr_assert_not_null(s);
	slow_clients_start(&slow, &t, http_server__port(s), 2 * HTTP_SERVER_PER_IP_CONNECTIONS, 1,
			   2 * HTTP_SERVER_PER_IP_CONNECTIONS);
	/* Those past the limit were closed by the server... */
	for (int i = HTTP_SERVER_PER_IP_CONNECTIONS; i < slow.n; i++)
		POLL_UNTIL(closed_by_peer(slow.fds[i]), "slow client %d of one address still open "
			   "past the limit of %d", i, HTTP_SERVER_PER_IP_CONNECTIONS);
	/* ... and the next one from that address is too. */
	extra = raw_connect_from(s, 1);
	POLL_UNTIL(closed_by_peer(extra), "a connection past the per-address limit stayed open");
	close(extra);
	/* Another address is served while the first holds its slots. */
	extra = raw_connect_from(s, 2);
	healthz_roundtrip(extra);
	close(extra);
	for (int i = 0; i < HTTP_SERVER_PER_IP_CONNECTIONS; i++)
		cr_assert_not(closed_by_peer(slow.fds[i]), "slow client %d within the limit closed",
			      i);
	slow_clients_stop(&slow, t);
	http_server__stop(s);
}

/* The probes' listener: /healthz and /ready only, and served while slow
 * clients from more addresses than the per-address limit covers hold every
 * slot of the metrics listener (which then answers nobody new). */
Test(metrics_http, probes_listener_answers_while_metrics_is_starved)
{
	struct agent a;
	struct http_server *m, *p;
	struct slow_clients slow;
	char buf[1024];
	size_t len = 0;
	pthread_t t;
	int extra;

	agent_init(&a);
	m = http_server__start("127.0.0.1:0", &handlers, &a);
	p = http_server__start_probes("127.0.0.1:0", &handlers, &a);
	cr_assert_not_null(m);
	cr_assert_not_null(p);
	expect(p, "GET", "/healthz", 200, TEXT, "ok\n");
	expect(p, "GET", "/ready", 200, TEXT, "ok\n");
	expect(p, "GET", "/metrics", 404, TEXT, "not found\n");
	cr_assert_eq(atomic_load(&a.scrapes), 0, "the probes listener ran the metrics handler");

	slow_clients_start(&slow, &t, http_server__port(m), HTTP_SERVER_MAX_CONNECTIONS + 16, 2,
			   HTTP_SERVER_PER_IP_CONNECTIONS);
	extra = raw_connect_from(m, 1);
	send_all(extra, healthz_request);
	for (int round = 0; round < 3; round++) {
		/* Fresh connections each time, as the kubelet's. */
		expect(p, "GET", "/healthz", 200, TEXT, "ok\n");
		expect(p, "GET", "/ready", 200, TEXT, "ok\n");
	}
	atomic_store(&a.healthy, false);
	expect(p, "GET", "/healthz", 503, TEXT, "unhealthy\n");
	cr_assert_not(got_healthz(extra, buf, sizeof(buf), &len),
		      "the metrics listener was not full: '%s'", buf);
	close(extra);
	slow_clients_stop(&slow, t);
	http_server__stop(p);
	http_server__stop(m);
}

/* The exposition as Prometheus' own Python parser reads it. */
Test(metrics_http, output_parses_with_prometheus_client)
{
	char script[256], cmd[512];
	const char *dir_end = strrchr(__FILE__, '/');
	struct agent a;
	struct http_server *s;
	int rc;

	/* python3-prometheus-client is a test dependency (TEST_DEPS): its
	 * absence fails the test. */
	rc = system("/usr/bin/python3 -c 'import prometheus_client.parser' 2>/dev/null");
	cr_assert_eq(rc, 0, "/usr/bin/python3 has no prometheus_client "
		     "(apt-get install python3-prometheus-client, or make deps)");
	snprintf(script, sizeof(script), "%.*scheck_prom_text.py",
		 dir_end ? (int)(dir_end - __FILE__ + 1) : 0, __FILE__);
	cr_assert_eq(access(script, R_OK), 0, "%s not found: run the unit tests from the "
		     "repository root", script);

	agent_init(&a);
	s = http_server__start("127.0.0.1:0", &handlers, &a);
	cr_assert_not_null(s);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 %s --url http://127.0.0.1:%u/metrics "
		 "--expect kiln_samples_total --expect kiln_up >/dev/null", script,
		 http_server__port(s));
	rc = system(cmd);
	cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s: status %d", cmd, rc);

	/* And the checker can fail: a family split in two groups. */
	snprintf(cmd, sizeof(cmd),
		 "printf '# TYPE a gauge\\na 1\\n# TYPE b gauge\\nb 1\\na 2\\n' | "
		 "/usr/bin/python3 %s - 2>/dev/null", script);
	rc = system(cmd);
	cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "%s: status %d", cmd, rc);
	http_server__stop(s);
}

/* A profile handler that answers at once (echoing its arguments) or keeps
 * the request for the test thread to answer. */
struct deferred_agent {
	bool later;
	atomic_uintptr_t held;  /* the kept request, once the handler ran */
	atomic_int calls;
};

static void deferred_profile(void *ctx, const struct http_arg *args, size_t nargs,
			     struct http_deferred *d)
{
	struct deferred_agent *a = ctx;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	atomic_fetch_add(&a->calls, 1);
	if (a->later) {
		atomic_store(&a->held, (uintptr_t)d);
		return;
	}
	f = open_memstream(&body, &len);
	cr_assert_not_null(f);
	for (size_t i = 0; i < nargs; i++)
		fprintf(f, "%s=%s;", args[i].name, args[i].value);
	fclose(f);
	http_deferred__reply(d, 200, TEXT, body, len, 0);
}

struct fetch_job {
	uint16_t port;
	const char *path;
	struct reply r;
};

static void *fetch_thread(void *arg)
{
	struct fetch_job *j = arg;

	fetch("127.0.0.1", j->port, "GET", j->path, &j->r);
	return NULL;
}

Test(metrics_http, profile_answered_at_once_with_its_arguments)
{
	struct deferred_agent a = { .later = false };
	struct http_handlers h = { .profile = deferred_profile };
	struct http_server *s = http_server__start("127.0.0.1:0", &h, &a);
	struct http_server *probes = http_server__start_probes("127.0.0.1:0", &h, &a);
	char path[512];
	size_t pos;

	cr_assert_not_null(s);
	cr_assert_not_null(probes);
	expect(s, "GET", "/debug/pprof/profile?seconds=3&pod=web%2Da&flag", 200, TEXT,
	       "seconds=3;pod=web-a;flag=;");
	/* It starts work: only GET, never on the probes' listener. */
	expect(s, "HEAD", "/debug/pprof/profile", 405, NULL, NULL);
	expect(probes, "GET", "/debug/pprof/profile", 404, NULL, NULL);
	pos = (size_t)snprintf(path, sizeof(path), "/debug/pprof/profile?");
	for (int i = 0; i <= HTTP_SERVER_MAX_ARGS; i++)
		pos += (size_t)snprintf(path + pos, sizeof(path) - pos, "%sa%d=%d", i ? "&" : "", i, i);
	expect(s, "GET", path, 400, TEXT, "more than 16 query arguments\n");
	cr_assert_eq(atomic_load(&a.calls), 1);
	http_server__stop(probes);
	http_server__stop(s);
}

/* A request answered later, from another thread: meanwhile the server
 * serves others (its thread is not held), and the answer, with its
 * Retry-After, reaches the waiting client. */
Test(metrics_http, profile_answered_later_from_another_thread)
{
	struct deferred_agent a = { .later = true };
	struct http_handlers h = { .profile = deferred_profile };
	struct http_server *s = http_server__start("127.0.0.1:0", &h, &a);
	struct fetch_job j = { .path = "/debug/pprof/profile?seconds=1" };
	pthread_t t;
	char *body = strdup("later\n");

	cr_assert_not_null(s);
	j.port = http_server__port(s);
	cr_assert_eq(pthread_create(&t, NULL, fetch_thread, &j), 0);
	POLL_UNTIL(atomic_load(&a.held) != 0);
	expect(s, "GET", "/metrics", 200, METRICS_CONTENT_TYPE, "");
	expect(s, "GET", "/healthz", 200, TEXT, "ok\n");
	http_deferred__reply((struct http_deferred *)atomic_load(&a.held), 429, TEXT, body,
			     strlen(body), 7);
	pthread_join(t, NULL);
	cr_assert_eq(j.r.status, 429);
	cr_assert_str_eq(j.r.body, "later\n");
	cr_assert_str_eq(j.r.retry, "7");
	http_server__stop(s);
}
