// SPDX-License-Identifier: BSD-2-Clause
/* py_lines__line (CPython 3.11+ location tables read from a process) and
 * py_names__utf8 (the str contents beside them). Input: a 4-byte first
 * line, then the table; seeds are real tables (py_lines_seeds.py). */
#include <string.h>

#include "fuzz.h"
#include "symbolize/py_lines.h"
#include "symbolize/py_names.h"

FUZZ_DEFAULT_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first;
	char out[64];

	if (size < 4)
		return 0;
	memcpy(&first, data, 4);
	/* Every instruction of the table, and some past its end: a known line
	 * is positive, and past the table there is none. */
	for (uint32_t i = 0; i < 64; i++)
		(void)py_lines__line(data + 4, size - 4, first, i);
	/* an entry covers at most 8 code units and takes at least a byte */
	FUZZ_CHECK(py_lines__line(data + 4, size - 4, first, (uint32_t)(8 * (size - 4))) == 0);
	for (unsigned kind = 1; kind <= 4; kind *= 2) {
		size_t n = py_names__utf8(data, size / kind, kind, out, sizeof(out));

		FUZZ_CHECK(n < sizeof(out) && out[n] == 0 && strlen(out) == n);
	}
	return 0;
}
