// SPDX-License-Identifier: BSD-2-Clause
/* Folded stacks in: "root;caller;...;leaf COUNT" per line, the format
 * folded__write and FlameGraph's stackcollapse scripts write. The count is
 * the last space-separated word, so frame names may hold spaces. The first
 * frame is the root (the process name in kiln's and perf's output); a
 * "_[k]" suffix marks a kernel frame: it is dropped from the name and the
 * frame gets the kernel's mapping, so it stays a kernel frame in pprof. Blank
 * lines are skipped; any other line that does not parse (a NUL byte
 * included) refuses the file. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/array.h"
#include "profile/reader.h"

#define KERNEL_SUFFIX "_[k]"

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
	size_t frames_cap = 0, lineno = 0, pos = 0;
	char *text = NULL;      /* the current line, ';' turned into NULs */
	size_t text_cap = 0;
	int err = 0;

	while (pos < len && !err) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos, end, i, nf = 0;
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
			frames[nf] = (struct frame){
				.kind = nf ? FRAME_USER : FRAME_ROOT,
				.name = text + start,
			};
			if (nf && fl > strlen(KERNEL_SUFFIX) &&
			    !strcmp(text + i - strlen(KERNEL_SUFFIX), KERNEL_SUFFIX)) {
				text[i - strlen(KERNEL_SUFFIX)] = '\0';
				frames[nf].kind = FRAME_KERNEL;
				frames[nf].map_file = KERNEL_MAP;
			}
			nf++;
		}
		if (err)
			break;
		if (!nf) {
			err = read_fail(info, -EINVAL, "line %zu: no frames", lineno);
			break;
		}
		err = read_add(p, frames, nf, count, lim, info);
	}
	free(frames);
	free(text);
	return err;
}
