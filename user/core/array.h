/* SPDX-License-Identifier: BSD-2-Clause */
/* Growable arrays: capacity doubles, so n appends cost O(n) in total. */
#ifndef KILN_CORE_ARRAY_H
#define KILN_CORE_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes *arr hold at least need elements of elem bytes. 0 or -ENOMEM;
 * on failure *arr and *cap are left as they were. */
static inline int array_reserve_(void **arr, size_t *cap, size_t need,
				 size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

/* Typed front end: arr is any T * lvalue, cap its size_t capacity. */
#define array_reserve(arr, cap, need) __extension__ ({			\
	void *arr_tmp_ = (arr);						\
	int arr_err_ = array_reserve_(&arr_tmp_, &(cap), (need),	\
				      sizeof(*(arr)));			\
	(arr) = arr_tmp_;						\
	arr_err_;							\
})

#endif
