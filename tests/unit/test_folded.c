// SPDX-License-Identifier: BSD-2-Clause
/* Folded stacks: exact text, FlameGraph conventions, merging by name. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile/profile.h"
#include "unit_helpers.h"

static struct frame fo_frame(enum frame_kind kind, const char *name,
			     uint64_t addr)
{
	return (struct frame){
		.kind = kind, .name = name, .addr = addr,
		.map_file = kind == FRAME_KERNEL ? "[kernel.kallsyms]" :
			    kind == FRAME_USER ? "/usr/bin/app" : NULL,
	};
}

/* Adds the stack given as kinds and names, count times. */
static void fo_add(struct profile *p, uint64_t count, size_t n,
		   const enum frame_kind *kinds, const char *const *names,
		   uint64_t addr)
{
	struct frame f[16];
	size_t i;

	cr_assert_leq(n, 16);
	for (i = 0; i < n; i++)
		f[i] = fo_frame(kinds[i], names[i], addr + i);
	cr_assert_eq(profile__add(p, f, n, count), 0);
}

#define R FRAME_ROOT
#define U FRAME_USER
#define K FRAME_KERNEL

Test(folded, exact_text)
{
	static const enum frame_kind k3[] = { R, U, U }, k4[] = { R, U, U, K },
		k2[] = { R, U };
	static const char *const work[] = { "app", "main", "work", "do_syscall_64" },
		*const bash[] = { "bash", "main" };
	struct profile *p = profile__new();
	char *text;

	cr_assert_not_null(p);
	fo_add(p, 2, 3, k3, work, 0x401000);
	fo_add(p, 1, 3, k3, work, 0x402000);    /* other addresses: merged */
	fo_add(p, 2, 4, k4, work, 0x401000);
	fo_add(p, 1, 2, k2, work, 0x401000);
	fo_add(p, 4, 2, k2, bash, 0x401000);
	text = folded_text(p);
	cr_assert_str_eq(text,
			 "app;main 1\n"
			 "app;main;work 3\n"
			 "app;main;work;do_syscall_64_[k] 2\n"
			 "bash;main 4\n");
	free(text);
	profile__free(p);
}

Test(folded, names_sanitized_and_merged)
{
	static const enum frame_kind ku[] = { R, U }, kk[] = { R, K };
	static const char *const semi[] = { "app", "f;g" },
		*const colon[] = { "app", "f:g" },
		*const ctl[] = { "app", "a\nb\tc\rd" },
		*const kern[] = { "app", "x;y" },
		*const bytes[] = { "app", "caf\xc3\xa9\xef\xbf" }; /* é, then a cut sequence */
	struct profile *p = profile__new();
	char *text;

	cr_assert_not_null(p);
	fo_add(p, 1, 2, ku, semi, 0x1000);
	fo_add(p, 2, 2, ku, colon, 0x2000);
	fo_add(p, 3, 2, ku, ctl, 0x3000);
	fo_add(p, 4, 2, kk, kern, 0x4000);
	fo_add(p, 5, 2, ku, bytes, 0x5000);
	text = folded_text(p);
	cr_assert_str_eq(text,
			 "app;a b c d 3\n"
			 "app;caf\xc3\xa9?? 5\n"
			 "app;f:g 3\n"
			 "app;x:y_[k] 4\n");
	free(text);
	profile__free(p);
}

Test(folded, kernel_and_user_same_name_differ)
{
	static const enum frame_kind ku[] = { R, U }, kk[] = { R, K };
	static const char *const names[] = { "app", "memcpy" };
	struct profile *p = profile__new();
	char *text;

	cr_assert_not_null(p);
	fo_add(p, 5, 2, ku, names, 0x1000);
	fo_add(p, 6, 2, kk, names, 0x1000);
	text = folded_text(p);
	cr_assert_str_eq(text, "app;memcpy 5\napp;memcpy_[k] 6\n");
	free(text);
	profile__free(p);
}

Test(folded, empty_profile_writes_nothing)
{
	struct profile *p = profile__new();
	char *text;

	cr_assert_not_null(p);
	text = folded_text(p);
	cr_assert_str_eq(text, "");
	free(text);
	profile__free(p);
}

Test(folded, write_error_reported)
{
	static const enum frame_kind k[] = { R };
	static const char *const names[] = { "app" };
	struct profile *p = profile__new();
	FILE *ro = fopen("/dev/null", "r");

	cr_assert_not_null(p);
	cr_assert_not_null(ro);
	fo_add(p, 1, 1, k, names, 0);
	cr_assert_eq(folded__write(p, false, ro), -EIO);
	fclose(ro);
	profile__free(p);
}
