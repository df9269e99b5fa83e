/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's own HTTP endpoint (--metrics-addr): GET /metrics (Prometheus
 * text format 0.0.4), /healthz and /ready, and the probes-only listener
 * (--health-addr). Built on libmicrohttpd with one internal polling thread
 * per listener, a bounded number of connections, a bound per client
 * address and an idle timeout.
 *
 *   /metrics  200, METRICS_CONTENT_TYPE, what the metrics handler wrote;
 *             500 when it failed or its output hit the size bound (a
 *             partial scrape would silently lose series).
 *   /healthz  200 "ok\n", or 503 "<reason>\n" when healthy() says false.
 *   /ready    the same with ready().
 *   /debug/pprof/profile  (GET only, not on the probes' listener) what
 *             the profile handler answers, now or later
 *             (http_deferred__reply); 404 without one.
 *   other     404; methods other than GET and HEAD get 405.
 *
 * THREADING: the handlers run on the server's thread, never on the
 * caller's, one request at a time. Whatever they read that the agent's own
 * threads write (counters, state) must be read with atomics
 * (__atomic_load_n, <stdatomic.h>) or under a lock the writers also take;
 * a plain load is a data race. Handlers must not block for long: while one
 * runs, no other request is served and http_server__stop() waits for it.
 * A request that waits (a profile of the next N seconds) is suspended
 * (MHD_suspend_connection) until its answer comes from another thread:
 * it holds a connection slot, never the server's thread. */
#ifndef KILN_CORE_HTTP_SERVER_H
#define KILN_CORE_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/metrics.h"

/* Connections open at once; past it new ones wait in the listen queue. */
#define HTTP_SERVER_MAX_CONNECTIONS 64
/* Connections open at once from one client address; past it MHD closes
 * the new one straight away. A scraper or the kubelet needs one or two. */
#define HTTP_SERVER_PER_IP_CONNECTIONS 8
/* A connection that sends nothing for this long is closed. */
#define HTTP_SERVER_TIMEOUT_S 5

/* Query arguments of one request handed to a handler: at most
 * HTTP_SERVER_MAX_ARGS (a request with more gets 400); valid only during
 * the handler's call. */
#define HTTP_SERVER_MAX_ARGS 16
struct http_arg {
	const char *name;
	const char *value;      /* "" for a bare name */
};

/* A request answered later, from any thread. */
struct http_deferred;

/* Answers d, exactly once, from any thread: status, content type (a
 * static string) and body (malloc'd, taken even on failure; NULL with len
 * 0 for none); retry_after_s > 0 adds Retry-After. After the call d is the
 * server's: do not touch it. */
void http_deferred__reply(struct http_deferred *d, unsigned status, const char *type,
			  void *body, size_t len, unsigned retry_after_s);

/* Any handler may be NULL: /metrics then serves an empty exposition, and
 * /healthz or /ready always answer "ok". */
struct http_handlers {
	/* Writes the exposition into b (empty, bounded by
	 * METRICS_BUF_DEFAULT_MAX). 0, or a negative errno for a 500. */
	int (*metrics)(struct metrics_buf *b, void *ctx);
	/* true when healthy (ready); otherwise writes a one-line reason, NUL
	 * terminated, into reason[n] (it is truncated to fit). */
	bool (*healthy)(void *ctx, char *reason, size_t n);
	bool (*ready)(void *ctx, char *reason, size_t n);
	/* GET /debug/pprof/profile with its query arguments: must answer d
	 * with http_deferred__reply, during the call or later from another
	 * thread, and before http_server__stop(). */
	void (*profile)(void *ctx, const struct http_arg *args, size_t nargs,
			struct http_deferred *d);
};

struct http_server;

/* Listens on addr and serves until http_server__stop().
 *
 * addr is "host:port": "127.0.0.1:4041", "[::1]:4041", "0.0.0.0:4041"
 * (IPv4 only), "[::]:4041" (IPv6 only), ":4041" (every interface, IPv4 and
 * IPv6, or IPv4 alone when the host has no IPv6). host is a numeric
 * address or "localhost" (127.0.0.1); names are not resolved. Port 0 picks
 * a free port: see http_server__port().
 *
 * h is copied; ctx is passed to every handler and must outlive the server.
 * Returns NULL + errno on failure, after logging one line naming the flag
 * and the address ("--metrics-addr 127.0.0.1:4041: address already in
 * use"): EINVAL for a malformed address, the bind() errno (EADDRINUSE,
 * EADDRNOTAVAIL, EACCES) when it cannot be had, else ENOMEM or EIO. */
struct http_server *http_server__start(const char *addr, const struct http_handlers *h,
				       void *ctx);
/* The same, serving only /healthz and /ready (/metrics is 404), for the
 * probes' own listener (--health-addr): its connection slots are its own,
 * so clients that hold every slot of the metrics listener do not delay a
 * probe. Messages name --health-addr. */
struct http_server *http_server__start_probes(const char *addr, const struct http_handlers *h,
					      void *ctx);
/* The port actually bound (the chosen one when addr asked for port 0). */
uint16_t http_server__port(const struct http_server *s);
/* Stops listening, closes every connection and joins the server thread;
 * returns within a second unless a handler is still running. Every
 * deferred request must have been answered. Accepts NULL. */
void http_server__stop(struct http_server *s);

/* Parses addr as http_server__start() does, without logging. 0 or
 * -EINVAL; *why (when not NULL) gets a static description of the error.
 * any_dual is set for ":port", which binds the IPv6 wildcard dual-stack.
 * Exposed for tests. */
int http_addr__parse(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
		     bool *any_dual, const char **why);

#endif
