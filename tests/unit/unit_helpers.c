#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "unit_helpers.h"

uint64_t unit_deadline(void)
{
	return monotonic_ns() + UNIT_WAIT_S * 1000000000ull;
}

bool unit_poll_pause(uint64_t deadline)
{
	if (monotonic_ns() > deadline)
		return false;
	usleep(10 * 1000);
	return true;
}

char *folded_text(const struct profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cr_assert_eq(folded__write(p, f), 0);
	cr_assert_eq(fclose(f), 0);
	return text;
}

const struct read_limits test_limits = { .max_bytes = 64 << 20, .max_nodes = 1000000 };

void read_text(struct profile *p, const char *text)
{
	struct read_info info;
	int err = profile__read(p, (const uint8_t *)text, strlen(text), &test_limits, &info);

	cr_assert_eq(err, 0, "profile__read: %d (%s)", err, info.why);
}

struct profile *profile_of(const char *text)
{
	struct profile *p = profile__new();

	cr_assert_not_null(p);
	read_text(p, text);
	return p;
}
