/* SPDX-License-Identifier: BSD-2-Clause */
#include <pthread.h>

#include "core/curl_handle.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

CURLcode curl_handle__global_init(void)
{
	pthread_once(&global_once, global_init);
	return global_rc;
}

void curl_handle__setup(CURL *h, const struct curl_handle_opts *o)
{
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (o->connect_timeout_ms)
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	if (o->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file);
	if (o->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o->keepalive) {
		curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, o->on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, o->body_ctx);
	if (o->on_progress) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, o->on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, o->progress_ctx);
	}
}
