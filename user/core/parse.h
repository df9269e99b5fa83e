/* SPDX-License-Identifier: BSD-2-Clause */
/* Parsing of flag values: whole strings only, bounds checked. */
#ifndef KILN_CORE_PARSE_H
#define KILN_CORE_PARSE_H

#include <stdint.h>

/* Decimal integer in [min, max]. 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Octal integer ("0640" or "640") in [min, max]: file modes. */
int parse_octal(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Byte size with an optional K, M or G suffix (powers of 1024). */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds, fractions allowed ("0.5"), in [min, max]. */
int parse_seconds(const char *s, double min, double max, double *out);
/* Seconds with an optional unit: s, m (minutes) or h ("90s", "10m",
 * "1.5h"); the result and the bounds are in seconds. */
int parse_duration(const char *s, double min, double max, double *out);

#endif
