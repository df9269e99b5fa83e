// SPDX-License-Identifier: BSD-2-Clause
/* rb_lines__line (Ruby 3.1 line tables read from a process, packed as
 * symbolize/rb_lines.h says). Input: the packed table; seeds are real
 * tables (rb_lines_seeds.rb). A line found is one of the table's lines;
 * and a table given by positions (ascending, small) is also built as
 * Ruby's succinct table, which must give the same line everywhere. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "symbolize/rb_lines.h"

FUZZ_DEFAULT_INIT

#define POS_MAX 2048 /* positions tried */

static uint32_t u32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}

/* The packed succinct form of a positions table (n entries, ascending
 * positions below POS_MAX), as Ruby's succ_index_table_create builds it. */
static size_t to_succinct(const uint8_t *t, uint32_t n, uint8_t *out)
{
	const uint8_t *pos = t + 8 + 4 * (size_t)n;
	uint64_t imm[RB_SUCC_IMMEDIATE / 9] = { 0 };
	size_t blocks = (POS_MAX - RB_SUCC_IMMEDIATE + 511) / 512, len;
	uint32_t r = 0, kind = RB_LINES_SUCCINCT;

	memcpy(out, t, 8 + 4 * (size_t)n);
	memcpy(out + 4, &kind, 4);
	len = 8 + 4 * (size_t)n;
	for (uint32_t j = 0; j < RB_SUCC_IMMEDIATE / 9; j++)
		for (uint32_t i = 0; i < 9; i++) {
			if (r < n && u32(pos + 4 * r) == j * 9 + i)
				r++;
			imm[j] |= (uint64_t)r << (7 * i);
		}
	memcpy(out + len, imm, sizeof(imm));
	len += sizeof(imm);
	for (size_t k = 0; k < blocks; k++) {
		uint8_t *b = out + len;
		uint64_t small = 0, small_rank = 0;

		memset(b, 0, RB_SUCC_BLOCK);
		memcpy(b, &r, 4);
		for (uint32_t j = 0; j < 8; j++) {
			uint64_t bits = 0;

			if (j)
				small |= small_rank << (9 * (j - 1));
			for (uint32_t i = 0; i < 64; i++)
				if (r < n &&
				    u32(pos + 4 * r) == k * 512 + j * 64 + i + RB_SUCC_IMMEDIATE) {
					bits |= 1ull << i;
					r++;
				}
			memcpy(b + 16 + 8 * j, &bits, 8);
			small_rank += (uint64_t)__builtin_popcountll(bits);
		}
		memcpy(b + 8, &small, 8);
		len += RB_SUCC_BLOCK;
	}
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t n = size >= 8 ? u32(data) : 0;
	bool ascending = size >= 8 && u32(data + 4) == RB_LINES_POSITIONS && n > 1 && n < 512 &&
			 size >= 8 + 8 * (size_t)n;

	for (uint32_t pos = 0; pos < POS_MAX; pos++) {
		uint32_t line = rb_lines__line(data, size, pos);
		bool found = line == 0;

		for (uint32_t i = 0; !found && i < n && 8 + 4 * (size_t)(i + 1) <= size; i++)
			found = u32(data + 8 + 4 * (size_t)i) == line;
		FUZZ_CHECK(found);
	}
	for (uint32_t i = 0; ascending && i < n; i++) {
		uint32_t p = u32(data + 8 + 4 * (size_t)n + 4 * (size_t)i);

		ascending = p < POS_MAX &&
			    (i == 0 || p > u32(data + 8 + 4 * (size_t)n + 4 * (size_t)(i - 1)));
	}
	if (ascending) {
		uint8_t *succ = malloc(8 + 4 * (size_t)n + RB_SUCC_HEAD +
				       (POS_MAX / 512 + 1) * RB_SUCC_BLOCK);
		size_t len;

		if (!succ)
			return 0;
		len = to_succinct(data, n, succ);
		for (uint32_t pos = 0; pos < POS_MAX - 1; pos++)
			FUZZ_CHECK(rb_lines__line(data, size, pos) ==
				   rb_lines__line(succ, len, pos));
		free(succ);
	}
	return 0;
}
