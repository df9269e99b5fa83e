// SPDX-License-Identifier: BSD-2-Clause
/* Background debuginfod lookups through libdebuginfod.
 *
 * DESIGN: one entry per build id, in a core/hashmap under one mutex: queued
 * (in a FIFO the workers take from), running, found (the path of the file
 * in libdebuginfod's cache) or missed (when). Each worker owns one
 * libdebuginfod client (a client serves one thread at a time) and asks it
 * for one build id at a time; its progress callback, which libdebuginfod
 * calls about once a second and at every chunk received, ends the
 * transfer past the time limit, past the size limit, or when kiln stops.
 * DEBUGINFOD_MAXTIME / DEBUGINFOD_MAXSIZE, when set, bound it too. The
 * entries of finished lookups sit on a core/lru list: past
 * DEBUGINFOD_ENTRIES_MAX the least recently asked-for is forgotten, so the
 * table never grows with the build ids a host (or a container making up
 * binaries) can show. Queued and running entries are never evicted; the
 * queue is bounded by DEBUGINFOD_QUEUE_MAX. */
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/elf.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/log.h"
#include "core/lru.h"
#include "symbolize/debuginfod.h"

const char *const debuginfod_result_names[DEBUGINFOD_RESULT_COUNT] = {
	[DEBUGINFOD_FOUND] = "found",	  [DEBUGINFOD_NOT_FOUND] = "not_found",
	[DEBUGINFOD_TIMEOUT] = "timeout", [DEBUGINFOD_TOO_LARGE] = "too_large",
	[DEBUGINFOD_ERROR] = "error",	  [DEBUGINFOD_CANCELLED] = "cancelled",
};

#define ID_MAX (2 * ELF_BUILD_ID_MAX)

enum state { QUEUED, RUNNING, FOUND, MISSED };

struct entry {
	struct lru_node lru; /* FOUND and MISSED only */
	struct entry *next; /* QUEUED: the next in the queue */
	uint64_t hash;
	enum state state;
	uint64_t missed_ns; /* MISSED: when */
	char *path; /* FOUND */
	char id[ID_MAX + 1];
};

struct worker {
	struct debuginfod *d;
	debuginfod_client *client;
	pthread_t thread;
	bool started;
	uint64_t deadline_ns; /* of the lookup under way */
	enum debuginfod_result why; /* set by progress() when it ended a transfer */
	bool ended;
};

struct debuginfod {
	struct debuginfod_opts o;
	pthread_mutex_t lock;
	pthread_cond_t work; /* the queue has an entry, or stopping */
	pthread_cond_t idle; /* a lookup finished */
	struct hashmap index; /* hash of id -> struct entry */
	struct lru done; /* FOUND and MISSED entries */
	struct entry *head, *tail; /* the queue */
	size_t queued, running, entries;
	atomic_bool stopping;
	struct debuginfod_stats stats;
	struct worker workers[DEBUGINFOD_LOOKUPS_MAX];
	size_t nworkers;
};

static bool id_is(const void *ctx, const void *val, const void *key)
{
	(void)ctx;
	return strcmp(((const struct entry *)val)->id, key) == 0;
}

static struct entry *find(struct debuginfod *d, const char *id)
{
	return hashmap__get(&d->index, hash__str(id), id_is, NULL, id);
}

static void entry_free(struct debuginfod *d, struct entry *e)
{
	hashmap__del(&d->index, e->hash, id_is, NULL, e->id);
	d->entries--;
	free(e->path);
	free(e);
}

/* Called by libdebuginfod during a transfer: non-zero ends it. a: bytes
 * received once a server answers (a loop count before), b: the size the
 * server announced, when it did. */
static int progress(debuginfod_client *c, long a, long b)
{
	struct worker *w = debuginfod_get_user_data(c);

	if (atomic_load(&w->d->stopping))
		w->why = DEBUGINFOD_CANCELLED;
	else if (monotonic_ns() > w->deadline_ns)
		w->why = DEBUGINFOD_TIMEOUT;
	else if ((a > 0 && (uint64_t)a > w->d->o.max_bytes) ||
		 (b > 0 && (uint64_t)b > w->d->o.max_bytes))
		w->why = DEBUGINFOD_TOO_LARGE;
	else
		return 0;
	w->ended = true;
	return 1;
}

/* libdebuginfod's answer (an fd, or -errno) as a result; *bytes: the
 * file's size when found. Closes fd. */
static enum debuginfod_result classify(struct worker *w, int fd, uint64_t *bytes)
{
	struct stat sb;

	if (fd >= 0) {
		int err = fstat(fd, &sb);

		close(fd);
		if (err || !S_ISREG(sb.st_mode))
			return DEBUGINFOD_ERROR;
		*bytes = (uint64_t)sb.st_size;
		return *bytes > w->d->o.max_bytes ? DEBUGINFOD_TOO_LARGE : DEBUGINFOD_FOUND;
	}
	if (w->ended)
		return w->why;
	switch (fd) {
	case -ENOENT:
		return DEBUGINFOD_NOT_FOUND;
	case -EFBIG:
		return DEBUGINFOD_TOO_LARGE;
	case -ETIME:
		return DEBUGINFOD_TIMEOUT;
	default:
		return DEBUGINFOD_ERROR;
	}
}

/* Under the lock: the lookup of e ended with r; path (libdebuginfod's,
 * NULL or not) is kept when found, else freed. */
static void finish(struct debuginfod *d, struct entry *e, enum debuginfod_result r, char *path,
		   uint64_t bytes)
{
	d->running--;
	d->stats.results[r]++;
	if (r == DEBUGINFOD_FOUND) {
		e->state = FOUND;
		e->path = path;
		d->stats.bytes += bytes;
	} else {
		e->state = MISSED;
		e->missed_ns = monotonic_ns();
		free(path);
	}
	lru__push(&d->done, &e->lru);
	pthread_cond_broadcast(&d->idle);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct debuginfod *d = w->d;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		char id[ID_MAX + 1], *path = NULL;
		enum debuginfod_result r;
		uint64_t bytes = 0;
		struct entry *e;
		int fd;

		while (!atomic_load(&d->stopping) && !d->head)
			pthread_cond_wait(&d->work, &d->lock);
		if (atomic_load(&d->stopping))
			break;
		e = d->head;
		d->head = e->next;
		if (!d->head)
			d->tail = NULL;
		d->queued--;
		d->running++;
		d->stats.lookups++;
		e->state = RUNNING;
		memcpy(id, e->id, sizeof(id));
		w->deadline_ns = monotonic_ns() + d->o.timeout_ns;
		w->ended = false;
		pthread_mutex_unlock(&d->lock);

		/* The entry stays: running entries are never evicted. */
		fd = debuginfod_find_debuginfo(w->client, (const unsigned char *)id, 0, &path);
		r = classify(w, fd, &bytes);
		if (r == DEBUGINFOD_FOUND)
			pr_info("debuginfod: fetched the debug file of build id %s (%llu bytes)",
				id, (unsigned long long)bytes);
		else
			pr_debug("debuginfod: build id %s: %s (%s)", id, debuginfod_result_names[r],
				 fd < 0 ? strerror(-fd) : "file refused");

		pthread_mutex_lock(&d->lock);
		finish(d, e, r, path, bytes);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static bool urls_set(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && urls[strspn(urls, " \t")];
}

struct debuginfod *debuginfod__new(const struct debuginfod_opts *opts)
{
	pthread_condattr_t ca;
	struct debuginfod *d;
	int err = 0;

	if (!opts->lookups || !urls_set()) {
		errno = 0;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->o = *opts;
	if (d->o.lookups > DEBUGINFOD_LOOKUPS_MAX)
		d->o.lookups = DEBUGINFOD_LOOKUPS_MAX;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->work, NULL);
	pthread_cond_init(&d->idle, &ca);
	pthread_condattr_destroy(&ca);
	for (size_t i = 0; i < d->o.lookups && !err; i++) {
		struct worker *w = &d->workers[i];

		w->d = d;
		w->client = debuginfod_begin();
		if (!w->client) {
			err = errno ? errno : ENOMEM;
			break;
		}
		d->nworkers++;
		debuginfod_set_user_data(w->client, w);
		debuginfod_set_progressfn(w->client, progress);
		err = pthread_create(&w->thread, NULL, worker_main, w);
		w->started = err == 0;
	}
	if (err) {
		pr_warn("debuginfod: cannot start its lookups (%s): binaries without local debug files keep their .dynsym names",
			strerror(err));
		debuginfod__free(d);
		errno = err;
		return NULL;
	}
	pr_info("debuginfod: debug files missing locally are looked up on the servers of DEBUGINFOD_URLS (%llu at a time, at most %.0f s and %llu MiB each)",
		(unsigned long long)d->o.lookups, d->o.timeout_ns / 1e9,
		(unsigned long long)(d->o.max_bytes >> 20));
	return d;
}

static bool valid_id(const char *id)
{
	size_t n = strnlen(id, ID_MAX + 1);

	return n >= 2 && n <= ID_MAX && n % 2 == 0 && strspn(id, "0123456789abcdef") == n;
}

/* Under the lock: a new entry for id, to be queued (the caller checked
 * that the queue has room), or NULL (refused, counted). */
static struct entry *new_entry(struct debuginfod *d, const char *id)
{
	struct entry *e;

	if (d->entries >= DEBUGINFOD_ENTRIES_MAX) {
		struct entry *old = LRU_ENTRY(d->done.tail, struct entry, lru);

		if (!old) {
			d->stats.refused_table++;
			return NULL;
		}
		lru__unlink(&d->done, &old->lru);
		entry_free(d, old);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(e->id, id, strlen(id) + 1);
	e->hash = hash__str(id);
	if (hashmap__add(&d->index, e->hash, e)) {
		free(e);
		return NULL;
	}
	d->entries++;
	return e;
}

bool debuginfod__request(struct debuginfod *d, const char *build_id, uint64_t now)
{
	struct entry *e;
	bool queue = false, waiting;

	if (!d || !valid_id(build_id))
		return false;
	pthread_mutex_lock(&d->lock);
	e = find(d, build_id);
	if (e && e->state == MISSED &&
	    (now < e->missed_ns || now - e->missed_ns < d->o.miss_ttl_ns)) {
		d->stats.remembered++;
		lru__touch(&d->done, &e->lru);
	} else if ((!e || e->state == MISSED) && d->queued >= DEBUGINFOD_QUEUE_MAX) {
		d->stats.refused_queue++;
	} else if (e && e->state == MISSED) {
		lru__unlink(&d->done, &e->lru);
		queue = true;
	} else if (!e) {
		e = new_entry(d, build_id);
		queue = e != NULL;
	}
	if (queue) {
		e->state = QUEUED;
		e->next = NULL;
		if (d->tail)
			d->tail->next = e;
		else
			d->head = e;
		d->tail = e;
		d->queued++;
		pthread_cond_signal(&d->work);
	}
	waiting = e && (e->state == QUEUED || e->state == RUNNING);
	pthread_mutex_unlock(&d->lock);
	return waiting;
}

bool debuginfod__fetched(struct debuginfod *d, const char *build_id, char *path, size_t len)
{
	struct entry *e;
	bool found = false;

	if (!d)
		return false;
	pthread_mutex_lock(&d->lock);
	e = find(d, build_id);
	if (e && e->state == FOUND && strlen(e->path) < len) {
		memcpy(path, e->path, strlen(e->path) + 1);
		lru__touch(&d->done, &e->lru);
		found = true;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool debuginfod__waiting(struct debuginfod *d, const char *build_id)
{
	struct entry *e;
	bool waiting;

	if (!d)
		return false;
	pthread_mutex_lock(&d->lock);
	e = find(d, build_id);
	waiting = e && (e->state == QUEUED || e->state == RUNNING);
	pthread_mutex_unlock(&d->lock);
	return waiting;
}

void debuginfod__unusable(struct debuginfod *d, const char *build_id, uint64_t now)
{
	struct entry *e;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	e = find(d, build_id);
	if (e && e->state == FOUND) {
		e->state = MISSED;
		e->missed_ns = now;
		free(e->path);
		e->path = NULL;
	}
	pthread_mutex_unlock(&d->lock);
}

size_t debuginfod__wait(struct debuginfod *d, uint64_t timeout_ns)
{
	struct timespec until;
	size_t left;

	if (!d)
		return 0;
	until = timespec_at(monotonic_ns() + timeout_ns);
	pthread_mutex_lock(&d->lock);
	while (d->queued + d->running &&
	       pthread_cond_timedwait(&d->idle, &d->lock, &until) != ETIMEDOUT)
		;
	left = d->queued + d->running;
	pthread_mutex_unlock(&d->lock);
	return left;
}

void debuginfod__stats(struct debuginfod *d, struct debuginfod_stats *out)
{
	if (!d) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&d->lock);
	*out = d->stats;
	out->pending = d->queued + d->running;
	pthread_mutex_unlock(&d->lock);
}

static void free_entry_cb(uint64_t hash, void *val, void *ctx)
{
	struct entry *e = val;

	(void)hash;
	(void)ctx;
	free(e->path);
	free(e);
}

void debuginfod__free(struct debuginfod *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	atomic_store(&d->stopping, true);
	pthread_cond_broadcast(&d->work);
	pthread_mutex_unlock(&d->lock);
	for (size_t i = 0; i < d->nworkers; i++) {
		if (d->workers[i].started)
			pthread_join(d->workers[i].thread, NULL);
		debuginfod_end(d->workers[i].client);
	}
	hashmap__each(&d->index, free_entry_cb, NULL);
	hashmap__clear(&d->index);
	pthread_cond_destroy(&d->work);
	pthread_cond_destroy(&d->idle);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
