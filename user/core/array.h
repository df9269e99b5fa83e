/* SPDX-License-Identifier: BSD-2-Clause */
/* Growing an array by doubling: the one place it is written. */
#ifndef KILN_CORE_ARRAY_H
#define KILN_CORE_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/* Makes room in *buf (*cap elements of size bytes) for need elements,
 * doubling from first; the caller bounds need. 0 or -ENOMEM (*buf kept). */
static inline int array__grow(void **buf, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : first;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	p = realloc(*buf, c * size);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = c;
	return 0;
}

#endif
