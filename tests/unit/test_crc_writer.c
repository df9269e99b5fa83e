/* SPDX-License-Identifier: BSD-2-Clause */
/* The cache files' piece writer (core/crc_writer.c): a file and a memory
 * buffer get the same bytes, the CRC covers every piece, and an empty piece
 * (a table without symbols hands over NULL and 0) changes nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "core/crc_writer.h"

static void put_all(struct crc_writer *w)
{
	cr_assert_eq(crc_writer__put(w, "kiln", 4), 0);
	cr_assert_eq(crc_writer__put(w, NULL, 0), 0);
	cr_assert_eq(crc_writer__put(w, "-cache", 6), 0);
	cr_assert_eq(crc_writer__end(w), 0);
}

Test(crc_writer, file_and_memory_agree_empty_pieces_are_nothing)
{
	uint8_t mem[64] = { 0 }, disk[64] = { 0 };
	uint32_t want = (uint32_t)crc32_z(crc32_z(0, NULL, 0), (const void *)"kiln-cache", 10), crc;
	struct crc_writer w;
	FILE *f = tmpfile();

	cr_assert_not_null(f);
	crc_writer__init(&w, NULL, mem);
	put_all(&w);
	cr_assert_eq(w.mem, mem + 14);
	crc_writer__init(&w, f, NULL);
	put_all(&w);
	rewind(f);
	cr_assert_eq(fread(disk, 1, sizeof(disk), f), 14);
	fclose(f);
	cr_assert_eq(memcmp(mem, disk, 14), 0);
	cr_assert_eq(memcmp(mem, "kiln-cache", 10), 0);
	memcpy(&crc, mem + 10, sizeof(crc));
	cr_assert_eq(crc, want);
}
