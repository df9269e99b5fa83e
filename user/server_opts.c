// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/url.h"
#include "server_opts.h"

const char *server_opts__credential(const char *url, const struct http_client_opts *http)
{
	if (url__has_userinfo(url))
		return "a user:password in the URL";
	if (http->bearer_token_file)
		return "--bearer-token-file";
	if (http->basic_auth_user || http->basic_auth_password_file)
		return "--basic-auth-user";
	if (http->tenant_id)
		return "--tenant-id";
	for (size_t i = 0; i < http->nheaders; i++)
		if (strncasecmp(http->headers[i], "authorization=", 14) == 0)
			return "--header Authorization";
	return NULL;
}

bool server_opts__refuse_cleartext(const char *cmd, const char *flag, const char *url,
				   const char *credential, bool allowed)
{
	char shown[512];

	if (!credential || !url__is_cleartext(url))
		return false;
	url__redact(url, shown, sizeof(shown));
	if (!allowed) {
		fprintf(stderr, "kiln %s: %s %s is plain http:// and %s would be sent in clear text: use https://, or add --allow-insecure-credentials\n",
			cmd, flag, shown, credential);
		return true;
	}
	pr_warn("%s: %s %s is plain http://: %s sent in clear text (--allow-insecure-credentials)",
		cmd, flag, shown, credential);
	return false;
}

char *server_opts__url(const char *cmd, const char *url, const struct http_client_opts *http,
		       bool allow_insecure)
{
	size_t len = strlen(url);
	char shown[512], *copy;

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		fprintf(stderr, "kiln %s: invalid value '%s' for --server: want an http:// or https:// URL\n",
			cmd, url__redact(url, shown, sizeof(shown)));
		return NULL;
	}
	if (server_opts__refuse_cleartext(cmd, "--server", url, server_opts__credential(url, http),
					  allow_insecure))
		return NULL;
	copy = strndup(url, len);
	if (!copy) {
		fprintf(stderr, "kiln %s: out of memory\n", cmd);
		return NULL;
	}
	while (len > 8 && copy[len - 1] == '/')
		copy[--len] = '\0';
	return copy;
}
