// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "core/curl_handle.h"
#include "core/log.h"
#include "core/secret.h"
#include "export/http_client.h"

#define SECRET_MAX 65536
#define RESPONSE_MAX 65536

struct http_client {
	struct http_client_opts o;
	CURL *curl;
	char *password, *token;         /* from their files; never logged */
	struct curl_slist *fixed;       /* Content-Type-independent headers */
	char response[RESPONSE_MAX];
	size_t response_len;
	double retry_after;
	const volatile int *abort_flag;
	/* http_client__post_read: the whole answer, up to sink_max bytes */
	struct {
		uint8_t *buf;
		size_t len, cap, max;
		bool over;
		bool on;
	} sink;
};

/* Reads a secret file into *out (its first line), replacing what *out held
 * only on success. */
static int read_secret(const char *path, const char *flag, char **out)
{
	char *s = NULL;
	int err = secret__read(path, SECRET_MAX, SECRET_FIRST_LINE, &s);

	if (err == -ENODATA) {
		pr_error("%s %s: the file is empty", flag, path);
		return -EINVAL;
	}
	if (err) {
		pr_error("%s %s: cannot read: %s", flag, path, strerror(-err));
		return err;
	}
	secret__free(*out);
	*out = s;
	return 0;
}

int http_client__reload(struct http_client *c)
{
	int err = 0;

	if (c->o.basic_auth_password_file)
		err = read_secret(c->o.basic_auth_password_file, "--basic-auth-password-file",
				  &c->password);
	if (!err && c->o.bearer_token_file)
		err = read_secret(c->o.bearer_token_file, "--bearer-token-file", &c->token);
	return err;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct http_client *c = ctx;
	size_t len = size * nmemb, room = RESPONSE_MAX - 1 - c->response_len;

	if (c->sink.on && !c->sink.over) {
		size_t need = c->sink.len + len;

		if (need > c->sink.max) {
			c->sink.over = true;
			return 0;       /* CURLE_WRITE_ERROR: ends the transfer */
		}
		if (need > c->sink.cap) {
			size_t cap = c->sink.cap ? c->sink.cap : 65536;
			uint8_t *b;

			while (cap < need)
				cap *= 2;
			b = realloc(c->sink.buf, cap);
			if (!b) {
				c->sink.over = true;
				return 0;
			}
			c->sink.buf = b;
			c->sink.cap = cap;
		}
		memcpy(c->sink.buf + c->sink.len, data, len);
		c->sink.len = need;
	}
	/* Keep the head of the answer, discard the rest: bounded. */
	if (len < room)
		room = len;
	memcpy(c->response + c->response_len, data, room);
	c->response_len += room;
	c->response[c->response_len] = '\0';
	return len;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct http_client *c = ctx;
	size_t len = size * nmemb;

	if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
		char value[128], *end;
		double v;

		/* seconds, or an HTTP-date (RFC 9110): the time until then */
		snprintf(value, sizeof(value), "%.*s", (int)(len - 12), data + 12);
		v = strtod(value, &end);
		if (end == value) {
			time_t at = curl_getdate(value, NULL);

			v = at > 0 ? difftime(at, time(NULL)) : 0;
		}
		if (v > 0)
			c->retry_after = v;
	}
	return len;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct http_client *c = ctx;

	return c->abort_flag && __atomic_load_n(c->abort_flag, __ATOMIC_RELAXED);
}

void http_client__set_abort(struct http_client *c, const volatile int *flag)
{
	c->abort_flag = flag;
}

struct http_client *http_client__new(const struct http_client_opts *o)
{
	struct http_client *c = calloc(1, sizeof(*c));
	char line[4096];

	if (!c)
		return NULL;
	c->o = *o;
	c->curl = curl_handle__global_init() == CURLE_OK ? curl_easy_init() : NULL;
	if (!c->curl) {
		pr_error("cannot initialize libcurl");
		goto fail;
	}
	if (o->basic_auth_password_file && !o->basic_auth_user) {
		pr_error("--basic-auth-password-file needs --basic-auth-user");
		errno = EINVAL;
		goto fail;
	}
	if (o->basic_auth_user && !o->basic_auth_password_file) {
		pr_error("--basic-auth-user needs --basic-auth-password-file");
		errno = EINVAL;
		goto fail;
	}
	for (size_t i = 0; i < o->nheaders; i++) {
		const char *eq = strchr(o->headers[i], '=');
		struct curl_slist *l;

		if (!eq || eq == o->headers[i] || strcspn(o->headers[i], " :\r\n") < (size_t)(eq - o->headers[i])) {
			pr_error("--header '%.*s...': want KEY=VALUE with a header name as KEY",
				 (int)strcspn(o->headers[i], "="), o->headers[i]);
			errno = EINVAL;
			goto fail;
		}
		snprintf(line, sizeof(line), "%.*s: %s", (int)(eq - o->headers[i]), o->headers[i],
			 eq + 1);
		l = curl_slist_append(c->fixed, line);
		if (!l)
			goto fail;
		c->fixed = l;
	}
	if (o->tenant_id) {
		snprintf(line, sizeof(line), "X-Scope-OrgID: %s", o->tenant_id);
		c->fixed = curl_slist_append(c->fixed, line);
	}
	/* Connect needs no other header for unary calls; say who we are. */
	c->fixed = curl_slist_append(c->fixed, "User-Agent: kiln/" KILN_VERSION);
	if (!c->fixed)
		goto fail;
	if (http_client__reload(c)) {
		errno = EINVAL;
		goto fail;
	}
	return c;
fail:
	http_client__free(c);
	return NULL;
}

/* The server's message: Connect and Pyroscope answer JSON {"message": ...};
 * anything else is shown as its first line. */
static void server_message(struct http_client *c, struct http_result *res)
{
	json_t *j = json_loadb(c->response, c->response_len, 0, NULL);
	const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;

	if (m)
		snprintf(res->message, sizeof(res->message), "%s", m);
	else
		snprintf(res->message, sizeof(res->message), "%.*s",
			 (int)strcspn(c->response, "\r\n"), c->response);
	for (char *s = res->message; *s; s++)
		if (!isprint((unsigned char)*s))
			*s = ' ';
	json_decref(j);
}

static int post_once(struct http_client *c, const char *url, const char *content_type,
		     const char *content_encoding, const void *body, size_t len,
		     struct http_result *res)
{
	struct curl_slist *headers = NULL, *l;
	char line[SECRET_MAX + 64];
	CURLcode rc;
	int err = 0;

	memset(res, 0, sizeof(*res));
	c->response_len = 0;
	c->response[0] = '\0';
	c->retry_after = 0;
	for (l = c->fixed; l; l = l->next)
		headers = curl_slist_append(headers, l->data);
	snprintf(line, sizeof(line), "Content-Type: %s", content_type);
	headers = curl_slist_append(headers, line);
	if (content_encoding) {
		snprintf(line, sizeof(line), "Content-Encoding: %s", content_encoding);
		headers = curl_slist_append(headers, line);
	}
	if (c->token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", c->token);
		headers = curl_slist_append(headers, line);
		explicit_bzero(line, sizeof(line));
	}
	if (!headers)
		return -ENOMEM;

	curl_easy_reset(c->curl);
	curl_handle__setup(c->curl, &(struct curl_handle_opts){
		.connect_timeout_ms = (long)(c->o.connect_timeout * 1000),
		.ca_file = c->o.ca_file,
		.insecure = c->o.insecure_skip_verify,
		.on_body = on_body,
		.body_ctx = c,
		.on_progress = on_progress,
		.progress_ctx = c,
	});
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(c->o.request_timeout * 1000));
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
	if (c->o.basic_auth_user && c->password) {
		curl_easy_setopt(c->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c->curl, CURLOPT_USERNAME, c->o.basic_auth_user);
		curl_easy_setopt(c->curl, CURLOPT_PASSWORD, c->password);
	}
	c->sink.len = 0;
	c->sink.over = false;
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK && c->sink.over) {
		snprintf(res->error, sizeof(res->error), "the answer is larger than %zu bytes",
			 c->sink.max);
		err = -EFBIG;
	} else if (rc != CURLE_OK) {
		snprintf(res->error, sizeof(res->error), "%s", curl_easy_strerror(rc));
		err = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	} else {
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &res->status);
		res->retry_after = c->retry_after;
		res->body = (const uint8_t *)c->response;
		res->body_len = c->response_len;
		if (res->status >= 300)
			server_message(c, res);
	}
	/* Drop the secret-bearing header list; the password option too. */
	curl_slist_free_all(headers);
	curl_easy_setopt(c->curl, CURLOPT_PASSWORD, "");
	return err;
}

/* Whether two secrets (either may be NULL) differ. */
static bool secret_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

int http_client__post(struct http_client *c, const char *url, const char *content_type,
		      const char *content_encoding, const void *body, size_t len,
		      struct http_result *res)
{
	int err = post_once(c, url, content_type, content_encoding, body, len, res);
	char *token, *password;
	bool changed;

	/* Credentials may have rotated under us: read them again, and send
	 * once more when they did. */
	if (err || (res->status != 401 && res->status != 403) || !(c->token || c->password))
		return err;
	token = c->token ? strdup(c->token) : NULL;
	password = c->password ? strdup(c->password) : NULL;
	changed = (!c->token || token) && (!c->password || password) &&
		  http_client__reload(c) == 0 &&
		  (secret_differs(token, c->token) || secret_differs(password, c->password));
	secret__free(token);
	secret__free(password);
	if (changed) {
		err = post_once(c, url, content_type, content_encoding, body, len, res);
		res->credentials_changed = true;
	}
	return err;
}

int http_client__post_read(struct http_client *c, const char *url, const char *content_type,
			   const void *body, size_t len, size_t max, uint8_t **out, size_t *out_len,
			   struct http_result *res)
{
	int err;

	c->sink.on = true;
	c->sink.max = max;
	err = http_client__post(c, url, content_type, NULL, body, len, res);
	c->sink.on = false;
	*out = NULL;
	*out_len = 0;
	if (!err) {
		*out = c->sink.buf;
		*out_len = c->sink.len;
		c->sink.buf = NULL;
		c->sink.len = c->sink.cap = 0;
	}
	return err;
}

void http_client__free(struct http_client *c)
{
	if (!c)
		return;
	free(c->sink.buf);
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->fixed);
	secret__free(c->password);
	secret__free(c->token);
	free(c);
}
