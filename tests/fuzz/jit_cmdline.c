// SPDX-License-Identifier: BSD-2-Clause
/* jit__asks_exit_map: a process's /proc/PID/cmdline, as jit.c reads it
 * (at most 64 KiB, the last argument possibly cut). */
#include <string.h>

#include "fuzz.h"
#include "symbolize/jit.h"

FUZZ_DEFAULT_INIT

#define FLAG "-XX:+DumpPerfMapAtExit"
#define NO_FLAG "-XX:-DumpPerfMapAtExit"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *args = (const char *)data;
	bool on = jit__asks_exit_map(args, size);
	uint8_t *more;

	/* Yes only when the flag is there as a whole argument. */
	if (on)
		FUZZ_CHECK(size >= sizeof(FLAG) &&
			   memmem(args, size, FLAG, sizeof(FLAG)) != NULL);
	/* Bytes without a NUL after the input are a cut argument, never
	 * looked at; a whole negation after it turns it off. */
	more = malloc(size + sizeof(NO_FLAG));
	FUZZ_CHECK(more != NULL);
	if (size)
		memcpy(more, data, size);
	memcpy(more + size, NO_FLAG, sizeof(NO_FLAG));
	FUZZ_CHECK(jit__asks_exit_map((const char *)more, size + sizeof(NO_FLAG) - 1) == on);
	if (!size || !data[size - 1])
		FUZZ_CHECK(!jit__asks_exit_map((const char *)more, size + sizeof(NO_FLAG)));
	free(more);
	return 0;
}
