/* SPDX-License-Identifier: BSD-2-Clause */
/* UTF-8 checks for what goes on the wire: protobuf string fields (pprof's
 * string table, Pyroscope's labels) must be valid UTF-8, or the whole
 * message is refused. A process controls its name, paths and symbols, so
 * any of them may not be. */
#ifndef KILN_CORE_UTF8_H
#define KILN_CORE_UTF8_H

#include <stdbool.h>

/* Whether s (NUL-terminated) is valid UTF-8: no overlong forms, no
 * surrogates, nothing past U+10FFFF. */
bool utf8__valid(const char *s);
/* A malloc'd copy of s with every byte that is not part of a valid UTF-8
 * sequence replaced by '?'. NULL when out of memory. */
char *utf8__sanitized(const char *s);

#endif
