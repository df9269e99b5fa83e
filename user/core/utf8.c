// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

/* Bytes of the valid UTF-8 sequence at p (1-4), or 0 when it is not one. */
static size_t sequence(const unsigned char *p)
{
	unsigned c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		/* no overlong forms (e0 a0..), no surrogates (ed 80..9f) */
		unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 &&
		       (p[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

bool utf8__valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = sequence(p);

		if (!n)
			return false;
		p += n;
	}
	return true;
}

char *utf8__sanitized(const char *s)
{
	char *out = strdup(s);
	unsigned char *p = (unsigned char *)out;

	while (p && *p) {
		size_t n = sequence(p);

		if (!n) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
	return out;
}
