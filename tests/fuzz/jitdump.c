// SPDX-License-Identifier: BSD-2-Clause
/* jitdump__read: a JIT's jit-<pid>.dump (jit_check.h). */
#include "jit_check.h"
#include "symbolize/jitdump.h"

FUZZ_DEFAULT_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jit_fuzz_one(data, size, jitdump__read);
}
