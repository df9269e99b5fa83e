// SPDX-License-Identifier: BSD-2-Clause
/* Folded stacks in: "root;caller;...;leaf COUNT" per line, the format
 * folded__write and FlameGraph's stackcollapse scripts write. The count is
 * the last space-separated word, so frame names may hold spaces. The first
 * frame is the root (the process name in kiln's and perf's output); a
 * "_[k]" suffix marks a kernel frame: it is dropped from the name and the
 * frame gets the kernel's mapping, so it stays a kernel frame in pprof. A
 * first frame "{name=value,...}" followed by others is the stack's label
 * set, as folded__write writes it with labels ("\\xHH" escapes); one that
 * does not parse as that is an ordinary frame. Blank lines are skipped;
 * any other line that does not parse (a NUL byte included) refuses the
 * file. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "profile/reader.h"

#define KERNEL_SUFFIX "_[k]"

/* One line's label prefix, parsed. */
struct prefix {
	char *buf;              /* the frame's inside, unescaped in place */
	size_t cap;
	struct labels set;
	char *text;             /* set's text form, LABELS_TEXT_MAX bytes */
};

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Undoes "\\xHH" in s[0..len) in place, NUL-terminated; false for any
 * other backslash or an escaped NUL. */
static bool unescape(char *s, size_t len)
{
	size_t at = 0;

	for (size_t i = 0; i < len; i++) {
		int hi, lo;

		if (s[i] != '\\') {
			s[at++] = s[i];
			continue;
		}
		if (i + 3 >= len)
			return false;
		if (s[i + 1] != 'x' || (hi = hex_digit(s[i + 2])) < 0 ||
		    (lo = hex_digit(s[i + 3])) < 0 || !(hi | lo))
			return false;
		s[at++] = (char)(hi << 4 | lo);
		i += 3;
	}
	s[at] = '\0';
	return true;
}

/* Reads the frame name "{a=1,b=2}" into *f as a FRAME_LABELS frame (left
 * as it is when the set is empty, "{}"). 1 when it is a label prefix, 0
 * when it is not (an ordinary frame), or -errno (info->why set). */
static int label_prefix(struct prefix *px, const char *name, struct frame *f,
			size_t lineno, struct read_info *info)
{
	const char *names[READ_MAX_LABELS], *values[READ_MAX_LABELS];
	size_t len = strlen(name), n = 0, i;
	int err;

	if (len < 2 || name[0] != '{' || name[len - 1] != '}')
		return 0;
	err = array_reserve(px->buf, px->cap, len);
	if (err)
		return err;
	memcpy(px->buf, name + 1, len - 2);
	px->buf[len - 2] = '\0';
	/* pairs split at ',', each at its first '='; escapes undone after */
	for (i = 0; len > 2 && i <= len - 2; i++) {
		char *pair = px->buf + i, *eq, *end = strchr(pair, ',');

		i += end ? (size_t)(end - pair) : strlen(pair);
		if (end)
			*end = '\0';
		eq = strchr(pair, '=');
		if (!eq)
			return 0;
		*eq = '\0';
		if (!unescape(pair, strlen(pair)) || !unescape(eq + 1, strlen(eq + 1)))
			return 0;
		if (!*pair)
			continue;       /* pprof's readers skip nameless labels too */
		if (n == READ_MAX_LABELS)
			return read_fail(info, -EINVAL, "line %zu: more than %d labels", lineno,
					 READ_MAX_LABELS);
		names[n] = pair;
		values[n++] = eq + 1;
	}
	if (!n)
		return 1;
	err = read_labels_frame(&px->set, &px->text, names, values, n, f);
	if (err == -ENOSPC)
		return read_fail(info, -EINVAL, "line %zu: labels of more than %u bytes",
				 lineno, LABELS_TEXT_MAX);
	return err ? err : 1;
}

/* The count ending line[0..len): its value and where it starts. */
static int parse_count(const char *line, size_t len, uint64_t *count,
		       size_t *start)
{
	size_t i = len;
	uint64_t v = 0;

	while (i > 0 && isdigit((unsigned char)line[i - 1]))
		i--;
	if (i == len || len - i > 19 || i == 0 || line[i - 1] != ' ')
		return -EINVAL;
	for (size_t j = i; j < len; j++)
		v = v * 10 + (uint64_t)(line[j] - '0');
	*count = v;
	*start = i - 1;
	return 0;
}

int folded__read(struct profile *p, const char *buf, size_t len,
		 const struct read_limits *lim, struct read_info *info)
{
	struct frame *frames = NULL;
	struct prefix px = { 0 };
	size_t frames_cap = 0, lineno = 0, pos = 0;
	char *text = NULL;      /* the current line, ';' turned into NULs */
	size_t text_cap = 0;
	int err = 0;

	while (pos < len && !err) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos, end, i, nf = 0, root;
		uint64_t count;

		pos += n + (nl ? 1 : 0);
		lineno++;
		if (n && line[n - 1] == '\r')
			n--;
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		if (!n)
			continue;
		/* Text is sniffed in the first bytes only; a NUL later would cut
		 * a frame name short, or leave it empty. */
		if (memchr(line, '\0', n)) {
			err = read_fail(info, -EINVAL, "line %zu: a NUL byte", lineno);
			break;
		}
		if (parse_count(line, n, &count, &end)) {
			err = read_fail(info, -EINVAL,
					"line %zu: no sample count at the end", lineno);
			break;
		}
		err = array_reserve(text, text_cap, end + 1);
		if (err)
			break;
		memcpy(text, line, end);
		text[end] = '\0';
		/* split at ';', skipping empty frames */
		for (i = 0; i <= end; i++) {
			size_t start = i, fl;

			while (i < end && text[i] != ';')
				i++;
			text[i] = '\0';
			fl = i - start;
			if (!fl)
				continue;
			if (nf == READ_MAX_FRAMES) {
				err = read_fail(info, -EINVAL, "line %zu: more than %d frames",
						lineno, READ_MAX_FRAMES);
				break;
			}
			err = array_reserve(frames, frames_cap, nf + 1);
			if (err)
				break;
			frames[nf++] = (struct frame){ .kind = FRAME_USER, .name = text + start };
		}
		if (err)
			break;
		if (!nf) {
			err = read_fail(info, -EINVAL, "line %zu: no frames", lineno);
			break;
		}
		/* a label prefix before the root: a FRAME_LABELS frame, or
		 * none at all for "{}" */
		root = 0;
		if (nf > 1) {
			err = label_prefix(&px, frames[0].name, &frames[0], lineno, info);
			if (err < 0)
				break;
			root = (size_t)err;
			err = 0;
		}
		frames[root].kind = FRAME_ROOT;
		for (i = root + 1; i < nf; i++) {
			char *name = (char *)frames[i].name;
			size_t fl = strlen(name), kl = strlen(KERNEL_SUFFIX);

			if (fl > kl && !strcmp(name + fl - kl, KERNEL_SUFFIX)) {
				name[fl - kl] = '\0';
				frames[i].kind = FRAME_KERNEL;
				frames[i].map_file = KERNEL_MAP;
			}
		}
		i = root && frames[0].kind != FRAME_LABELS;     /* "{}" */
		err = read_add(p, frames + i, nf - i, count, lim, info);
	}
	free(frames);
	free(text);
	free(px.buf);
	free(px.text);
	labels__release(&px.set);
	return err;
}
