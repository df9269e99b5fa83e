// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "core/crc_writer.h"

void crc_writer__init(struct crc_writer *w, FILE *f, uint8_t *mem)
{
	w->f = f;
	w->mem = mem;
	w->crc = crc32_z(0, NULL, 0);
}

static int append(struct crc_writer *w, const void *p, size_t n)
{
	if (w->f)
		return fwrite(p, 1, n, w->f) == n ? 0 : -EIO;
	memcpy(w->mem, p, n);
	w->mem += n;
	return 0;
}

int crc_writer__put(struct crc_writer *w, const void *p, size_t n)
{
	/* an empty piece may come with p NULL, which fwrite and memcpy
	 * refuse, and crc32_z takes for a request of its initial value */
	if (!n)
		return 0;
	w->crc = crc32_z(w->crc, p, n);
	return append(w, p, n);
}

int crc_writer__end(struct crc_writer *w)
{
	uint32_t crc = (uint32_t)w->crc;

	return append(w, &crc, sizeof(crc));
}
