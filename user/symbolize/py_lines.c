// SPDX-License-Identifier: BSD-2-Clause
/* The format, as CPython's Objects/locations.md describes it: entries of
 * one first byte (bit 7 set; bits 3-6 a code, bits 0-2 the code units it
 * covers minus one) and the code's extra bytes. Codes 0-9: same line, one
 * column byte; 10-12: line + code - 10, two column bytes; 13: line + a
 * signed varint, no columns; 14: line + a signed varint, then three
 * varints; 15: no location. Varints are 6-bit groups, low first, bit 6 set
 * on all but the last; a signed one keeps its sign in bit 0. */
#include "symbolize/py_lines.h"

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint32_t varint(struct cursor *c)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (c->p >= c->end || shift > 30) {
			c->bad = 1;
			return 0;
		}
		b = *c->p++;
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int32_t svarint(struct cursor *c)
{
	uint32_t v = varint(c);

	return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

static void skip(struct cursor *c, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		c->bad = 1;
	else
		c->p += n;
}

uint32_t py_lines__line(const uint8_t *table, size_t len, int32_t firstlineno, uint32_t index)
{
	struct cursor c = { table, table + len, 0 };
	int64_t line = firstlineno;
	uint64_t pos = 0;

	if (!table)
		return 0;
	while (c.p < c.end && !c.bad) {
		uint8_t b = *c.p++;
		unsigned code = (b >> 3) & 15, units = (b & 7) + 1;
		int64_t delta = 0;

		if (!(b & 0x80))
			return 0; /* not the first byte of an entry */
		if (code == 15) {
			/* no location */
		} else if (code == 14) {
			delta = svarint(&c);
			varint(&c);
			varint(&c);
			varint(&c);
		} else if (code == 13) {
			delta = svarint(&c);
		} else if (code >= 10) {
			delta = code - 10;
			skip(&c, 2);
		} else {
			skip(&c, 1);
		}
		if (c.bad)
			return 0;
		line += delta;
		if (index >= pos && index < pos + units)
			return code == 15 || line <= 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
		pos += units;
	}
	return 0;
}
