/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/url.h"

/* The userinfo of url: [*start, *start + *len) before the '@' that ends
 * it, inside the authority (between "://" and the first '/', '?' or '#').
 * RFC 3986 allows no '@' in a host, so the last '@' of the authority ends
 * the userinfo (an unescaped '@' in a password stays hidden). */
static bool userinfo(const char *url, size_t *start, size_t *len)
{
	const char *auth = url ? strstr(url, "://") : NULL, *end, *at = NULL;

	if (!auth)
		return false;
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	for (const char *p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	if (!at)
		return false;
	*start = (size_t)(auth - url);
	*len = (size_t)(at - auth);
	return true;
}

const char *url__redact(const char *url, char *buf, size_t n)
{
	size_t start, len;

	if (!n)
		return buf;
	if (!url)
		snprintf(buf, n, "(none)");
	else if (userinfo(url, &start, &len))
		snprintf(buf, n, "%.*s***%s", (int)start, url, url + start + len);
	else
		snprintf(buf, n, "%s", url);
	return buf;
}

bool url__has_userinfo(const char *url)
{
	size_t start, len;

	return userinfo(url, &start, &len);
}

bool url__is_cleartext(const char *url)
{
	return url && strncasecmp(url, "http://", 7) == 0;
}
