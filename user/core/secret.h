/* SPDX-License-Identifier: BSD-2-Clause */
/* The one secret-file reader of kiln (passwords, bearer tokens). Reads
 * are bounded, every buffer that held the secret is zeroed before it is
 * freed, and nothing here logs the content: callers log the path and the
 * error only. */
#ifndef KILN_CORE_SECRET_H
#define KILN_CORE_SECRET_H

#include <stddef.h>

enum secret_form {
	/* The first line as it is, without its line break: a password may
	 * hold any other byte. Bytes past max are ignored. */
	SECRET_FIRST_LINE,
	/* The whole file, blanks (space, tab, CR, LF) around it trimmed; it
	 * must be printable ASCII without blanks (it goes into a header, where
	 * a line break would inject another). Larger than max: -EFBIG. */
	SECRET_TOKEN,
};

/* Reads the secret of the file at path into *out (malloc'd; free it with
 * secret__free). 0, or -errno: the open's, -EIO, -EFBIG, -ENODATA (empty),
 * -EBADMSG (SECRET_TOKEN: a byte outside printable ASCII), -ENOMEM. *out
 * is untouched on failure. */
int secret__read(const char *path, size_t max, enum secret_form form, char **out);
/* Zeroes s and frees it; NULL is fine. */
void secret__free(char *s);

#endif
