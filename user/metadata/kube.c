// SPDX-License-Identifier: BSD-2-Clause
/* The Kubernetes pod watcher.
 *
 * DESIGN. One thread runs the list/watch protocol against the API server
 * with one libcurl easy handle (so the connection is kept alive between a
 * list and the watches that follow it):
 *
 *   list    GET /api/v1/pods?fieldSelector=spec.nodeName%3D<node>&resourceVersion=0
 *           &limit=<page size>, then ...&limit=<page size>&continue=<token>
 *           while a page has metadata.continue (Kubernetes' chunked
 *           list): each page goes into the index as it comes
 *           (pods__list_page), so memory is bounded by a page, not by
 *           the list; the last page's resourceVersion is where the watch
 *           starts. A continue token that expired (410 on a later page)
 *           starts the list over, at most LIST_RESTARTS_MAX times in a
 *           row. An API server that serves resourceVersion=0 from its
 *           cache may ignore limit: a page larger than the 64 MiB bound
 *           then switches this watcher to lists without resourceVersion
 *           (served in pages by etcd), at once.
 *   watch   GET ...&watch=1&resourceVersion=<rv>&allowWatchBookmarks=true
 *           &timeoutSeconds=300, a chunked stream of one event per line;
 *           ADDED/MODIFIED/DELETED go to the index and advance rv, BOOKMARK
 *           only advances rv.
 *
 * What happens next depends on how a request ended:
 *   watch ended normally             watch again from rv
 *   410 (HTTP status or ERROR event) list again at once (rv is too old)
 *   401                              re-read the token; retry at once if it
 *                                    changed, else back off
 *   lost events (a line that is not
 *   JSON, over-long, truncated, a
 *   non-410 ERROR event)             back off, then list again
 *   anything else (network, 5xx)     back off, then watch again from rv
 *                                    (or list, before the first list)
 * Backoff is exponential, 1 s .. 30 s, with jitter (half to all of the
 * step), reset by a request that got through.
 *
 * The token file is re-read every minute (service-account tokens rotate)
 * and on a 401. The token never reaches a log line.
 *
 * Stopping: kube__stop sets a flag that the transfer's progress callback
 * (called at least about once a second, even on an idle watch) turns into
 * an abort, and wakes a backoff sleep through the condition variable.
 *
 * Credentials: a token is never sent over plain http:// unless the user
 * said so (--allow-insecure-credentials); kube__start refuses otherwise.
 *
 * Bounds: a list page 64 MiB and KUBE_PAGE_MAX pods, a watch line 16 MiB, an error body 64 KiB
 * (the rest is dropped), the token 64 KiB, a resourceVersion 256 bytes. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/curl_handle.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/url.h"
#include "metadata/kube.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_TOKEN SA_DIR "/token"
#define SA_CA SA_DIR "/ca.crt"

#define TOKEN_MAX (64u << 10)
#define LIST_BODY_MAX (64u << 20)
#define LINE_MAX_BYTES (16u << 20)
#define ERROR_BODY_MAX (64u << 10)
#define RV_MAX KUBE_RV_MAX
#define LIST_RESTARTS_MAX 3
/* Node names are DNS subdomains (253); an API URL is scheme://host:port. */
#define NODE_NAME_MAX 253
#define API_URL_MAX 512
#define URL_MAX 16384           /* fits the above and a continue token, escaped */
#define WATCH_TIMEOUT_S 300
#define TOKEN_REFRESH_NS (60ull * 1000000000ull)
#define BACKOFF_MIN_S 1.0
#define BACKOFF_MAX_S 30.0

enum outcome {
	DONE = 0,               /* list stored / watch ended normally */
	GONE,                   /* 410: list again now */
	UNAUTHORIZED,           /* 401 */
	FAILED,                 /* back off, watch again from rv */
	FAILED_RELIST,          /* back off, list again: events may be lost */
	STOPPED,
};

enum xfer_kind { XFER_LIST, XFER_WATCH };

struct kube {
	char *base;             /* scheme://host:port, no trailing '/' */
	char *token_file;       /* NULL: no Authorization header */
	char *ca_file;          /* NULL: libcurl's default bundle */
	char *node;
	char *selector;         /* escaped spec.nodeName=<node> */
	struct pods *pods;
	unsigned page_size;
	bool list_consistent;   /* lists without resourceVersion=0 */

	pthread_t thread;
	pthread_mutex_t lock;   /* stats; pairs with wake for backoff sleeps */
	pthread_cond_t wake;
	atomic_bool stop;
	struct kube_stats stats;

	/* Owned by the thread. */
	CURL *curl;
	struct curl_slist *headers;
	char *token;
	uint64_t token_at;
	char rv[RV_MAX + 1];
	unsigned failures;      /* consecutive, for the backoff step */
	unsigned gones;         /* consecutive 410s with no events in between */
	uint64_t bad_lines;     /* for log rate limiting */
	char errbuf[CURL_ERROR_SIZE];

	/* The transfer in progress. */
	struct {
		enum xfer_kind kind;
		long status;
		char *buf;      /* list body, error body, or the partial watch line */
		size_t len, cap;
		enum outcome outcome;   /* set by the watch stream */
		uint64_t lines;
		bool too_big;           /* a list page beyond LIST_BODY_MAX */
	} x;
};

static bool stopping(struct kube *k)
{
	return atomic_load(&k->stop);
}

static void stat_add(struct kube *k, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&k->lock);
	*field += n;
	pthread_mutex_unlock(&k->lock);
}

/* Logs the 1st, 10th, 100th, ... occurrence of a recurring problem. */
static bool log_worthy(uint64_t n)
{
	while (n >= 10 && n % 10 == 0)
		n /= 10;
	return n == 1;
}

/* Copies at most max bytes of server text, non-printables as '?'. */
static void printable(char *dst, size_t size, const char *src, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < size; i++)
		dst[n++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[n] = '\0';
}

/* ---- token ---- */

/* Reads the token file. 0 and *changed, or -errno (the old token stays). */
static int token_load(struct kube *k, bool *changed)
{
	struct curl_slist *h, *h2;
	char *tok = NULL, *hdr;
	size_t hl;
	int err;

	*changed = false;
	k->token_at = monotonic_ns();
	if (!k->token_file)
		return 0;
	stat_add(k, &k->stats.token_reads, 1);
	err = secret__read(k->token_file, TOKEN_MAX, SECRET_TOKEN, &tok);
	if (err)
		return err;
	if (k->token && !strcmp(k->token, tok)) {
		secret__free(tok);
		return 0;
	}
	hl = strlen(tok) + sizeof("Authorization: Bearer ");
	hdr = malloc(hl);
	if (!hdr) {
		secret__free(tok);
		return -ENOMEM;
	}
	snprintf(hdr, hl, "Authorization: Bearer %s", tok);
	h = curl_slist_append(NULL, "Accept: application/json");
	h2 = h ? curl_slist_append(h, hdr) : NULL;
	explicit_bzero(hdr, hl);
	free(hdr);
	if (!h2) {
		curl_slist_free_all(h);
		secret__free(tok);
		return -ENOMEM;
	}
	secret__free(k->token);
	/* libcurl keeps a copy of the old list in no way but the pointer:
	 * set the new one before freeing the old. */
	curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, h2);
	curl_slist_free_all(k->headers);
	k->headers = h2;
	k->token = tok;
	*changed = true;
	return 0;
}

static const char *token_error(int err)
{
	switch (err) {
	case -EFBIG:
		return "larger than 64 KiB";
	case -ENODATA:
		return "empty";
	case -EBADMSG:
		return "not a bearer token (control or non-ASCII characters)";
	default:
		return strerror(-err);
	}
}

/* ---- transfers ---- */

static int xfer_reserve(struct kube *k, size_t more)
{
	size_t cap = k->x.cap ? k->x.cap : 4096;
	char *b;

	if (k->x.len + more + 1 <= k->x.cap)
		return 0;
	while (cap < k->x.len + more + 1)
		cap *= 2;
	b = realloc(k->x.buf, cap);
	if (!b)
		return -ENOMEM;
	k->x.buf = b;
	k->x.cap = cap;
	return 0;
}

/* Remembers an object's metadata.resourceVersion, when it has a sane one. */
static void remember_rv(struct kube *k, const json_t *obj)
{
	json_t *v = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");
	const char *s = json_string_value(v);

	if (!s || !*s || json_string_length(v) > RV_MAX || strlen(s) != json_string_length(v))
		return;
	memcpy(k->rv, s, json_string_length(v) + 1);
}

static void bad_line(struct kube *k, const char *what, const char *detail)
{
	k->bad_lines++;
	stat_add(k, &k->stats.bad_objects, 1);
	if (log_worthy(k->bad_lines))
		pr_warn("kube: node '%s': watch: %s%s%s (%" PRIu64 " so far); listing again",
			k->node, what, detail ? ": " : "", detail ? detail : "", k->bad_lines);
}

/* One watch event line. Sets k->x.outcome when the watch must end. */
static void watch_line(struct kube *k, const char *s, size_t len)
{
	json_error_t jerr;
	json_t *ev, *obj;
	const char *type;

	while (len && (s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len)
		return;
	k->x.lines++;
	ev = json_loadb(s, len, 0, &jerr);
	if (!ev) {
		bad_line(k, "line is not JSON", jerr.text);
		k->x.outcome = FAILED_RELIST;
		return;
	}
	type = json_string_value(json_object_get(ev, "type"));
	obj = json_object_get(ev, "object");
	if (!type || !json_is_object(obj)) {
		bad_line(k, "line is not an event", "no \"type\" string or \"object\" object");
		k->x.outcome = FAILED_RELIST;
		goto out;
	}
	if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
		int err = type[0] == 'D' ? pods__remove(k->pods, obj) : pods__upsert(k->pods, obj);

		stat_add(k, &k->stats.events, 1);
		/* An unusable pod is counted by the index; the watch goes on
		 * (a list would bring the same object). */
		if (err == -EINVAL)
			stat_add(k, &k->stats.bad_objects, 1);
		remember_rv(k, obj);
	} else if (!strcmp(type, "BOOKMARK")) {
		stat_add(k, &k->stats.bookmarks, 1);
		remember_rv(k, obj);
	} else if (!strcmp(type, "ERROR")) {
		json_t *code = json_object_get(obj, "code");
		const char *reason = json_string_value(json_object_get(obj, "reason"));
		const char *msg = json_string_value(json_object_get(obj, "message"));
		char text[200], why[64];

		printable(text, sizeof(text), msg ? msg : "", msg ? strlen(msg) : 0);
		printable(why, sizeof(why), reason ? reason : "", reason ? strlen(reason) : 0);
		if (json_integer_value(code) == 410) {
			pr_info("kube: node '%s': watch from resourceVersion %s expired (%s); listing again",
				k->node, k->rv, why);
			k->x.outcome = GONE;
		} else {
			pr_warn("kube: node '%s': watch ERROR event, code %" JSON_INTEGER_FORMAT
				" %s: %s; listing again", k->node, json_integer_value(code), why, text);
			k->x.outcome = FAILED_RELIST;
		}
	} else {
		char t[64];

		printable(t, sizeof(t), type, strlen(type));
		k->bad_lines++;
		stat_add(k, &k->stats.bad_objects, 1);
		if (log_worthy(k->bad_lines))
			pr_warn("kube: node '%s': watch: unknown event type '%s'; skipped", k->node, t);
	}
out:
	json_decref(ev);
}

/* Splits the watch stream into lines. false aborts the transfer. */
static bool watch_data(struct kube *k, const char *data, size_t n)
{
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;

		if (k->x.len + take > LINE_MAX_BYTES) {
			bad_line(k, "event line longer than 16 MiB", NULL);
			k->x.outcome = FAILED_RELIST;
			return false;
		}
		if (!nl || k->x.len) {
			if (xfer_reserve(k, take)) {
				pr_warn("kube: node '%s': watch: out of memory for a %zu-byte line",
					k->node, k->x.len + take);
				k->x.outcome = FAILED_RELIST;
				return false;
			}
			memcpy(k->x.buf + k->x.len, data, take);
			k->x.len += take;
		}
		if (!nl)
			return true;
		if (k->x.len) {
			watch_line(k, k->x.buf, k->x.len);
			k->x.len = 0;
		} else {
			watch_line(k, data, take);
		}
		if (k->x.outcome != DONE)
			return false;
		data += take + 1;
		n -= take + 1;
	}
	return true;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct kube *k = arg;
	size_t n = size * nmemb;

	if (!k->x.status)
		curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &k->x.status);
	if (k->x.status == 200 && k->x.kind == XFER_WATCH)
		return watch_data(k, data, n) ? n : 0;
	if (k->x.status != 200) {
		/* An error body: keep its start for the log. */
		if (k->x.len + n > ERROR_BODY_MAX)
			n = ERROR_BODY_MAX - k->x.len;
	} else if (k->x.len + n > LIST_BODY_MAX) {
		pr_warn("kube: node '%s': pod list page larger than %u MiB", k->node,
			LIST_BODY_MAX >> 20);
		k->x.too_big = true;
		return 0;
	}
	if (n && xfer_reserve(k, n))
		return 0;
	memcpy(k->x.buf + k->x.len, data, n);
	k->x.len += n;
	return size * nmemb;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	return stopping(arg) ? 1 : 0;
}

/* Logs an unexpected HTTP status with the Status message the body has. */
static void log_http_error(struct kube *k, const char *what)
{
	json_t *st = json_loadb(k->x.buf ? k->x.buf : "", k->x.len, 0, NULL);
	const char *msg = json_string_value(json_object_get(st, "message"));
	char text[200];

	if (msg)
		printable(text, sizeof(text), msg, strlen(msg));
	else
		printable(text, sizeof(text), k->x.buf ? k->x.buf : "", k->x.len < 120 ? k->x.len : 120);
	pr_warn("kube: node '%s': %s: HTTP %ld: %s", k->node, what, k->x.status, text);
	json_decref(st);
}

/* Runs one request; the body is in k->x. */
static enum outcome perform(struct kube *k, enum xfer_kind kind, const char *url,
			    const char *what)
{
	CURLcode rc;

	k->x.kind = kind;
	k->x.status = 0;
	k->x.len = 0;
	k->x.outcome = DONE;
	k->x.lines = 0;
	k->x.too_big = false;
	k->errbuf[0] = '\0';
	curl_easy_setopt(k->curl, CURLOPT_URL, url);
	/* The server ends a watch after timeoutSeconds; this only catches a
	 * connection that died silently. */
	curl_easy_setopt(k->curl, CURLOPT_TIMEOUT,
			 kind == XFER_WATCH ? (long)WATCH_TIMEOUT_S + 60 : 120L);
	rc = curl_easy_perform(k->curl);
	if (stopping(k))
		return STOPPED;
	if (!k->x.status)
		curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &k->x.status);
	if (k->x.status == 200) {
		if (k->x.outcome != DONE)
			return k->x.outcome;
		if (rc != CURLE_OK) {
			pr_warn("kube: node '%s': %s: %s", k->node, what,
				k->errbuf[0] ? k->errbuf : curl_easy_strerror(rc));
			return FAILED;
		}
		return DONE;
	}
	if (rc != CURLE_OK && !k->x.status) {
		pr_warn("kube: node '%s': %s: %s", k->node, what,
			k->errbuf[0] ? k->errbuf : curl_easy_strerror(rc));
		return FAILED;
	}
	if (k->x.status == 410) {
		pr_info("kube: node '%s': %s: HTTP 410 Gone; listing again", k->node, what);
		return GONE;
	}
	if (k->x.status == 401) {
		stat_add(k, &k->stats.unauthorized, 1);
		pr_warn("kube: node '%s': %s: HTTP 401 Unauthorized; re-reading token file '%s'",
			k->node, what, k->token_file ? k->token_file : "(none)");
		return UNAUTHORIZED;
	}
	log_http_error(k, what);
	return FAILED;
}

int kube__list_page(struct pods *pods, const char *body, size_t len,
		    char rv[KUBE_RV_MAX + 1], char cont[KUBE_CONTINUE_MAX + 1])
{
	json_t *list = json_loadb(body, len, 0, NULL), *meta, *c, *v;
	int err;

	rv[0] = cont[0] = '\0';
	if (!list)
		return -EBADMSG;
	meta = json_object_get(list, "metadata");
	if (!json_is_object(meta)) {
		err = json_is_object(list) ? -ENODATA : -EINVAL;
		goto out;
	}
	c = json_object_get(meta, "continue");
	if (c && !json_is_string(c) && !json_is_null(c)) {
		err = -EINVAL;
		goto out;
	}
	if (json_string_length(c) > KUBE_CONTINUE_MAX ||
	    (json_is_string(c) && strlen(json_string_value(c)) != json_string_length(c))) {
		err = -E2BIG;
		goto out;
	}
	v = json_object_get(meta, "resourceVersion");
	if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) > KUBE_RV_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		err = -ENODATA;
		goto out;
	}
	err = pods__list_page(pods, list);
	if (err)
		goto out;
	memcpy(rv, json_string_value(v), json_string_length(v) + 1);
	if (json_is_string(c))
		memcpy(cont, json_string_value(c), json_string_length(c) + 1);
out:
	json_decref(list);
	return err;
}

/* Requests one page: the first (cont empty) or the one cont names. */
static enum outcome list_request(struct kube *k, const char *cont)
{
	char *url = malloc(URL_MAX), *c = NULL;
	enum outcome o;

	if (!url || (cont[0] && !(c = curl_easy_escape(k->curl, cont, 0)))) {
		free(url);
		return FAILED;
	}
	if (c)
		snprintf(url, URL_MAX, "%s/api/v1/pods?fieldSelector=%s&limit=%u&continue=%s",
			 k->base, k->selector, k->page_size, c);
	else
		snprintf(url, URL_MAX, "%s/api/v1/pods?fieldSelector=%s&limit=%u%s", k->base,
			 k->selector, k->page_size, k->list_consistent ? "" : "&resourceVersion=0");
	curl_free(c);
	o = perform(k, XFER_LIST, url, cont[0] ? "list pods (next page)" : "list pods");
	free(url);
	return o;
}

static const char *page_error(int err)
{
	switch (err) {
	case -EBADMSG:
		return "body is not JSON";
	case -EINVAL:
		return "not a PodList";
	case -ENODATA:
		return "PodList without metadata.resourceVersion";
	case -E2BIG:
		return "continue token longer than 4096 bytes";
	default:
		return strerror(-err);
	}
}

/* Reads the list page by page into the index. */
static enum outcome do_list(struct kube *k)
{
	char cont[KUBE_CONTINUE_MAX + 1] = "", rv[KUBE_RV_MAX + 1] = "";
	unsigned restarts = 0;
	uint64_t pages = 0;
	enum outcome o;
	int err;

	pods__list_begin(k->pods);
	for (;;) {
		o = list_request(k, cont);
		if (o == GONE && cont[0] && restarts < LIST_RESTARTS_MAX) {
			/* The continue token expired: the server no longer
			 * keeps the list's snapshot. Start over; the pods
			 * named so far stay until the new list ends. */
			restarts++;
			stat_add(k, &k->stats.list_restarts, 1);
			pr_info("kube: node '%s': list pods: continue token expired after %" PRIu64
				" pages; listing again from the first page", k->node, pages);
			cont[0] = '\0';
			pages = 0;
			pods__list_begin(k->pods);
			continue;
		}
		if (o == FAILED && k->x.too_big && !k->list_consistent) {
			/* resourceVersion=0 is served from the API server's
			 * cache, which may ignore limit: read from etcd. */
			k->list_consistent = true;
			pr_warn("kube: node '%s': list pods: the server ignored limit=%u; "
				"listing without resourceVersion=0 (in pages)", k->node, k->page_size);
			cont[0] = '\0';
			pages = 0;
			pods__list_begin(k->pods);
			continue;
		}
		if (o != DONE)
			goto fail;
		pages++;
		stat_add(k, &k->stats.list_pages, 1);
		err = kube__list_page(k->pods, k->x.buf ? k->x.buf : "", k->x.len, rv, cont);
		if (err) {
			if (err != -ENOMEM)
				stat_add(k, &k->stats.bad_objects, 1);
			pr_warn("kube: node '%s': list pods: page %" PRIu64 ": %s", k->node, pages,
				page_error(err));
			o = FAILED;
			goto fail;
		}
		if (!cont[0])
			break;
		/* An over-large page's buffer is not kept for the next. */
		if (k->x.cap > (4u << 20)) {
			free(k->x.buf);
			k->x.buf = NULL;
			k->x.cap = 0;
		}
	}
	pods__list_end(k->pods);
	memcpy(k->rv, rv, sizeof(k->rv));
	pthread_mutex_lock(&k->lock);
	k->stats.lists++;
	k->stats.synced = true;
	pthread_mutex_unlock(&k->lock);
	pr_info("kube: node '%s': listed %zu pods in %" PRIu64 " page%s at resourceVersion %s",
		k->node, pods__count(k->pods), pages, pages == 1 ? "" : "s", k->rv);
	o = DONE;
	goto out;
fail:
	pods__list_abort(k->pods);
out:
	/* A list page can be tens of MiB; do not keep the buffer. */
	free(k->x.buf);
	k->x.buf = NULL;
	k->x.len = k->x.cap = 0;
	return o;
}

static enum outcome do_watch(struct kube *k)
{
	char url[URL_MAX], *rv = curl_easy_escape(k->curl, k->rv, 0);
	enum outcome o;

	if (!rv)
		return FAILED;
	snprintf(url, sizeof(url),
		 "%s/api/v1/pods?fieldSelector=%s&watch=1&resourceVersion=%s"
		 "&allowWatchBookmarks=true&timeoutSeconds=%d",
		 k->base, k->selector, rv, WATCH_TIMEOUT_S);
	curl_free(rv);
	stat_add(k, &k->stats.watches, 1);
	pr_debug("kube: node '%s': watching pods from resourceVersion %s", k->node, k->rv);
	o = perform(k, XFER_WATCH, url, "watch pods");
	if (o == DONE && k->x.status == 200 && k->x.len) {
		/* The stream ended inside an event. */
		bad_line(k, "stream ended inside an event line", NULL);
		o = FAILED_RELIST;
	}
	k->x.len = 0;
	if (k->x.cap > (1u << 20)) {
		free(k->x.buf);
		k->x.buf = NULL;
		k->x.cap = 0;
	}
	return o;
}

/* Sleeps the next backoff step, or until kube__stop. */
static void backoff(struct kube *k)
{
	unsigned ms = (unsigned)(backoff__delay(k->failures, BACKOFF_MIN_S, BACKOFF_MAX_S,
						 backoff__random()) * 1000);
	struct timespec ts;
	uint64_t until;

	until = monotonic_ns() + (uint64_t)ms * 1000000ull;
	ts.tv_sec = (time_t)(until / 1000000000ull);
	ts.tv_nsec = (long)(until % 1000000000ull);
	pr_debug("kube: node '%s': retrying in %u ms", k->node, ms);
	pthread_mutex_lock(&k->lock);
	while (!stopping(k) && monotonic_ns() < until)
		if (pthread_cond_timedwait(&k->wake, &k->lock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&k->lock);
}

/* Marks the index stale: the next request is a list. */
static void relist(struct kube *k, bool *need_list, bool listed)
{
	if (listed && !*need_list)
		stat_add(k, &k->stats.relists, 1);
	*need_list = true;
}

static void *kube_thread(void *arg)
{
	struct kube *k = arg;
	bool need_list = true, listed = false, changed;
	uint64_t started;
	enum outcome o;
	int err;

	while (!stopping(k)) {
		if (monotonic_ns() - k->token_at >= TOKEN_REFRESH_NS &&
		    (err = token_load(k, &changed)))
			pr_warn("kube: token file '%s': %s; keeping the previous token",
				k->token_file, token_error(err));
		started = monotonic_ns();
		o = need_list ? do_list(k) : do_watch(k);
		switch (o) {
		case DONE:
			if (need_list) {
				need_list = false;
				listed = true;
				k->failures = 0;
			} else if (k->x.lines || monotonic_ns() - started >= 1000000000ull) {
				k->failures = 0;
				k->gones = 0;
			} else {
				/* A watch that ends at once with nothing in it
				 * must not become a busy loop. */
				k->failures++;
				backoff(k);
			}
			break;
		case GONE:
			/* A list at resourceVersion=0 cannot be too old, and a
			 * fresh list's version expiring again at once is just as
			 * odd: a broken server, which must not get a busy loop. */
			if (!need_list && k->x.lines > 1)
				k->gones = 0;   /* events came before the ERROR */
			if (need_list || ++k->gones > 1) {
				stat_add(k, &k->stats.errors, 1);
				k->failures++;
				backoff(k);
			}
			relist(k, &need_list, listed);
			break;
		case UNAUTHORIZED:
			err = token_load(k, &changed);
			if (err)
				pr_warn("kube: token file '%s': %s",
					k->token_file ? k->token_file : "(none)", token_error(err));
			stat_add(k, &k->stats.errors, 1);
			/* A new token is tried at once, a second 401 in a row
			 * backs off. */
			if (err || !changed || k->failures)
				backoff(k);
			k->failures++;
			break;
		case FAILED_RELIST:
			relist(k, &need_list, listed);
			/* fallthrough */
		case FAILED:
			stat_add(k, &k->stats.errors, 1);
			k->failures++;
			backoff(k);
			break;
		case STOPPED:
			break;
		}
	}
	return NULL;
}

/* ---- configuration ---- */

char *kube__api_url(const struct kube_opts *opts)
{
	const char *host, *port;
	char *url;
	size_t n;

	if (opts->api_url) {
		if (strlen(opts->api_url) > API_URL_MAX) {
			pr_warn("kube: API URL longer than %d characters", API_URL_MAX);
			errno = EINVAL;
			return NULL;
		}
		if (strncmp(opts->api_url, "https://", 8) && strncmp(opts->api_url, "http://", 7)) {
			char shown[API_URL_MAX + 8];

			pr_warn("kube: API URL '%s' is not http(s)://host[:port]",
				url__redact(opts->api_url, shown, sizeof(shown)));
			errno = EINVAL;
			return NULL;
		}
		url = strdup(opts->api_url);
		if (!url)
			return NULL;
		for (n = strlen(url); n && url[n - 1] == '/'; n--)
			url[n - 1] = '\0';
		return url;
	}
	host = getenv("KUBERNETES_SERVICE_HOST");
	port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host) {
		pr_warn("kube: KUBERNETES_SERVICE_HOST is not set (not in a pod?); "
			"pass the API URL (--kube-api)");
		errno = ENOENT;
		return NULL;
	}
	if (!port || !*port)
		port = "443";
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    strpbrk(host, "/?#@ []") || strlen(host) > NODE_NAME_MAX) {
		pr_warn("kube: KUBERNETES_SERVICE_HOST/PORT '%s'/'%s' are not a host and port",
			host, port);
		errno = EINVAL;
		return NULL;
	}
	n = strlen(host) + strlen(port) + sizeof("https://[]:");
	url = malloc(n);
	if (!url)
		return NULL;
	/* An IPv6 literal needs brackets in a URL. */
	snprintf(url, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	return url;
}

/* Frees a kube whose thread is not running (never started, or joined). */
static void kube_free(struct kube *k)
{
	if (!k)
		return;
	if (k->curl)
		curl_easy_cleanup(k->curl);
	curl_slist_free_all(k->headers);
	secret__free(k->token);
	free(k->x.buf);
	free(k->base);
	free(k->token_file);
	free(k->ca_file);
	free(k->node);
	curl_free(k->selector);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

struct kube *kube__start(const struct kube_opts *opts, struct pods *pods)
{
	bool in_cluster = !opts->api_url, changed;
	const char *token_file, *ca_file;
	struct kube *k = NULL;
	pthread_condattr_t ca;
	sigset_t all, old;
	CURLcode rc;
	char *sel = NULL;
	int err;

	if (!opts->node_name || !*opts->node_name) {
		pr_warn("kube: no node name to watch pods of (set NODE_NAME from spec.nodeName)");
		errno = EINVAL;
		return NULL;
	}
	if (strlen(opts->node_name) > NODE_NAME_MAX) {
		pr_warn("kube: node name longer than %d characters", NODE_NAME_MAX);
		errno = EINVAL;
		return NULL;
	}
	rc = curl_handle__global_init();
	if (rc != CURLE_OK) {
		pr_warn("kube: libcurl: %s", curl_easy_strerror(rc));
		errno = ENOMEM;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	if (pthread_mutex_init(&k->lock, NULL)) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = -pthread_cond_init(&k->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (err) {
		pthread_mutex_destroy(&k->lock);
		free(k);
		errno = -err;
		return NULL;
	}
	k->pods = pods;
	k->page_size = opts->page_size ? opts->page_size : KUBE_PAGE_DEFAULT;
	if (k->page_size > KUBE_PAGE_MAX)
		k->page_size = KUBE_PAGE_MAX;
	k->base = kube__api_url(opts);
	if (!k->base) {
		err = errno ? -errno : -ENOMEM;
		goto fail;
	}
	err = -ENOMEM;
	k->node = strdup(opts->node_name);
	k->curl = curl_easy_init();
	if (!k->node || !k->curl)
		goto fail;
	if (asprintf(&sel, "spec.nodeName=%s", opts->node_name) < 0) {
		sel = NULL;
		goto fail;
	}
	k->selector = curl_easy_escape(k->curl, sel, 0);
	free(sel);
	if (!k->selector)
		goto fail;

	/* Token and CA: explicit files must be readable; the service
	 * account's are required in-cluster and used when present otherwise
	 * (e.g. an explicit URL from inside a pod). */
	token_file = opts->token_file ? opts->token_file :
		     (in_cluster || access(SA_TOKEN, R_OK) == 0) ? SA_TOKEN : NULL;
	ca_file = opts->ca_file ? opts->ca_file :
		  (in_cluster || access(SA_CA, R_OK) == 0) ? SA_CA : NULL;
	if ((token_file && !(k->token_file = strdup(token_file))) ||
	    (ca_file && !(k->ca_file = strdup(ca_file))))
		goto fail;
	if (!token_file)
		pr_info("kube: no token file and no %s; API requests carry no token", SA_TOKEN);
	if (token_file && !strncmp(k->base, "http://", 7)) {
		if (!opts->allow_insecure) {
			pr_error("kube: refusing to send the token of '%s' in clear text to %s: "
				 "use https://, or --allow-insecure-credentials", token_file, k->base);
			err = -EPERM;
			goto fail;
		}
		pr_warn("kube: sending the token in clear text to %s (--allow-insecure-credentials)",
			k->base);
	}
	if (ca_file && access(ca_file, R_OK)) {
		err = -errno;
		pr_warn("kube: CA file '%s': %s", ca_file, strerror(errno));
		goto fail;
	}

	curl_handle__setup(k->curl, &(struct curl_handle_opts){
		.connect_timeout_ms = 10000,
		.ca_file = ca_file,
		.keepalive = true,
		.on_body = on_data,
		.body_ctx = k,
		.on_progress = on_progress,
		.progress_ctx = k,
	});
	curl_easy_setopt(k->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(k->curl, CURLOPT_ERRORBUFFER, k->errbuf);
	curl_easy_setopt(k->curl, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(k->curl, CURLOPT_USERAGENT, "kiln/" KILN_VERSION);
	if (!token_file) {
		k->headers = curl_slist_append(NULL, "Accept: application/json");
		if (!k->headers)
			goto fail;
		curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, k->headers);
	}
	err = token_load(k, &changed);
	if (err) {
		pr_warn("kube: token file '%s': %s", token_file, token_error(err));
		goto fail;
	}

	/* Signals go to the caller's threads, never to the watcher. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&k->thread, NULL, kube_thread, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pr_warn("kube: cannot start the watcher thread: %s", strerror(-err));
		goto fail;
	}
	pr_info("kube: watching pods of node '%s' at %s", k->node, k->base);
	return k;
fail:
	kube_free(k);
	errno = -err;
	return NULL;
}

void kube__stats(struct kube *k, struct kube_stats *out)
{
	pthread_mutex_lock(&k->lock);
	*out = k->stats;
	pthread_mutex_unlock(&k->lock);
}

void kube__stop(struct kube *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	atomic_store(&k->stop, true);
	pthread_cond_broadcast(&k->wake);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->thread, NULL);
	kube_free(k);
}

/* ---- the watch stream without a connection ---- */

int kube__watch_body(struct pods *pods, const char *body, size_t len, size_t chunk,
		     struct kube_stats *stats)
{
	static char node[] = "(replay)";
	struct kube *k = calloc(1, sizeof(*k));
	int ret = 0;

	if (!k)
		return -ENOMEM;
	if (pthread_mutex_init(&k->lock, NULL)) {
		free(k);
		return -ENOMEM;
	}
	k->pods = pods;
	k->node = node;         /* only read: never freed here */
	k->x.kind = XFER_WATCH;
	k->x.status = 200;
	k->x.outcome = DONE;
	if (!chunk)
		chunk = len ? len : 1;
	/* As on_data and do_watch see a transfer: pieces until one is
	 * refused, then a trailing partial line is a lost event. */
	for (size_t off = 0; off < len && k->x.outcome == DONE; off += chunk)
		if (!watch_data(k, body + off, len - off < chunk ? len - off : chunk))
			break;
	if (k->x.outcome == DONE && k->x.len) {
		bad_line(k, "stream ended inside an event line", NULL);
		k->x.outcome = FAILED_RELIST;
	}
	if (k->x.outcome == GONE)
		ret = -ESTALE;
	else if (k->x.outcome != DONE)
		ret = -EBADMSG;
	if (stats)
		*stats = k->stats;
	free(k->x.buf);
	pthread_mutex_destroy(&k->lock);
	free(k);
	return ret;
}
