/* SPDX-License-Identifier: BSD-2-Clause */
/* core/secret: the bounded, trimmed reader of password and token files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/secret.h"

static char path[64];

static void put(const char *content, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(content, 1, len, f), len);
	fclose(f);
}

static void setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/kiln-secret.XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(path);
}

TestSuite(secret, .init = setup, .fini = teardown);

static int rd(size_t max, enum secret_form form, char **out)
{
	*out = NULL;
	return secret__read(path, max, form, out);
}

Test(secret, first_line_as_it_is)
{
	char *s;

	put(" pass word \r\nsecond", 19);
	cr_assert_eq(rd(64, SECRET_FIRST_LINE, &s), 0);
	cr_assert_str_eq(s, " pass word ");
	secret__free(s);
	/* Past max: ignored. */
	put("abcdefgh", 8);
	cr_assert_eq(rd(4, SECRET_FIRST_LINE, &s), 0);
	cr_assert_str_eq(s, "abcd");
	secret__free(s);
	put("\nlater", 6);
	cr_assert_eq(rd(64, SECRET_FIRST_LINE, &s), -ENODATA);
	cr_assert_null(s);
}

Test(secret, token_trimmed_bounded_printable)
{
	char *s;

	put("\t token-1 \n", 11);
	cr_assert_eq(rd(64, SECRET_TOKEN, &s), 0);
	cr_assert_str_eq(s, "token-1");
	secret__free(s);
	put("abcd", 4);
	cr_assert_eq(rd(4, SECRET_TOKEN, &s), 0);
	secret__free(s);
	put("abcde", 5);
	cr_assert_eq(rd(4, SECRET_TOKEN, &s), -EFBIG);
	put(" \n ", 3);
	cr_assert_eq(rd(64, SECRET_TOKEN, &s), -ENODATA);
	put("tok\nen", 6);
	cr_assert_eq(rd(64, SECRET_TOKEN, &s), -EBADMSG);
	put("\0tok", 4);
	cr_assert_eq(rd(64, SECRET_TOKEN, &s), -EBADMSG);
	cr_assert_null(s);
	cr_assert_eq(secret__read("/nonexistent/kiln/secret", 64, SECRET_TOKEN, &s), -ENOENT);
	secret__free(NULL);
}
