// SPDX-License-Identifier: BSD-2-Clause
/* Rust names through demangle__rust: the names rustc 1.63 (Debian 12) gave
 * tests/fixtures/rustnames under both manglings, escapes, LLVM's suffix, a
 * punycode identifier, cut output, and v0 back-reference bombs (built
 * here), which must end at the bound without leaking (the ASan build). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "symbolize/demangle.h"

#define OUT_MAX (64u << 10)

static void expect(const char *mangled, const char *want)
{
	char out[1024];
	size_t total;

	cr_assert_eq(demangle__rust(mangled, out, sizeof(out), OUT_MAX, &total), 1, "%s", mangled);
	cr_assert_str_eq(out, want);
	cr_assert_eq(total, strlen(want));
}

static void expect_not_rust(const char *name)
{
	char out[64];
	size_t total = 7;

	cr_assert_eq(demangle__rust(name, out, sizeof(out), OUT_MAX, &total), 0, "%s", name);
	cr_assert_str_eq(out, "");
	cr_assert_eq(total, 0);
}

Test(demangle, legacy_without_hash)
{
	expect("_ZN9rustnames6engine3hot4spin17h334606949d265d0eE", "rustnames::engine::hot::spin");
	expect("_ZN68_$LT$rustnames..engine..Mixer$u20$as$u20$rustnames..engine..Step$GT$4step17h33b0ee9deb44ce68E",
	       "<rustnames::engine::Mixer as rustnames::engine::Step>::step");
	expect("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h61c63a5e4f8e2f29E",
	       "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
	/* LLVM's suffix of a renamed local symbol goes too. */
	expect("_ZN5alloc7raw_vec11finish_grow17h29670bc8d8346527E.llvm.12147610521193969065",
	       "alloc::raw_vec::finish_grow");
}

Test(demangle, v0)
{
	expect("_RNvNtNtCsfLu95uL3got_9rustnames6engine3hot4spin", "rustnames::engine::hot::spin");
	expect("_RNvXNtCsfLu95uL3got_9rustnames6engineNtB2_5MixerNtB2_4Step4step",
	       "<rustnames::engine::Mixer as rustnames::engine::Step>::step");
	/* fn grüße() in crate u: a punycode identifier. */
	expect("_RNvCs1qz15sFutzm_1uu9gre_6ka8l", "u::gr\xc3\xbc\xc3\x9f"
						  "e");
}

Test(demangle, not_rust)
{
	expect_not_rust("main");
	expect_not_rust("_ZN4kiln4areaEil"); /* C++: no hash segment */
	expect_not_rust("_R");
	expect_not_rust("_RNvC");
	expect_not_rust("");
}

Test(demangle, cut_to_the_buffer)
{
	char out[8];
	size_t total;

	cr_assert_eq(demangle__rust("_RNvNtNtCsfLu95uL3got_9rustnames6engine3hot4spin", out,
				    sizeof(out), OUT_MAX, &total),
		     1);
	cr_assert_str_eq(out, "rustnam");
	cr_assert_eq(total, strlen("rustnames::engine::hot::spin"));
}

/* v0's base-62 numbers: 0 is "_", n is n - 1 in base 62 then "_". */
static size_t base62(size_t x, char *p)
{
	static const char digits[] =
		"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char tmp[16];
	size_t n = 0, len = 0;

	if (x) {
		x--;
		do {
			tmp[n++] = digits[x % 62];
			x /= 62;
		} while (x);
	}
	while (n)
		p[len++] = tmp[--n];
	p[len++] = '_';
	return len;
}

/* A name of `levels` nested generic types, each level's two arguments
 * being the level below, the second one a back reference: the output
 * doubles per level. `open` is one level's head, leaf the innermost path. */
static void bomb(char *buf, size_t cap, int levels, const char *open, const char *leaf)
{
	size_t len = 0, head = strlen(open);

	len += (size_t)snprintf(buf, cap, "_R");
	for (int i = 0; i < levels; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s", open);
	len += (size_t)snprintf(buf + len, cap - len, "%s", leaf);
	for (int k = 1; k <= levels; k++) {
		buf[len++] = 'B';
		len += base62((size_t)(levels - k + 1) * head, buf + len);
		buf[len++] = 'E';
	}
	buf[len] = '\0';
	cr_assert_lt(len, cap);
}

Test(demangle, bombs_end_at_the_bound)
{
	char name[1100], out[1024];
	size_t total;

	/* Small: demangled in full, 2 levels = a::x::<a::x<a, a>, a::x<a, a>>. */
	bomb(name, sizeof(name), 2, "INtC1a1x", "C1a");
	cr_assert_eq(demangle__rust(name, out, sizeof(out), OUT_MAX, &total), 1);
	cr_assert_str_eq(out, "a::x::<a::x<a, a>, a::x<a, a>>");
	/* 60 levels would print 2^60 pieces: refused at the bound. */
	bomb(name, sizeof(name), 60, "INtC1a1x", "C1a");
	cr_assert_eq(demangle__rust(name, out, sizeof(out), OUT_MAX, &total), -1);
	cr_assert_str_eq(out, "");
	/* Punycode identifiers everywhere: the one piece printed from the
	 * demangler's heap is never where it is left (ASan: no leak). */
	bomb(name, sizeof(name), 30, "INtCu9gre_6ka8lu9gre_6ka8l", "Cu9gre_6ka8l");
	cr_assert_eq(demangle__rust(name, out, sizeof(out), OUT_MAX, &total), -1);
	for (size_t max = OUT_MAX - 7; max <= OUT_MAX; max++)
		cr_assert_eq(demangle__rust(name, out, sizeof(out), max, &total), -1);
}
