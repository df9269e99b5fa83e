/* SPDX-License-Identifier: BSD-2-Clause */
/* OTLP/HTTP for profiles (OTLP 1.10): where requests go and how the
 * answers are read. The request body is profile/otlp.h's
 * ExportProfilesServiceRequest, protobuf, POSTed with Content-Type
 * application/x-protobuf (and Content-Encoding: gzip, which every OTLP
 * server takes). 200 answers an ExportProfilesServiceResponse
 * whose partial_success counts the profiles refused (never retried); a
 * failure's body is a google.rpc.Status. 429, 502, 503, 504 and no answer
 * are retried (Retry-After honoured); every other 4xx and 5xx is refused,
 * 401 and 403 retried only after a credential rotation (as for the push). */
#ifndef KILN_EXPORT_OTLP_H
#define KILN_EXPORT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/sender.h"

#define OTLP_PROFILES_PATH "/v1development/profiles"
#define OTLP_CONTENT_TYPE "application/x-protobuf"

extern const struct sender_protocol otlp_protocol;

/* The URL profiles are POSTed to: endpoint (trailing '/' dropped) with
 * OTLP_PROFILES_PATH appended unless it ends with it already. *out is
 * malloc'd. 0 or -ENOMEM. */
int otlp__url(const char *endpoint, char **out);
/* OTLP's retry rules (see above). */
enum sender_verdict otlp__classify(int err, long status, bool rotated);
/* Profiles a 2xx answer refused: its partial_success.rejected_profiles
 * (at most profiles; negative counts as none), the error_message into
 * msg. An answer that does not decode refuses none (msg says so). */
uint32_t otlp__refused(const uint8_t *body, size_t len, uint32_t profiles, char *msg, size_t n);
/* A failure's message: the google.rpc.Status body's, else its first line
 * when it is text. */
void otlp__status_message(const uint8_t *body, size_t len, char *msg, size_t n);

#endif
