/* SPDX-License-Identifier: BSD-2-Clause */
/* The one libcurl handle set-up of kiln: what every client of an HTTP
 * server (the Pyroscope exporter, the Kubernetes watcher) sets the same
 * way. Each caller adds what is its own (URL, method, headers, auth,
 * overall timeout) after curl_handle__setup. */
#ifndef KILN_CORE_CURL_HANDLE_H
#define KILN_CORE_CURL_HANDLE_H

#include <stdbool.h>

#include <curl/curl.h>

struct curl_handle_opts {
	long connect_timeout_ms;        /* 0: libcurl's default */
	const char *ca_file;            /* NULL: libcurl's default bundle */
	bool insecure;                  /* verify neither the peer nor its name */
	/* TCP keep-alive probes after 30 s idle, every 10 s: a long-lived
	 * stream (a watch) notices a peer that died silently. */
	bool keepalive;
	curl_write_callback on_body;    /* receives the response body */
	void *body_ctx;
	/* Called while a transfer runs; non-zero aborts it (shutdown). */
	curl_xferinfo_callback on_progress;
	void *progress_ctx;
};

/* libcurl's global set-up, once per process whoever asks first (it is not
 * thread-safe itself). CURLE_OK or why it failed. */
CURLcode curl_handle__global_init(void);

/* Sets the options every kiln client shares on h: no signals (the handle
 * runs in a worker thread), the connect timeout, TLS verification and CA
 * file, keep-alive, the body and progress callbacks. The strings must
 * outlive the transfers (libcurl copies ca_file, but not the contexts). */
void curl_handle__setup(CURL *h, const struct curl_handle_opts *o);

#endif
