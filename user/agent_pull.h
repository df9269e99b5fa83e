/* SPDX-License-Identifier: BSD-2-Clause */
/* Profiles pulled from the agent: GET /debug/pprof/profile?seconds=N on
 * the metrics listener answers with the node's profile of the next N
 * seconds (pprof, gzipped, as Go's net/http/pprof serves it), its samples
 * carrying their label sets. Every other query argument selects by label:
 * `namespace=shop` keeps that namespace's samples, and the argument's name
 * and value joined by '=' form one selector of kiln view's --match
 * (`pod=~web-.*` is a regular expression, `pod!=web-a` a negation).
 *
 * A pull starts at the first drain after its request and ends at the first
 * drain N seconds later (the loop is woken for a request, and wakes to
 * drain when one is due, so the window is N s within a millisecond); it reads the samples the
 * pipeline's tap shows, so it shares the one sampler and changes nothing
 * that is pushed or written. At most max_concurrent pulls at once (more
 * get 429 with Retry-After), N at most max_seconds (more: 400), and each
 * pull's profile at most PULL_MAX_NODES stack-tree nodes (samples beyond
 * it are counted, not added).
 *
 * THREADING: pulls__request runs on the HTTP server's thread, the rest
 * on the agent's loop thread; the pull list is under one mutex. */
#ifndef KILN_AGENT_PULL_H
#define KILN_AGENT_PULL_H

#include <stddef.h>
#include <stdint.h>

#include "core/frame.h"
#include "core/http_server.h"
#include "core/labels.h"
#include "core/metrics.h"

#define PULL_MAX_NODES (1u << 20)
/* seconds= when the request has none, as Go's handler (at most max). */
#define PULL_DEFAULT_SECONDS 30

struct pulls;

/* NULL + errno (ENOMEM). frequency is the sampler's (Hz). */
struct pulls *pulls__new(unsigned max_concurrent, double max_seconds, unsigned frequency);
/* A request for a profile (the HTTP server's profile handler): answers
 * 400 or 429 at once, or registers the pull. */
void pulls__request(struct pulls *p, const struct http_arg *args, size_t nargs,
		    struct http_deferred *d);
/* When a drain is due for the pulls (CLOCK_MONOTONIC): 0 when one waits
 * to start, else when the first running one has run its time;
 * UINT64_MAX: none. */
uint64_t pulls__drain_at(struct pulls *p);
/* One sample as the pipeline's tap shows it: added to the running pulls
 * whose selectors its labels satisfy. */
void pulls__add(struct pulls *p, const struct labels *labels, const struct frame *frames,
		size_t n, uint64_t count);
/* After a drain at now_ns: the waiting pulls start, those past their time
 * are encoded and answered. */
void pulls__drained(struct pulls *p, uint64_t now_ns);
/* Answers every pull with what it holds (the agent stops). */
void pulls__finish_all(struct pulls *p);
/* kiln_pull_* families. 0 or metrics_buf's -errno. */
int pulls__write_metrics(struct pulls *p, struct metrics_buf *b);
void pulls__free(struct pulls *p);

#endif
