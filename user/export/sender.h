/* SPDX-License-Identifier: BSD-2-Clause */
/* Delivery: a bounded FIFO of requests and one thread that sends them in
 * order, so a slow or absent server never blocks sampling or draining.
 * Connection errors, timeouts, 408, 429 and 5xx are retried (the head of
 * the queue, exponential backoff 1 s to 30 s with jitter, or the server's
 * Retry-After); 401 and 403 only while the secret files keep changing (a
 * rotation); other 4xx (400, 413, 422: the server will never take it) are
 * dropped, counted and logged once. A request whose profiles began more
 * than SENDER_MAX_AGE_NS ago is dropped, counted, before it is sent again:
 * the server refuses them. Beyond max_bytes queued the oldest waiting
 * request is dropped and counted. */
#ifndef KILN_EXPORT_SENDER_H
#define KILN_EXPORT_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/http_client.h"

/* Pyroscope refuses profiles that began more than an hour ago; a few
 * minutes are kept for the time on the wire and a server's clock. */
#define SENDER_MAX_AGE_NS (55ull * 60 * 1000000000)

struct sender_stats {
	uint64_t requests_sent, attempts_failed, retries;
	uint64_t profiles_sent, bytes_sent;
	uint64_t profiles_rejected;     /* 4xx: the server refused them */
	/* 2xx, but the server said it refused these (OTLP's partial success) */
	uint64_t profiles_partial;
	uint64_t profiles_dropped_full; /* queue bound */
	uint64_t profiles_dropped_shutdown;
	uint64_t profiles_dropped_old;  /* older than SENDER_MAX_AGE_NS */
	uint64_t queue_bytes, queue_items;
	uint64_t last_success_unix_ns;  /* 0: never */
	long last_status;               /* of the last attempt; 0: transport error */
};

struct sender;

enum sender_verdict {
	SENDER_DELIVERED,               /* 2xx: counted as sent, freed */
	SENDER_RETRY,                   /* kept at the head, sent again after a backoff */
	SENDER_REFUSED,                 /* dropped and counted in profiles_rejected */
};

/* How one destination's answers are read. */
struct sender_protocol {
	/* The decision after one attempt: err is http_client__post's (-errno:
	 * no HTTP response), status the response's, rotated whether the
	 * credentials changed since it was sent (credentials_changed). */
	enum sender_verdict (*classify)(int err, long status, bool rotated);
	/* After a 2xx: how many of the request's profiles the server says it
	 * refused all the same (OTLP's partial success; never retried), its
	 * message into msg. NULL: the protocol has no such answer. */
	uint32_t (*refused)(const uint8_t *body, size_t len, uint32_t profiles, char *msg,
			    size_t n);
	/* After a failure: the server's message from its body into msg. NULL:
	 * the HTTP client's reading (a JSON "message", else the first line). */
	void (*message)(const uint8_t *body, size_t len, char *msg, size_t n);
};

/* Pyroscope's push and ingest: sender__classify, no partial answers. */
extern const struct sender_protocol sender_pyroscope;

/* Starts the sending thread for a destination speaking proto (kept, not
 * copied). NULL + errno (logged). */
struct sender *sender__new(const struct sender_protocol *proto, const struct http_client_opts *http,
			   uint64_t max_bytes);
/* Queues one request; takes ownership of url and body (malloc'd), even on
 * failure; content_type and content_encoding (NULL: none) are static
 * strings. profiles is what it carries, for the counters; begin_unix_ns
 * when they begin (CLOCK_REALTIME), for their age. */
void sender__enqueue(struct sender *s, char *url, const char *content_type,
		     const char *content_encoding, uint8_t *body, size_t len, uint32_t profiles,
		     uint64_t begin_unix_ns);
/* Asks the thread to re-read the secret files before its next request. */
void sender__reload(struct sender *s);
void sender__stats(struct sender *s, struct sender_stats *out);
/* Sends what is queued for up to timeout seconds (retrying as usual), then
 * stops the thread; what is left is counted as dropped at shutdown. */
void sender__shutdown(struct sender *s, double timeout);
/* Stops (if not yet) and frees. NULL is fine. */
void sender__free(struct sender *s);

/* Pyroscope's rules: 2xx delivered; no response, 408, 429 and 5xx
 * retried; 401 and 403 retried only when rotated; the rest refused. */
enum sender_verdict sender__classify(int err, long status, bool rotated);
/* Seconds to wait after the failures-th failure in a row (>= 1): doubling
 * from 1 s to 30 s, jittered by r (uniform 32-bit) over the upper half;
 * the server's Retry-After (> 0) instead when given, at most 30 s. */
double sender__backoff(unsigned failures, double retry_after, uint32_t r);

#endif
