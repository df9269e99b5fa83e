// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <unistd.h>

#include "core/file.h"

int file__write_atomic(const char *path, int (*fill)(FILE *f, void *ctx), void *ctx,
		       uint64_t *bytes)
{
	char tmp[4200];
	FILE *f;
	int err;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, getpid());
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	err = fill(f, ctx);
	*bytes = (uint64_t)ftell(f);
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

void file__append_safe_name(char *buf, size_t n, size_t *pos, const char *s, size_t reserve)
{
	for (; *s && *pos + reserve + 1 < n; s++)
		buf[(*pos)++] = isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.' ?
				*s : '_';
	buf[*pos] = '\0';
}
