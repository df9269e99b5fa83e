/* SPDX-License-Identifier: BSD-2-Clause */
/* Debug files fetched from debuginfod servers (libdebuginfod: the servers
 * of DEBUGINFOD_URLS, its cache in DEBUGINFOD_CACHE_PATH, and the rest of
 * its environment), for binaries whose local debug-file sources all
 * failed. Nothing here blocks its caller: a request queues a lookup that
 * one of a few worker threads runs, each download bounded in time and
 * size; the caller asks later whether the file arrived. Every answer is
 * remembered by build id: a file fetched, or a miss (not found, timed out,
 * too large, failed) for miss_ttl_ns. The table of build ids and the queue
 * are bounded, and whatever does not fit is refused and counted.
 * Thread-safe. */
#ifndef KILN_SYMBOLIZE_DEBUGINFOD_H
#define KILN_SYMBOLIZE_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEBUGINFOD_LOOKUPS_MAX 16 /* worker threads */
#define DEBUGINFOD_QUEUE_MAX 256 /* lookups waiting for a worker */
#define DEBUGINFOD_ENTRIES_MAX 4096 /* build ids remembered */

struct debuginfod_opts {
	uint64_t lookups; /* at once (worker threads); 0: off */
	uint64_t timeout_ns; /* one download, all servers */
	uint64_t max_bytes; /* one debug file */
	uint64_t miss_ttl_ns; /* how long a miss is remembered */
};

/* How a lookup ended. */
enum debuginfod_result {
	DEBUGINFOD_FOUND = 0,
	DEBUGINFOD_NOT_FOUND, /* every server said 404 (or libdebuginfod's cache did) */
	DEBUGINFOD_TIMEOUT, /* past timeout_ns */
	DEBUGINFOD_TOO_LARGE, /* past max_bytes */
	DEBUGINFOD_ERROR, /* no server answered, or another error */
	DEBUGINFOD_CANCELLED, /* kiln was stopping */
	DEBUGINFOD_RESULT_COUNT
};

/* "found", "not_found", "timeout", "too_large", "error", "cancelled". */
extern const char *const debuginfod_result_names[DEBUGINFOD_RESULT_COUNT];

struct debuginfod_stats {
	uint64_t lookups; /* started by a worker */
	uint64_t results[DEBUGINFOD_RESULT_COUNT];
	uint64_t remembered; /* requests answered by a remembered miss */
	uint64_t refused_queue; /* requests refused: DEBUGINFOD_QUEUE_MAX waiting */
	uint64_t refused_table; /* requests refused: every remembered id busy */
	uint64_t bytes; /* of the debug files fetched */
	uint64_t pending; /* now: queued or being looked up */
};

struct debuginfod;

/* Starts opts->lookups workers when DEBUGINFOD_URLS names a server; NULL
 * with errno 0 when it does not or opts->lookups is 0 (nothing to do),
 * NULL with errno set when the workers or libdebuginfod's clients could
 * not be made. */
struct debuginfod *debuginfod__new(const struct debuginfod_opts *opts);
/* Queues a lookup of build_id (lower-case hex) unless it is known: being
 * looked up, fetched, or a miss younger than miss_ttl_ns (counted as
 * remembered) at now (monotonic ns). True when a lookup is queued or under
 * way after the call. */
bool debuginfod__request(struct debuginfod *d, const char *build_id, uint64_t now);
/* True when build_id's debug file was fetched; its path (in
 * libdebuginfod's cache, a host path) is copied into path (len bytes). */
bool debuginfod__fetched(struct debuginfod *d, const char *build_id, char *path, size_t len);
/* True when build_id is queued or being looked up. */
bool debuginfod__waiting(struct debuginfod *d, const char *build_id);
/* The file fetched for build_id was no use (refused by the safe opener or
 * the ELF checks): remembered as a miss from now on, for miss_ttl_ns. */
void debuginfod__unusable(struct debuginfod *d, const char *build_id, uint64_t now);
/* Waits until no lookup is queued or under way, at most timeout_ns.
 * Returns how many still are. */
size_t debuginfod__wait(struct debuginfod *d, uint64_t timeout_ns);
void debuginfod__stats(struct debuginfod *d, struct debuginfod_stats *out);
/* Cancels the lookups under way (libdebuginfod notices within about a
 * second), joins the workers, frees everything. */
void debuginfod__free(struct debuginfod *d);

#endif
