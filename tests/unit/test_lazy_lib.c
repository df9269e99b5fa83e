/* SPDX-License-Identifier: BSD-2-Clause */
/* core/lazy_lib: a library loaded at its first call; a failure stands. */
#include <criterion/criterion.h>

#include "core/lazy_lib.h"

Test(lazy_lib, loads_once_and_resolves_every_symbol)
{
	static const char *const names[] = { "crc32", "zlibVersion" };
	void *fns[2] = { 0 };
	struct lazy_lib l = { "libz.so.1", names, fns, 2, 0 };

	cr_assert_not(lazy_lib__loaded(&l));
	cr_assert(lazy_lib__load(&l));
	cr_assert(lazy_lib__loaded(&l));
	cr_assert_not_null(fns[0]);
	cr_assert_str_not_empty(((const char *(*)(void))fns[1])());
	cr_assert(lazy_lib__load(&l));          /* again: no second dlopen */
}

Test(lazy_lib, a_missing_library_or_symbol_stays_failed)
{
	static const char *const names[] = { "crc32", "no_such_function_in_zlib" };
	void *fns[2] = { 0 };
	struct lazy_lib missing = { "libkiln-absent.so.9", names, fns, 1, 0 };
	struct lazy_lib partial = { "libz.so.1", names, fns, 2, 0 };

	cr_assert_not(lazy_lib__load(&missing));
	cr_assert_not(lazy_lib__load(&missing));
	cr_assert_not(lazy_lib__loaded(&missing));
	cr_assert_not(lazy_lib__load(&partial));
	cr_assert_not(lazy_lib__loaded(&partial));
}
