// SPDX-License-Identifier: BSD-2-Clause
/* profile__read of folded stacks (FlameGraph's "a;b;c 12" lines). */
#include "profile_check.h"

FUZZ_DEFAULT_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_profile_read(data, size);
	return 0;
}
