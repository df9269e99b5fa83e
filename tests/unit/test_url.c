/* SPDX-License-Identifier: BSD-2-Clause */
/* URLs as the agent logs them and judges them before sending credentials:
 * the userinfo redacted wherever it stands, plain http:// recognised. */
#include <criterion/criterion.h>

#include "core/url.h"

Test(url, userinfo_is_redacted)
{
	static const char *const cases[][2] = {
		{ "http://u:p@host:4040/x", "http://***@host:4040/x" },
		{ "https://user@host", "https://***@host" },
		{ "http://u:p@ss@host/a@b", "http://***@host/a@b" }, /* '@' in the password */
		{ "http://host/path@x?q=a@b#c@d", "http://host/path@x?q=a@b#c@d" },
		{ "http://host:4040", "http://host:4040" },
		{ "ftp://u:secret@x", "ftp://***@x" },
		{ "not a url", "not a url" },
		{ "", "" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_str_eq(url__redact(cases[i][0], buf, sizeof(buf)), cases[i][1],
				 "%s", cases[i][0]);
	cr_assert(url__has_userinfo("http://u:p@host"));
	cr_assert(!url__has_userinfo("http://host/a@b"));
	cr_assert(!url__has_userinfo(NULL));
	cr_assert_str_eq(url__redact(NULL, buf, sizeof(buf)), "(none)");
}

Test(url, redaction_is_cut_to_the_buffer)
{
	char buf[12];

	cr_assert_str_eq(url__redact("http://u:secretpassword@host", buf, sizeof(buf)),
			 "http://***@");
}

Test(url, cleartext)
{
	cr_assert(url__is_cleartext("http://x"));
	cr_assert(url__is_cleartext("HTTP://x"));
	cr_assert(!url__is_cleartext("https://x"));
	cr_assert(!url__is_cleartext("httpx://x"));
	cr_assert(!url__is_cleartext(NULL));
}
