// SPDX-License-Identifier: BSD-2-Clause
/* profile__read: bounded file reading, gunzip with a bound on the output
 * (a small .gz can inflate to gigabytes), and the format sniff: text is
 * folded stacks, anything with binary bytes is a protobuf. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/reader.h"

/* Bytes looked at to tell text from binary. */
#define SNIFF_BYTES 4096

/* Inflates gzip data into a malloc'd *out of at most max bytes. */
static int gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **out,
		  size_t *out_len, struct read_info *info)
{
	z_stream zs = { 0 };
	size_t cap = len < max / 4 ? len * 4 + 64 : max;
	uint8_t *buf = NULL, *grown;
	int ret = Z_OK, err = 0;

	/* 15 + 16: a gzip wrapper, full window */
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)in;
	while (ret != Z_STREAM_END) {
		if (!buf || zs.total_out == cap) {
			if (buf && cap == max) {
				err = read_fail(info, -EFBIG,
						"more than %zu bytes after gunzip (--max-input)",
						max);
				break;
			}
			if (buf)
				cap = cap > max / 2 ? max : cap * 2;
			grown = realloc(buf, cap ? cap : 1);
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			buf = grown;
		}
		/* zlib counts in uInt: feed at most 1 GiB per call */
		zs.avail_in = len - (zs.next_in - in) > (1u << 30) ? 1u << 30 :
			      (uInt)(len - (zs.next_in - in));
		zs.next_out = buf + zs.total_out;
		zs.avail_out = cap - zs.total_out > (1u << 30) ? 1u << 30 :
			       (uInt)(cap - zs.total_out);
		ret = inflate(&zs, Z_NO_FLUSH);
		if (ret == Z_BUF_ERROR && zs.avail_out) {
			err = read_fail(info, -EINVAL, "truncated gzip data");
			break;
		}
		if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
			err = read_fail(info, -EINVAL, "corrupt gzip data (%s)",
					zs.msg ? zs.msg : "inflate failed");
			break;
		}
	}
	*out_len = zs.total_out;
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}

/* Text: no control bytes but tab and line ends in the first bytes. */
static bool looks_like_text(const uint8_t *buf, size_t len)
{
	size_t i, n = len < SNIFF_BYTES ? len : SNIFF_BYTES;

	for (i = 0; i < n; i++)
		if ((buf[i] < 0x20 && buf[i] != '\t' && buf[i] != '\n' &&
		     buf[i] != '\r') || buf[i] == 0x7f)
			return false;
	return true;
}

int profile__read(struct profile *p, const uint8_t *buf, size_t len,
		  const struct read_limits *lim, struct read_info *info)
{
	uint8_t *raw = NULL;
	int err;

	memset(info, 0, sizeof(*info));
	if (len > lim->max_bytes)
		return read_fail(info, -EFBIG, "larger than %zu bytes (--max-input)",
				 lim->max_bytes);
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		err = gunzip(buf, len, lim->max_bytes, &raw, &len, info);
		if (err)
			return err;
		buf = raw;
	}
	if (looks_like_text(buf, len)) {
		snprintf(info->type, sizeof(info->type), "samples");
		snprintf(info->unit, sizeof(info->unit), "count");
		err = folded__read(p, (const char *)buf, len, lim, info);
	} else {
		err = pprof__read(p, buf, len, lim, info);
	}
	free(raw);
	return err;
}

int profile__read_file(struct profile *p, const char *path,
		       const struct read_limits *lim, struct read_info *info)
{
	uint8_t *buf = NULL, *grown;
	size_t len = 0, cap;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	memset(info, 0, sizeof(*info));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = read_fail(info, -errno, "cannot read: %s", strerror(errno));
		goto cleanup;
	}
	if (S_ISDIR(st.st_mode)) {
		err = read_fail(info, -EISDIR, "cannot read: %s", strerror(EISDIR));
		goto cleanup;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > lim->max_bytes) {
		err = read_fail(info, -EFBIG, "larger than %zu bytes (--max-input)",
				lim->max_bytes);
		goto cleanup;
	}
	/* a file's size plus one byte sees it end; pipes grow the buffer up
	 * to one byte past the limit, which tells one that is too long */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
	while (len <= lim->max_bytes) {
		if (len == cap || !buf) {
			if (buf)
				cap = cap > lim->max_bytes / 2 ? lim->max_bytes + 1 : cap * 2;
			grown = realloc(buf, cap);
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = grown;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = read_fail(info, -errno, "cannot read: %s", strerror(errno));
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	err = profile__read(p, buf, len, lim, info);
cleanup:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}
