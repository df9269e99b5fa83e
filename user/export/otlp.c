// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp.h"
#include "otlp_profiles_service.pb-c.h"
#include "rpc_status.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse
	pb_response;

const struct sender_protocol otlp_protocol = {
	.classify = otlp__classify,
	.refused = otlp__refused,
	.message = otlp__status_message,
};

int otlp__url(const char *endpoint, char **out)
{
	size_t len = strlen(endpoint), path = strlen(OTLP_PROFILES_PATH);

	while (len > 8 && endpoint[len - 1] == '/')
		len--;
	if (len >= path && !strncmp(endpoint + len - path, OTLP_PROFILES_PATH, path))
		path = 0;
	return asprintf(out, "%.*s%s", (int)len, endpoint, path ? OTLP_PROFILES_PATH : "") < 0 ?
		       -ENOMEM : 0;
}

enum sender_verdict otlp__classify(int err, long status, bool rotated)
{
	if (err)
		return SENDER_RETRY;
	if (status >= 200 && status < 300)
		return SENDER_DELIVERED;
	if (status == 401 || status == 403)
		return rotated ? SENDER_RETRY : SENDER_REFUSED;
	if (status == 429 || status == 502 || status == 503 || status == 504)
		return SENDER_RETRY;
	return SENDER_REFUSED;
}

/* msg = s with what is not printable as ' ', bounded by n. */
static void printable(char *msg, size_t n, const char *s, size_t len)
{
	snprintf(msg, n, "%.*s", (int)len, s);
	for (char *c = msg; *c; c++)
		if (!isprint((unsigned char)*c))
			*c = ' ';
}

uint32_t otlp__refused(const uint8_t *body, size_t len, uint32_t profiles, char *msg, size_t n)
{
	pb_response *r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
		NULL, len, body);
	int64_t rejected = 0;

	msg[0] = '\0';
	if (!r) {
		snprintf(msg, n, "the answer is no ExportProfilesServiceResponse");
		return 0;
	}
	if (r->partial_success) {
		rejected = r->partial_success->rejected_profiles;
		if (r->partial_success->error_message)
			printable(msg, n, r->partial_success->error_message,
				  strlen(r->partial_success->error_message));
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(
		r, NULL);
	return rejected <= 0 ? 0 : rejected > profiles ? profiles : (uint32_t)rejected;
}

void otlp__status_message(const uint8_t *body, size_t len, char *msg, size_t n)
{
	Google__Rpc__Status *st = google__rpc__status__unpack(NULL, len, body);

	if (st && st->message && *st->message) {
		printable(msg, n, st->message, strlen(st->message));
	} else {
		size_t line = 0;

		/* not a Status (a proxy's page, say): its first line, if text */
		while (line < len && body[line] != '\n' && body[line] != '\r')
			line++;
		printable(msg, n, line ? (const char *)body : "", line);
	}
	if (st)
		google__rpc__status__free_unpacked(st, NULL);
}
