/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdint.h>
#include <sys/random.h>

#include "core/backoff.h"
#include "core/clock.h"

double backoff__delay(unsigned failures, double min, double max, uint32_t r)
{
	double b = min;

	for (unsigned i = 1; i < failures && b < max; i++)
		b *= 2;
	if (b > max)
		b = max;
	return b / 2 + (b / 2) * (r / (double)UINT32_MAX);
}

uint32_t backoff__random(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)monotonic_ns();
	return r;
}
