// SPDX-License-Identifier: BSD-2-Clause
/* profile__read of pprof: the protobuf as it is, and gzipped (compressed
 * here, so mutations reach the decoder instead of failing the gzip CRC);
 * both must get the same answer. */
#include <zlib.h>

#include "profile_check.h"

FUZZ_DEFAULT_INIT

/* data gzipped into a malloc'd buffer. */
static uint8_t *gzip_of(const uint8_t *data, size_t size, size_t *out_len)
{
	z_stream zs = { 0 };
	size_t cap = size + size / 100 + 64;
	uint8_t *out = malloc(cap);

	FUZZ_CHECK(out);
	FUZZ_CHECK(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)size;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	*out_len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *a, *b;
	struct read_info ia, ib;
	size_t gz_len, la, lb;
	uint8_t *gz;
	char *ta, *tb;
	int ea, eb;

	check_profile_read(data, size);
	/* Gzipped, the same content reads the same (a gzip header inside
	 * the gzip would be unwrapped only once: skip those). */
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b)
		return 0;
	gz = gzip_of(data, size, &gz_len);
	a = profile__new();
	b = profile__new();
	FUZZ_CHECK(a && b);
	ea = profile__read(a, data, size, &fuzz_limits, &ia);
	eb = profile__read(b, gz, gz_len, &fuzz_limits, &ib);
	FUZZ_CHECK(ea == eb);
	if (!ea) {
		ta = folded_of(a, &la);
		tb = folded_of(b, &lb);
		FUZZ_CHECK(la == lb && !memcmp(ta, tb, la));
		free(ta);
		free(tb);
	}
	profile__free(a);
	profile__free(b);
	free(gz);
	return 0;
}
