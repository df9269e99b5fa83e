// SPDX-License-Identifier: BSD-2-Clause
/* The jitdump reader (see jitdump.h). The file is read through a window:
 * a record's header and the start of its body come from the window, which
 * moves forward as the records do, so the code bytes between them are
 * never read and the cost is one pread per window of records. Layout
 * (tools/perf/Documentation/jitdump-specification.txt, read for the
 * facts): integers in the writer's byte order, which must be ours. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/jitdump.h"

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" */
#define JITDUMP_MAGIC_SWAPPED 0x4454694Au
#define JITDUMP_VERSION 1
#define HEADER_SIZE 40
#define RECORD_PREFIX 16 /* id, total_size, timestamp */
#define CODE_LOAD 0
#define CODE_LOAD_FIELDS 40 /* pid, tid, vma, code_addr, code_size, code_index */
#define WINDOW (64u << 10)

struct window {
	int fd;
	uint64_t size; /* bytes of the file to read */
	uint8_t *buf;
	uint64_t off; /* file offset of buf[0] */
	size_t len;
};

/* n bytes (n <= WINDOW) at off, or NULL when the file (its first size
 * bytes) ends before them; *err set on a read error. */
static const uint8_t *window_get(struct window *w, uint64_t off, size_t n, int *err)
{
	ssize_t r;

	if (off > w->size || w->size - off < n)
		return NULL;
	if (off >= w->off && off - w->off + n <= w->len)
		return w->buf + (off - w->off);
	do {
		size_t want = w->size - off < WINDOW ? (size_t)(w->size - off) : WINDOW;

		r = pread(w->fd, w->buf, want, (off_t)off);
	} while (r < 0 && errno == EINTR);
	if (r < 0) {
		*err = -errno;
		return NULL;
	}
	w->off = off;
	w->len = (size_t)r;
	return (size_t)r >= n ? w->buf : NULL;
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int read_header(struct jit_builder *b, struct window *w, uint64_t *first, int *err)
{
	const uint8_t *h = window_get(w, 0, HEADER_SIZE, err);
	uint32_t magic, total;

	if (!h)
		return -ENOENT; /* too short for now: a file being started */
	magic = u32_at(h);
	total = u32_at(h + 8);
	if (magic != JITDUMP_MAGIC) {
		jit_builder__refuse(b, JIT_REFUSED_BAD_HEADER,
				    magic == JITDUMP_MAGIC_SWAPPED ?
					    "a jitdump of the other byte order" :
					    "not a jitdump (magic)");
		return -EINVAL;
	}
	if (u32_at(h + 4) != JITDUMP_VERSION || total < HEADER_SIZE) {
		jit_builder__refuse(b, JIT_REFUSED_BAD_HEADER,
				    "a jitdump header of another version or a size under 40 bytes");
		return -EINVAL;
	}
	*first = total;
	return 0;
}

/* The code load record of total bytes whose body starts at off. 0, -E2BIG
 * (b full), -EINVAL (bad record), -ENOMEM. */
static int code_load(struct jit_builder *b, struct window *w, uint64_t off, uint32_t total,
		     int *err)
{
	uint32_t body = total - RECORD_PREFIX, room;
	const uint8_t *p;
	uint64_t addr, code_size;
	size_t n;

	if (body < CODE_LOAD_FIELDS + 1)
		return -EINVAL;
	room = body - CODE_LOAD_FIELDS; /* name and code */
	n = room < JIT_NAME_MAX + 1 ? room : JIT_NAME_MAX + 1;
	p = window_get(w, off, CODE_LOAD_FIELDS + n, err);
	if (!p)
		return -EINVAL;
	addr = u64_at(p + 16);
	code_size = u64_at(p + 24);
	if (code_size >= room)
		return -EINVAL;
	/* The name ends at a NUL before the code. */
	if (room - code_size < n)
		n = (size_t)(room - code_size);
	if (n <= JIT_NAME_MAX && !memchr(p + CODE_LOAD_FIELDS, '\0', n))
		return -EINVAL;
	return jit_builder__add(b, addr, code_size, (const char *)p + CODE_LOAD_FIELDS, n);
}

int jitdump__read(struct jit_builder *b, int fd, uint64_t size)
{
	struct window w = { .fd = fd, .size = size, .buf = malloc(WINDOW) };
	uint64_t off;
	int err = 0, r;

	if (!w.buf)
		return -ENOMEM;
	r = read_header(b, &w, &off, &err);
	while (!r && !err) {
		const uint8_t *p = window_get(&w, off, RECORD_PREFIX, &err);
		uint32_t id, total;

		if (!p)
			break;
		id = u32_at(p);
		total = u32_at(p + 4);
		if (total < RECORD_PREFIX) {
			r = -EINVAL;
		} else if (size - off < total) {
			break; /* being written */
		} else if (id == CODE_LOAD) {
			r = code_load(b, &w, off + RECORD_PREFIX, total, &err);
		}
		if (r == -EINVAL && !err)
			jit_builder__refuse(
				b, JIT_REFUSED_BAD_RECORD,
				"a record shorter than its fields, or a code load whose name or code does not fit it: the rest of the file skipped");
		off += total;
	}
	free(w.buf);
	if (err)
		return err;
	return r == -ENOMEM ? r : 0;
}
