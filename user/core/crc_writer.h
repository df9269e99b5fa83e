/* SPDX-License-Identifier: BSD-2-Clause */
/* A file made in pieces and ended by the CRC-32 of them all: kiln's cache
 * files (unwind tables, symbol tables), written to a FILE as they are
 * encoded, never copied whole first, or into memory (the tests and fuzz
 * targets compare those bytes). */
#ifndef KILN_CORE_CRC_WRITER_H
#define KILN_CORE_CRC_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct crc_writer {
	FILE *f;                /* NULL: into mem */
	uint8_t *mem;           /* the next byte, when f is NULL (room is the caller's) */
	unsigned long crc;
};

/* Into f, or (f NULL) into mem. */
void crc_writer__init(struct crc_writer *w, FILE *f, uint8_t *mem);
/* Appends p[0, n) and takes it into the CRC: 0 or -EIO. */
int crc_writer__put(struct crc_writer *w, const void *p, size_t n);
/* Appends the CRC of everything put (4 bytes, host order): 0 or -EIO. */
int crc_writer__end(struct crc_writer *w);

#endif
