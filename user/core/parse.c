// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "core/parse.h"

static int parse_scaled(const char *s, uint64_t min, uint64_t max, uint64_t *out,
			int allow_suffix, int base)
{
	unsigned long long v, scale = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno)
		return -ERANGE;
	if (allow_suffix && *end) {
		switch (toupper((unsigned char)*end)) {
		case 'K': scale = 1ull << 10; break;
		case 'M': scale = 1ull << 20; break;
		case 'G': scale = 1ull << 30; break;
		default: return -EINVAL;
		}
		end++;
		if (toupper((unsigned char)*end) == 'I' && toupper((unsigned char)end[1]) == 'B')
			end += 2;
		else if (toupper((unsigned char)*end) == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (v > max / scale || v * scale < min || v * scale > max)
		return -ERANGE;
	*out = v * scale;
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_scaled(s, min, max, out, 0, 10);
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_scaled(s, min, max, out, 1, 10);
}

int parse_octal(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_scaled(s, min, max, out, 0, 8);
}

static int parse_time(const char *s, double min, double max, double *out, int allow_unit)
{
	double v, scale = 1;
	char *end;

	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -EINVAL;
	v = strtod(s, &end);
	if (allow_unit && *end && !end[1]) {
		switch (*end) {
		case 's': scale = 1; break;
		case 'm': scale = 60; break;
		case 'h': scale = 3600; break;
		default: return -EINVAL;
		}
		end++;
	}
	if (*end)
		return -EINVAL;
	v *= scale;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double min, double max, double *out)
{
	return parse_time(s, min, max, out, 0);
}

int parse_duration(const char *s, double min, double max, double *out)
{
	return parse_time(s, min, max, out, 1);
}
