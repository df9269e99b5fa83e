// SPDX-License-Identifier: BSD-2-Clause
/* perf_map__read: a JIT's /tmp/perf-<pid>.map (jit_check.h). */
#include "jit_check.h"
#include "symbolize/perf_map.h"

FUZZ_DEFAULT_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jit_fuzz_one(data, size, perf_map__read);
}
