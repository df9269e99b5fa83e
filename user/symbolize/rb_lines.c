// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: rank(pos), the number of entries that begin at or before pos,
 * names the entry pos belongs to (rank - 1), as Ruby's own lookup does;
 * from the positions array it is a binary search, from the succinct table
 * a few words and a population count. */
#include <string.h>

#include "core/bytes.h"
#include "symbolize/rb_lines.h"

size_t rb_lines__succ_bytes(uint32_t iseq_size)
{
	size_t blocks = iseq_size < RB_SUCC_IMMEDIATE ?
				0 :
				((size_t)iseq_size - RB_SUCC_IMMEDIATE + 511) / 512;

	return RB_SUCC_HEAD + blocks * RB_SUCC_BLOCK;
}

/* rank(pos) in the succinct table t of len bytes; -1: outside it. */
static int64_t succ_rank(const uint8_t *t, size_t len, uint32_t pos)
{
	uint64_t block_at, bits, small;
	uint32_t bit, sub;

	if (len < RB_SUCC_HEAD)
		return -1;
	if (pos < RB_SUCC_IMMEDIATE)
		return (int64_t)(bytes__u64(t, pos / 9 * 8) >> (pos % 9 * 7) & 0x7f);
	block_at = RB_SUCC_HEAD + (uint64_t)(pos - RB_SUCC_IMMEDIATE) / 512 * RB_SUCC_BLOCK;
	if (block_at + RB_SUCC_BLOCK > len)
		return -1;
	bit = (pos - RB_SUCC_IMMEDIATE) % 512;
	sub = bit / 64;
	small = sub ? bytes__u64(t, block_at + 8) >> ((sub - 1) * 9) & 0x1ff : 0;
	bits = bytes__u64(t, block_at + 16 + sub * 8) << (63 - bit % 64);
	return (int64_t)bytes__u32(t, block_at) + (int64_t)small + __builtin_popcountll(bits);
}

uint32_t rb_lines__line(const uint8_t *table, size_t len, uint32_t pos)
{
	uint32_t n, kind;
	const uint8_t *lines, *rest;
	size_t rest_len;
	int64_t rank;

	if (len < 8)
		return 0;
	n = bytes__u32(table, 0);
	kind = bytes__u32(table, 4);
	if (n == 0 || n > (len - 8) / 4)
		return 0;
	lines = table + 8;
	rest = lines + 4 * (size_t)n;
	rest_len = len - 8 - 4 * (size_t)n;
	if (n == 1)
		rank = 1;
	else if (kind == RB_LINES_POSITIONS) {
		uint32_t lo = 0, hi;

		if (rest_len / 4 < n)
			return 0;
		hi = n; /* entries [0, lo) begin at or before pos */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (bytes__u32(rest, 4 * (size_t)mid) <= pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		rank = lo;
	} else if (kind == RB_LINES_SUCCINCT) {
		rank = succ_rank(rest, rest_len, pos);
	} else {
		return 0;
	}
	if (rank < 1 || rank > n || bytes__u32(lines, 4 * (size_t)(rank - 1)) > INT32_MAX)
		return 0; /* (a negative line: none) */
	return bytes__u32(lines, 4 * (size_t)(rank - 1));
}
