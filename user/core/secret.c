/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/secret.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int secret__read(const char *path, size_t max, enum secret_form form, char **out)
{
	char *buf, *s, *e, *copy;
	size_t n;
	FILE *f;
	int err = 0;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	buf = malloc(max + 2);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	/* One byte more than max tells a file of exactly max bytes from a
	 * larger one. */
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		err = -EIO;
	fclose(f);
	if (err)
		goto out;
	if (n > max) {
		if (form == SECRET_TOKEN) {
			err = -EFBIG;
			goto out;
		}
		n = max;
	}
	buf[n] = '\0';
	s = buf;
	if (form == SECRET_FIRST_LINE) {
		e = s + strcspn(s, "\r\n");
	} else {
		for (e = buf + n; e > s && blank(e[-1]); e--)
			;
		for (; s < e && blank(*s); s++)
			;
	}
	*e = '\0';
	if (s == e) {
		err = -ENODATA;
		goto out;
	}
	for (char *c = s; form == SECRET_TOKEN && c < e; c++)
		if (*c < 0x21 || *c > 0x7e) {
			err = -EBADMSG;
			goto out;
		}
	copy = strdup(s);
	if (!copy) {
		err = -ENOMEM;
		goto out;
	}
	*out = copy;
out:
	explicit_bzero(buf, max + 2);
	free(buf);
	return err;
}

void secret__free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}
