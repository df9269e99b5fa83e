// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: we bind the listening socket ourselves and hand it to
 * libmicrohttpd (MHD_OPTION_LISTEN_SOCKET) instead of passing the address
 * (MHD_OPTION_SOCK_ADDR): MHD_start_daemon() returns NULL without saying
 * why, and "address already in use" versus "cannot assign requested
 * address" is the message an operator needs. Binding here also gives the
 * ":port" dual-stack form an IPv4 fallback on hosts without IPv6.
 *
 * One MHD internal polling thread serves every connection, so requests
 * run one at a time and the scrape buffer can be reused without a lock.
 *
 * Starvation: a slow client costs the thread nothing (MHD polls), only a
 * connection slot, and a client that trickles a byte now and then is never
 * idle long enough for the timeout. So slots are many
 * (HTTP_SERVER_MAX_CONNECTIONS) and one address may hold only a few
 * (HTTP_SERVER_PER_IP_CONNECTIONS; MHD closes the others at once); a
 * client that holds slots from many addresses is met by the probes'
 * own listener (http_server__start_probes(), --health-addr), whose slots
 * the metrics clients never see.
 *
 * Deferred requests (/debug/pprof/profile): the handler gets a struct
 * http_deferred and answers it now or from another thread. Until then the
 * connection is suspended, so the polling thread keeps serving others.
 * Answer and suspension meet under the server's lock: an answer that
 * comes before the suspension is queued at once, one that comes after
 * resumes the connection, and MHD calls on_request again to queue it. The
 * struct is freed when MHD says the request completed. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/http_server.h"
#include "core/log.h"
#include "core/parse.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"
#define LISTEN_BACKLOG 64
#define PROFILE_PATH "/debug/pprof/profile"

struct http_server {
	struct MHD_Daemon *daemon;
	struct http_handlers h;
	void *ctx;
	struct metrics_buf *metrics; /* reused by every scrape (one at a time) */
	char *addr;                  /* as given, for messages */
	const char *flag;            /* --metrics-addr or --health-addr */
	bool probes_only;            /* /metrics is 404 here */
	uint16_t port;
	pthread_mutex_t lock;        /* deferred answers against suspension */
};

/* req_cls of a request whose headers are in (any non-NULL address). */
static int headers_seen;

struct http_deferred {
	struct http_server *s;
	struct MHD_Connection *conn;
	bool suspended, answered;   /* under s->lock */
	unsigned status, retry_after_s;
	const char *type;
	void *body;
	size_t len;
};

int http_addr__parse(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
		     bool *any_dual, const char **why)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	const char *host, *port_s, *end, *ignored;
	char buf[INET6_ADDRSTRLEN];
	bool v6 = false;
	uint64_t port;
	size_t hlen;

	if (!why)
		why = &ignored;
	memset(ss, 0, sizeof(*ss));
	*any_dual = false;
	if (!addr || !*addr) {
		*why = "empty address";
		return -EINVAL;
	}
	if (addr[0] == '[') {
		host = addr + 1;
		end = strchr(host, ']');
		if (!end) {
			*why = "missing ']' after the IPv6 address";
			return -EINVAL;
		}
		if (end[1] != ':') {
			*why = "expected ':port' after ']'";
			return -EINVAL;
		}
		port_s = end + 2;
		v6 = true;
	} else {
		host = addr;
		end = strrchr(addr, ':');
		if (!end) {
			*why = "expected host:port, [IPv6]:port or :port";
			return -EINVAL;
		}
		if (memchr(host, ':', (size_t)(end - host))) {
			*why = "an IPv6 address goes in brackets, as in [::1]:4041";
			return -EINVAL;
		}
		port_s = end + 1;
	}
	hlen = (size_t)(end - host);
	if (parse_u64(port_s, 0, 65535, &port)) {
		*why = "the port must be a number from 0 to 65535";
		return -EINVAL;
	}
	if (hlen >= sizeof(buf)) {
		*why = "the host must be a numeric IPv4 address, [IPv6] or localhost";
		return -EINVAL;
	}
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';

	if (v6 || hlen == 0) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*sin6);
		if (!v6) {
			sin6->sin6_addr = in6addr_any;
			*any_dual = true;
		} else if (inet_pton(AF_INET6, buf, &sin6->sin6_addr) != 1) {
			*why = "not a numeric IPv6 address";
			return -EINVAL;
		}
		return 0;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	*len = sizeof(*sin);
	if (strcmp(buf, "localhost") == 0)
		snprintf(buf, sizeof(buf), "127.0.0.1");
	if (inet_pton(AF_INET, buf, &sin->sin_addr) != 1) {
		*why = "the host must be a numeric IPv4 address, [IPv6] or localhost";
		return -EINVAL;
	}
	return 0;
}

/* A listening socket on ss, or -errno. SO_REUSEADDR lets a restarted agent
 * rebind while old connections sit in TIME_WAIT; on Linux it does not let
 * two sockets listen on one address, so a second agent still gets
 * EADDRINUSE. */
static int listen_on(const struct sockaddr_storage *ss, socklen_t len, bool dual)
{
	int fd, err, one = 1, v6only = !dual;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto cleanup;
	/* Explicit: the system default (net.ipv6.bindv6only) varies. */
	if (ss->ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0)
		goto cleanup;
	if (bind(fd, (const struct sockaddr *)ss, len) < 0)
		goto cleanup;
	if (listen(fd, LISTEN_BACKLOG) < 0)
		goto cleanup;
	return fd;
cleanup:
	err = -errno;
	close(fd);
	return err;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* MHD's own diagnostics (client errors, resource limits): debug only. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	const struct http_server *s = cls;
	char msg[512];
	int n;

	if (log_level < LOG_DEBUG)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	while (n > 0 && (size_t)n < sizeof(msg) && msg[n - 1] == '\n')
		msg[--n] = '\0';
	pr_debug("%s %s: %s", s->flag, s->addr, msg);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
	    (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	     MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES))
		ret = MHD_NO;
	else
		ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status,
				  const char *body)
{
	return reply(conn, status, TEXT_PLAIN, body, strlen(body));
}

static enum MHD_Result serve_metrics(struct http_server *s, struct MHD_Connection *conn)
{
	char body[128];
	size_t len;
	const char *data;
	int err = 0;

	metrics_buf__reset(s->metrics);
	if (s->h.metrics)
		err = s->h.metrics(s->metrics, s->ctx);
	/* A cut exposition parses fine and silently drops series: fail the
	 * scrape instead, so Prometheus shows it (up == 0). */
	if (!err && metrics_buf__truncated(s->metrics))
		err = -ENOSPC;
	if (err) {
		pr_warn("%s %s: /metrics: %s%s", s->flag, s->addr, strerror(-err),
			err == -ENOSPC ? " (output exceeds its size bound)" : "");
		snprintf(body, sizeof(body), "metrics: %s\n", strerror(-err));
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
	}
	data = metrics_buf__data(s->metrics, &len);
	return reply(conn, MHD_HTTP_OK, METRICS_CONTENT_TYPE, data, len);
}

static enum MHD_Result serve_check(struct http_server *s, struct MHD_Connection *conn,
				   bool (*check)(void *, char *, size_t), const char *dflt)
{
	char reason[256] = "", body[sizeof(reason) + 1];

	if (!check || check(s->ctx, reason, sizeof(reason)))
		return reply_text(conn, MHD_HTTP_OK, "ok\n");
	reason[sizeof(reason) - 1] = '\0';
	/* One line, whatever the handler wrote. */
	for (char *p = reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	snprintf(body, sizeof(body), "%s\n", reason[0] ? reason : dflt);
	return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, body);
}

void http_deferred__reply(struct http_deferred *d, unsigned status, const char *type,
			  void *body, size_t len, unsigned retry_after_s)
{
	struct http_server *s = d->s;

	pthread_mutex_lock(&s->lock);
	d->status = status;
	d->type = type;
	d->body = body;
	d->len = body ? len : 0;
	d->retry_after_s = retry_after_s;
	d->answered = true;
	/* MHD_resume_connection is safe from any thread with MHD_USE_ITC. */
	if (d->suspended)
		MHD_resume_connection(d->conn);
	pthread_mutex_unlock(&s->lock);
}

/* Queues d's answer; its body goes to the response. */
static enum MHD_Result queue_deferred(struct http_deferred *d)
{
	struct MHD_Response *r;
	enum MHD_Result ret = MHD_NO;
	char retry[16];

	r = MHD_create_response_from_buffer(d->len, d->body, MHD_RESPMEM_MUST_FREE);
	if (!r)
		return MHD_NO;
	d->body = NULL;
	snprintf(retry, sizeof(retry), "%u", d->retry_after_s);
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, d->type) == MHD_YES &&
	    (!d->retry_after_s ||
	     MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry) == MHD_YES))
		ret = MHD_queue_response(d->conn, d->status, r);
	MHD_destroy_response(r);
	return ret;
}

struct args {
	struct http_arg v[HTTP_SERVER_MAX_ARGS];
	size_t n;
	bool over;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct args *a = cls;

	if (a->n == HTTP_SERVER_MAX_ARGS) {
		a->over = true;
		return MHD_NO;
	}
	a->v[a->n++] = (struct http_arg){ key, value ? value : "" };
	return MHD_YES;
}

/* GET /debug/pprof/profile, once its request is in: hands it to the
 * handler, then queues the answer or suspends until it comes. */
static enum MHD_Result serve_deferred(struct http_server *s, struct MHD_Connection *conn,
				      void **req_cls)
{
	struct http_deferred *d;
	struct args a = { .n = 0 };
	enum MHD_Result ret = MHD_YES;
	char body[64];

	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
	if (a.over) {
		snprintf(body, sizeof(body), "more than %d query arguments\n", HTTP_SERVER_MAX_ARGS);
		return reply_text(conn, MHD_HTTP_BAD_REQUEST, body);
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	d->s = s;
	d->conn = conn;
	*req_cls = d;   /* freed by on_completed */
	s->h.profile(s->ctx, a.v, a.n, d);
	pthread_mutex_lock(&s->lock);
	if (d->answered) {
		ret = queue_deferred(d);
	} else {
		d->suspended = true;
		MHD_suspend_connection(conn);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct http_deferred *d = *req_cls;

	if (!d || (void *)d == (void *)&headers_seen)
		return;
	free(d->body);
	free(d);
	*req_cls = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct http_server *s = cls;
	bool profile = strcmp(url, PROFILE_PATH) == 0 && s->h.profile && !s->probes_only;

	/* MHD calls this once the headers are in, then again for each piece
	 * of body and once more at its end. A response queued on the first
	 * call makes MHD close the connection rather than read the body: what
	 * we want for a refused method, not for GETs, which scrapers send
	 * over kept-alive connections. */
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    (profile || strcmp(method, MHD_HTTP_METHOD_HEAD) != 0))
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (!*req_cls) {
		*req_cls = &headers_seen;
		return MHD_YES;
	}
	/* Called again after a resume: the answer is in. */
	if (*req_cls != &headers_seen)
		return queue_deferred(*req_cls);
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET body means nothing: dropped */
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") == 0 && !s->probes_only)
		return serve_metrics(s, conn);
	if (profile)
		return serve_deferred(s, conn, req_cls);
	if (strcmp(url, "/healthz") == 0)
		return serve_check(s, conn, s->h.healthy, "unhealthy");
	if (strcmp(url, "/ready") == 0)
		return serve_check(s, conn, s->h.ready, "not ready");
	return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* strerror() with a lower-case first letter, to follow "addr: ". */
static const char *reason_of(int err, char *buf, size_t n)
{
	snprintf(buf, n, "%s", strerror(err));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

static struct http_server *start(const char *addr, const struct http_handlers *h, void *ctx,
				 const char *flag, bool probes_only)
{
	static const struct http_handlers none;
	struct sockaddr_storage ss;
	struct http_server *s = NULL;
	struct stat st_listen, st_after;
	unsigned int flags;
	const char *why = NULL;
	char reason[128];
	int fd = -1, err;
	socklen_t len;
	bool dual;

	err = http_addr__parse(addr, &ss, &len, &dual, &why);
	if (err)
		goto cleanup;
	fd = listen_on(&ss, len, dual);
	if (dual && (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)) {
		/* ":port" on a host without IPv6: every IPv4 interface. */
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		uint16_t port = ((struct sockaddr_in6 *)&ss)->sin6_port;

		memset(&ss, 0, sizeof(ss));
		sin->sin_family = AF_INET;
		sin->sin_port = port;
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*sin);
		fd = listen_on(&ss, len, false);
	}
	err = fd < 0 ? fd : 0;
	if (!err && fstat(fd, &st_listen) < 0)
		err = -errno;
	if (err) {
		why = reason_of(-err, reason, sizeof(reason));
		goto cleanup;
	}

	err = -ENOMEM;
	why = "out of memory";
	s = calloc(1, sizeof(*s));
	if (!s)
		goto cleanup;
	pthread_mutex_init(&s->lock, NULL);
	s->h = h ? *h : none;
	s->ctx = ctx;
	s->flag = flag;
	s->probes_only = probes_only;
	s->port = bound_port(fd);
	s->addr = strdup(addr);
	s->metrics = metrics_buf__new(METRICS_BUF_DEFAULT_MAX);
	if (!s->addr || !s->metrics)
		goto cleanup;

	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_USE_ERROR_LOG |
		MHD_ALLOW_SUSPEND_RESUME;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				     MHD_OPTION_LISTEN_SOCKET, fd,
				     MHD_OPTION_CONNECTION_LIMIT,
				     (unsigned int)HTTP_SERVER_MAX_CONNECTIONS,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				     (unsigned int)HTTP_SERVER_PER_IP_CONNECTIONS,
				     MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)HTTP_SERVER_TIMEOUT_S,
				     MHD_OPTION_END);
	if (!s->daemon) {
		err = -EIO;
		why = "libmicrohttpd could not start (its reason is logged at debug level)";
		/* MHD closes a socket it was given on some failure paths and
		 * not on others: close it only if fd still is our socket. */
		if (fstat(fd, &st_after) < 0 || st_after.st_ino != st_listen.st_ino ||
		    st_after.st_dev != st_listen.st_dev)
			fd = -1;
		goto cleanup;
	}
	/* The daemon owns fd now; MHD_stop_daemon() closes it. */
	pr_debug("%s %s: listening on port %u", flag, addr, s->port);
	return s;
cleanup:
	pr_error("%s %s: %s", flag, addr ? addr : "(null)", why);
	if (fd >= 0)
		close(fd);
	if (s) {
		metrics_buf__free(s->metrics);
		free(s->addr);
		pthread_mutex_destroy(&s->lock);
		free(s);
	}
	errno = -err;
	return NULL;
}

struct http_server *http_server__start(const char *addr, const struct http_handlers *h,
				       void *ctx)
{
	return start(addr, h, ctx, "--metrics-addr", false);
}

struct http_server *http_server__start_probes(const char *addr, const struct http_handlers *h,
					      void *ctx)
{
	return start(addr, h, ctx, "--health-addr", true);
}

uint16_t http_server__port(const struct http_server *s)
{
	return s->port;
}

void http_server__stop(struct http_server *s)
{
	if (!s)
		return;
	/* Wakes the server thread through its inter-thread channel, closes
	 * the listening socket and every connection, and joins the thread. */
	MHD_stop_daemon(s->daemon);
	metrics_buf__free(s->metrics);
	free(s->addr);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
