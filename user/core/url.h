/* SPDX-License-Identifier: BSD-2-Clause */
/* What kiln needs to know of a URL it was given (--server, --kube-api)
 * before it logs it or sends a credential to it. */
#ifndef KILN_CORE_URL_H
#define KILN_CORE_URL_H

#include <stdbool.h>
#include <stddef.h>

/* url with its userinfo ("user:password@" in "http://user:password@host/")
 * replaced by "***@", into buf (always NUL-terminated, cut to n - 1
 * bytes); the rest as it is. Every message that names a URL given by the
 * user shows this form. Returns buf. */
const char *url__redact(const char *url, char *buf, size_t n);
/* Whether url carries a userinfo part (a user, perhaps a password). */
bool url__has_userinfo(const char *url);
/* Whether url is plain http:// (scheme compared case-insensitively):
 * what travels over it, credentials included, can be read on the way. */
bool url__is_cleartext(const char *url);

#endif
