// SPDX-License-Identifier: BSD-2-Clause
/* proc_maps__parse: /proc/PID/maps text. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "proc/proc.h"

FUZZ_DEFAULT_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_mapping *maps = NULL;
	uint64_t *devs = NULL, *inos = NULL;
	int n = proc_maps__parse((const char *)data, size, &maps, &devs, &inos);
	size_t lines = 1;

	if (n < 0) {
		FUZZ_CHECK(n == -ENOMEM);
		return 0;
	}
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	/* At most one mapping a line. */
	FUZZ_CHECK((size_t)n <= lines);
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(maps[i].start < maps[i].end);
		FUZZ_CHECK(maps[i].name && maps[i].name[0]);
		FUZZ_CHECK(!maps[i].bin);
		FUZZ_CHECK(strlen(maps[i].name) < size);
		(void)devs[i];
		(void)inos[i];
	}
	proc_mappings__free(maps, (size_t)n);
	free(devs);
	free(inos);
	return 0;
}
