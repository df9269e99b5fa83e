/* Helpers shared by the unit test files. */
#ifndef KILN_TESTS_UNIT_HELPERS_H
#define KILN_TESTS_UNIT_HELPERS_H

#include "profile/profile.h"

/* Folded output of p as a malloc'd string; asserts it was written. */
char *folded_text(const struct profile *p);
/* Default read limits for tests: 64 MiB, a million nodes. */
extern const struct read_limits test_limits;
/* Reads text (folded stacks) into p; asserts it was read. */
void read_text(struct profile *p, const char *text);
/* A new profile of text (folded stacks). */
struct profile *profile_of(const char *text);

#endif
