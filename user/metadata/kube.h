/* SPDX-License-Identifier: BSD-2-Clause */
/* The Kubernetes pod watcher: one thread that lists, then watches, this
 * node's pods and keeps a struct pods index current. It never blocks its
 * callers: lookups go to the index, which may lag the API. */
#ifndef KILN_METADATA_KUBE_H
#define KILN_METADATA_KUBE_H

#include <stdbool.h>
#include <stdint.h>

#include "metadata/pods.h"

struct kube_opts {
	/* https://host:port. NULL: in-cluster from KUBERNETES_SERVICE_HOST
	 * and KUBERNETES_SERVICE_PORT (IPv6 literals bracketed). */
	const char *api_url;
	/* NULL: the service account's token and ca.crt. */
	const char *token_file;
	const char *ca_file;
	const char *node_name;          /* required */
	/* A token over a plain http:// api_url is refused unless this is set. */
	bool allow_insecure;
	/* Pods per list page (limit=); 0: KUBE_PAGE_DEFAULT, at most
	 * KUBE_PAGE_MAX. */
	unsigned page_size;
};

#define KUBE_PAGE_DEFAULT 500u
#define KUBE_PAGE_MAX 5000u
#define KUBE_RV_MAX 256
#define KUBE_CONTINUE_MAX 4096

struct kube_stats {
	bool synced;                    /* a list has completed */
	uint64_t lists, watches, events, bookmarks, errors, relists;
	uint64_t token_reads, unauthorized, bad_objects;
	uint64_t list_pages;            /* list responses read (pages) */
	uint64_t list_restarts;         /* lists started over: continue token expired */
};

struct kube;

/* Resolves the configuration (errors name the missing piece: no
 * KUBERNETES_SERVICE_HOST, unreadable token, ...) and starts the thread,
 * which fills pods. NULL + errno. */
struct kube *kube__start(const struct kube_opts *opts, struct pods *pods);
void kube__stats(struct kube *k, struct kube_stats *out);
/* The API base URL kube__start would use for opts (in-cluster: from the
 * environment, IPv6 literals bracketed); malloc'd. NULL + errno, logged. */
char *kube__api_url(const struct kube_opts *opts);
/* One page of a paged pod list (the watcher's parser, for tests and
 * fuzzing): the PodList in body goes into pods (between
 * pods__list_begin and pods__list_end), its metadata.resourceVersion into
 * rv and its metadata.continue into cont ("" on the last page). 0,
 * -EBADMSG (not JSON), -EINVAL (not a PodList), -ENODATA (no usable
 * resourceVersion), -E2BIG (a continue token longer than
 * KUBE_CONTINUE_MAX), -ENOMEM. */
int kube__list_page(struct pods *pods, const char *body, size_t len,
		    char rv[KUBE_RV_MAX + 1], char cont[KUBE_CONTINUE_MAX + 1]);
/* Stops and joins the thread (within about a second). NULL is fine. */
void kube__stop(struct kube *k);

/* The watch stream's parser without a connection or a thread (tests and
 * fuzzing): feeds a watch response body to pods exactly as a watch
 * transfer does, in pieces of chunk bytes (0: all at once) as libcurl
 * would hand them over. 0 when the watch would have ended normally;
 * -ESTALE for a 410 ERROR event (list again at once); -EBADMSG when events
 * may be lost (a line that is not a JSON event, an over-long line, another
 * ERROR event, a last line without its newline): back off and list again;
 * -ENOMEM. stats (may be NULL) gets what the watcher would have counted. */
int kube__watch_body(struct pods *pods, const char *body, size_t len, size_t chunk,
		     struct kube_stats *stats);

#endif
