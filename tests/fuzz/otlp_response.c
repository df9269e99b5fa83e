// SPDX-License-Identifier: BSD-2-Clause
/* otlp__refused and otlp__status_message: what an OTLP server answers
 * (an ExportProfilesServiceResponse after a 2xx, a google.rpc.Status
 * after a failure), read from whatever bytes it sent. */
#include <ctype.h>
#include <string.h>

#include "export/otlp.h"
#include "fuzz.h"

FUZZ_DEFAULT_INIT

static void check_message(const char *msg, size_t cap)
{
	size_t len = strnlen(msg, cap);

	FUZZ_CHECK(len < cap);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK(isprint((unsigned char)msg[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[64];
	uint32_t profiles = size ? data[0] % 8 : 0;

	FUZZ_CHECK(otlp__refused(data, size, profiles, msg, sizeof(msg)) <= profiles);
	check_message(msg, sizeof(msg));
	otlp__status_message(data, size, msg, sizeof(msg));
	check_message(msg, sizeof(msg));
	return 0;
}
