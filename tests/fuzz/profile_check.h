/* SPDX-License-Identifier: BSD-2-Clause */
/* What the two profile__read targets check on every input (included by
 * pprof_read.c and folded_read.c, which differ in their corpus):
 * - profile__read accepts or refuses with a reason, never more nodes
 *   than the bound;
 * - what it accepted survives kiln's own writers: folded__write then
 *   reading that text gives the same folded text and total, and so does
 *   pprof__encode then reading that (so `kiln view x -o y` of any input
 *   kiln accepts gives a y that kiln reads back to the same stacks);
 * - the HTML page can be written. */
#ifndef KILN_TESTS_FUZZ_PROFILE_CHECK_H
#define KILN_TESTS_FUZZ_PROFILE_CHECK_H

#include <errno.h>
#include <string.h>

#include "core/utf8.h"
#include "fuzz.h"
#include "profile/profile.h"

/* read_add checks the node bound after adding a stack, so a refused input
 * may leave one stack's frames (READ_MAX_FRAMES) more. */
#define READ_FRAMES_SLACK 4096

static const struct read_limits fuzz_limits = {
	.max_bytes = 4u << 20,
	.max_nodes = 50000,
};

/* Reread bound: a writer's output never needs more nodes than its input. */
static const struct read_limits reread_limits = {
	.max_bytes = SIZE_MAX,
	.max_nodes = SIZE_MAX,
};

static char *folded_of(const struct profile *p, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	FUZZ_CHECK(f);
	FUZZ_CHECK(folded__write(p, false, f) == 0);
	FUZZ_CHECK(fclose(f) == 0);
	return text;
}

/* Reads buf into a new profile that must be accepted. */
static struct profile *reread(const void *buf, size_t len)
{
	struct profile *p = profile__new();
	struct read_info info;
	int err;

	FUZZ_CHECK(p);
	err = profile__read(p, buf, len, &reread_limits, &info);
	if (err) {
		fprintf(stderr, "reread refused (%d): %s\n", err, info.why);
		FUZZ_CHECK(err == 0);
	}
	return p;
}

static void check_same(const struct profile *orig, const char *text, size_t len,
		       const struct profile *again)
{
	size_t len2;
	char *text2 = folded_of(again, &len2);

	FUZZ_CHECK(profile__total(again) == profile__total(orig));
	if (len2 != len || memcmp(text, text2, len)) {
		fprintf(stderr, "folded text changed:\n--- first\n%.*s--- again\n%.*s",
			(int)(len < 2000 ? len : 2000), text,
			(int)(len2 < 2000 ? len2 : 2000), text2);
		FUZZ_CHECK(!"folded text survives");
	}
	free(text2);
}

static void check_profile_read(const uint8_t *data, size_t size)
{
	struct profile *p = profile__new(), *again;
	struct pprof_meta meta = { .period_ns = 10000000 };
	struct read_info info;
	uint8_t *pb = NULL;
	size_t len, pb_len;
	char *text;
	FILE *null;
	int err;

	FUZZ_CHECK(p);
	err = profile__read(p, data, size, &fuzz_limits, &info);
	FUZZ_CHECK(profile__nodes(p) <= fuzz_limits.max_nodes + READ_FRAMES_SLACK);
	if (err) {
		FUZZ_CHECK(err == -EINVAL || err == -EFBIG || err == -E2BIG);
		FUZZ_CHECK(info.why[0] && memchr(info.why, '\0', sizeof(info.why)));
		profile__free(p);
		return;
	}
	FUZZ_CHECK(memchr(info.type, '\0', sizeof(info.type)) &&
		   memchr(info.unit, '\0', sizeof(info.unit)));

	text = folded_of(p, &len);
	again = reread(text, len);
	check_same(p, text, len, again);
	profile__free(again);

	FUZZ_CHECK(pprof__encode(p, &meta, false, &pb, &pb_len) == 0);
	again = reread(pb, pb_len);
	if (utf8__valid(text)) {
		check_same(p, text, len, again);
	} else {
		/* pprof's strings are UTF-8: bad bytes come back as '?', and
		 * names that differed only there as one */
		char *san = utf8__sanitized(text), *want;
		struct profile *fixed;
		size_t want_len;

		FUZZ_CHECK(san);
		fixed = reread(san, strlen(san));
		want = folded_of(fixed, &want_len);
		check_same(fixed, want, want_len, again);
		free(want);
		free(san);
		profile__free(fixed);
	}
	profile__free(again);
	free(pb);

	if (profile__nodes(p) < 2000) {
		null = fopen("/dev/null", "w");
		FUZZ_CHECK(null);
		FUZZ_CHECK(html__write(p, NULL, null) == 0);
		fclose(null);
	}
	free(text);
	profile__free(p);
}

#endif
