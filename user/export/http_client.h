/* SPDX-License-Identifier: BSD-2-Clause */
/* HTTP POSTs to a profile server with libcurl: one easy handle reused
 * (keep-alive; HTTP/2 when a TLS server offers it), authentication and
 * TLS from the agent's options. Secrets are read from files, re-read on
 * http_client__reload (SIGHUP) and after a 401, and never logged.
 * Not thread-safe: one client per sending thread. */
#ifndef KILN_EXPORT_HTTP_CLIENT_H
#define KILN_EXPORT_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_client_opts {
	const char *basic_auth_user;
	const char *basic_auth_password_file;
	const char *bearer_token_file;
	const char *tenant_id;          /* X-Scope-OrgID */
	const char *const *headers;     /* "Key=Value" */
	size_t nheaders;
	const char *ca_file;
	bool insecure_skip_verify;
	double connect_timeout, request_timeout; /* seconds */
};

struct http_result {
	long status;                    /* 0: no HTTP response (see error) */
	char error[256];                /* transport error, "" when none */
	char message[512];              /* the server's error message, if any */
	double retry_after;             /* seconds from Retry-After, 0 if none */
	/* The head of the response body (RESPONSE_MAX bytes at most), valid
	 * until the client's next request. */
	const uint8_t *body;
	size_t body_len;
	/* After a 401 or 403, the secret files held other credentials than
	 * those sent: rotated (they were sent again once). */
	bool credentials_changed;
};

struct http_client;

/* Checks the options (header syntax, readable secret files): NULL + errno
 * after one line naming the bad option. */
struct http_client *http_client__new(const struct http_client_opts *o);
/* Re-reads the secret files. 0 or -errno (logged; old secrets kept). */
int http_client__reload(struct http_client *c);
/* POSTs body to url, with a Content-Encoding header unless
 * content_encoding is NULL. Returns 0 when a response arrived (any status)
 * or -errno for transport failures; *res says which. A 401 re-reads the
 * secrets once and retries. */
int http_client__post(struct http_client *c, const char *url, const char *content_type,
		      const char *content_encoding, const void *body, size_t len,
		      struct http_result *res);
/* http_client__post (no Content-Encoding) that also returns the answer's
 * body in *out (malloc'd, NULL when empty; the caller frees it): at most
 * max bytes, past which the transfer ends with -EFBIG (res->error says so). */
int http_client__post_read(struct http_client *c, const char *url, const char *content_type,
			   const void *body, size_t len, size_t max, uint8_t **out, size_t *out_len,
			   struct http_result *res);
/* A transfer in progress is abandoned as soon as *flag becomes true
 * (shutdown deadline). */
void http_client__set_abort(struct http_client *c, const volatile int *flag);
void http_client__free(struct http_client *c);

#endif
