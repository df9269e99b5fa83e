// SPDX-License-Identifier: BSD-2-Clause
/* The pod watcher's event stream: kube__watch_body feeds a watch response
 * body, one JSON event per line, to the pod index, in pieces as libcurl
 * hands them over. The first input byte picks the piece size. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "metadata/kube.h"

FUZZ_DEFAULT_INIT

#define MAX_PODS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pods *p = pods__new(MAX_PODS);
	struct kube_stats st, st2;
	size_t chunk = 0, lines = 0;
	int ret, ret2;

	FUZZ_CHECK(p);
	if (size) {
		chunk = data[0];        /* 0: the whole body in one piece */
		data++;
		size--;
	}
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	ret = kube__watch_body(p, (const char *)data, size, chunk, &st);
	FUZZ_CHECK(ret == 0 || ret == -ESTALE || ret == -EBADMSG);
	FUZZ_CHECK(pods__count(p) <= MAX_PODS);
	FUZZ_CHECK(st.events + st.bookmarks <= lines);
	FUZZ_CHECK(!st.lists && !st.watches && !st.synced);
	/* How the body is cut into pieces changes nothing. */
	pods__free(p);
	p = pods__new(MAX_PODS);
	FUZZ_CHECK(p);
	ret2 = kube__watch_body(p, (const char *)data, size, 0, &st2);
	FUZZ_CHECK(ret2 == ret);
	FUZZ_CHECK(st2.events == st.events && st2.bookmarks == st.bookmarks &&
		   st2.bad_objects == st.bad_objects);
	pods__free(p);
	return 0;
}
