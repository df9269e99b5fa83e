#include <criterion/criterion.h>
#include <stdio.h>

#include "unit_helpers.h"

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
