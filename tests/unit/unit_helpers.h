/* Helpers shared by the unit test files. */
#ifndef KILN_TESTS_UNIT_HELPERS_H
#define KILN_TESTS_UNIT_HELPERS_H

#include "profile/profile.h"

/* Folded output of p as a malloc'd string; asserts it was written. */
char *folded_text(const struct profile *p);

#endif
