// SPDX-License-Identifier: BSD-2-Clause
/* The perf map reader (see perf_map.h): the file is read through one
 * buffer, whole lines parsed out of it, so a file of any size costs the
 * buffer and the table's bound. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/perf_map.h"

#define CHUNK (64u << 10)

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A hex number of at most 16 digits, "0x" allowed, at *p; advances *p. */
static bool hex_field(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0, d;

	if (end - s > 2 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	for (; s < end && (d = hex_digit(*s)) >= 0; s++) {
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* One line, without its newline. 0, -E2BIG (stop: b is full or too many
 * bad lines), -ENOMEM. */
static int parse_line(struct jit_builder *b, const char *p, size_t len, unsigned *bad)
{
	const char *end = p + len;
	uint64_t start, size;
	int err;

	while (end > p && (is_blank(end[-1]) || end[-1] == '\r'))
		end--;
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 0;
	if (hex_field(&p, end, &start) && p < end && is_blank(*p)) {
		while (p < end && is_blank(*p))
			p++;
		if (hex_field(&p, end, &size) && p < end && is_blank(*p)) {
			while (p < end && is_blank(*p))
				p++;
			err = jit_builder__add(b, start, size, p, (size_t)(end - p));
			if (err != -EINVAL)
				return err;
		}
	}
	jit_builder__refuse(
		b, JIT_REFUSED_BAD_LINE,
		"a line that is not 'START SIZE NAME' (after 1024 of them the rest of the file is skipped)");
	return ++*bad > PERF_MAP_BAD_LINES_MAX ? -E2BIG : 0;
}

int perf_map__read(struct jit_builder *b, int fd, uint64_t size)
{
	char *buf = malloc(CHUNK);
	uint64_t off = 0;
	size_t have = 0;
	unsigned bad = 0;
	bool skip = false; /* in the rest of a line longer than the buffer */
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (off < size && !err) {
		size_t want = CHUNK - have < size - off ? CHUNK - have : (size_t)(size - off);
		ssize_t r = pread(fd, buf + have, want, (off_t)off);
		char *p = buf, *end, *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break;
		}
		off += (uint64_t)r;
		have += (size_t)r;
		end = buf + have;
		while (!err && (nl = memchr(p, '\n', (size_t)(end - p)))) {
			if (!skip)
				err = parse_line(b, p, (size_t)(nl - p), &bad);
			skip = false;
			p = nl + 1;
		}
		have = (size_t)(end - p);
		if (have == CHUNK) {
			/* One line fills the buffer: its start is parsed (the
			 * name cut), the rest skipped up to its newline. */
			if (!skip && !err)
				err = parse_line(b, buf, have, &bad);
			skip = true;
			have = 0;
		} else {
			memmove(buf, p, have);
		}
	}
	free(buf);
	return err == -E2BIG ? 0 : err;
}
