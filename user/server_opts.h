/* SPDX-License-Identifier: BSD-2-Clause */
/* The checks every command that talks to a Pyroscope server makes of its
 * --server URL and credentials (kiln agent, kiln record --server, kiln
 * diff --server): an http:// or https:// URL, and no credential in clear
 * text unless --allow-insecure-credentials says so. */
#ifndef KILN_SERVER_OPTS_H
#define KILN_SERVER_OPTS_H

#include <stdbool.h>

#include "export/http_client.h"

/* The first credential requests to url would carry, as the flag that
 * gives it; NULL: none. */
const char *server_opts__credential(const char *url, const struct http_client_opts *http);
/* Credentials to a plain http:// URL can be read by anyone on the path:
 * refused with one line ("kiln CMD: FLAG URL is plain http:// ...")
 * unless allowed (then warned once). true when refused. */
bool server_opts__refuse_cleartext(const char *cmd, const char *flag, const char *url,
				   const char *credential, bool allowed);
/* --server checked (one line on stderr when refused) and copied without
 * trailing '/'. NULL when refused or out of memory (said too). */
char *server_opts__url(const char *cmd, const char *url, const struct http_client_opts *http,
		       bool allow_insecure);

#endif
