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
};

struct kube_stats {
	bool synced;                    /* a list has completed */
	uint64_t lists, watches, events, bookmarks, errors, relists;
	uint64_t token_reads, unauthorized, bad_objects;
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
/* Stops and joins the thread (within about a second). NULL is fine. */
void kube__stop(struct kube *k);

#endif
