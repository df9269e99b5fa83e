// SPDX-License-Identifier: BSD-2-Clause
/* The pod watcher's event stream through kube__watch_body: what reaches
 * the index, what ends the watch, and that piece sizes change nothing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "metadata/kube.h"

#define POD(uid, name) \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"uid\":\"" uid "\"," \
	"\"resourceVersion\":\"5\"},\"status\":{\"containerStatuses\":[{\"name\":\"c\"," \
	"\"containerID\":\"containerd://" \
	"abababababababababababababababababababababababababababababababab\"}]}}"
#define UID1 "11111111-2222-3333-4444-555555555555"
#define UID2 "66666666-7777-8888-9999-aaaaaaaaaaaa"

static const char stream[] =
	"{\"type\":\"ADDED\",\"object\":" POD(UID1, "one") "}\n"
	"{\"type\":\"ADDED\",\"object\":" POD(UID2, "two") "}\r\n"
	"\n"
	"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n"
	"{\"type\":\"DELETED\",\"object\":" POD(UID1, "one") "}\n";

Test(kube_watch, events_reach_the_index_in_any_piece_size)
{
	static const size_t chunks[] = { 0, 1, 2, 7, 100, 4096 };

	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct pods *p = pods__new(16);
		struct kube_stats st;
		struct pod_info info;

		cr_assert_eq(kube__watch_body(p, stream, strlen(stream), chunks[i], &st), 0,
			     "chunk %zu", chunks[i]);
		cr_assert_eq(st.events, 3);
		cr_assert_eq(st.bookmarks, 1);
		cr_assert_eq(st.bad_objects, 0);
		cr_assert_eq(pods__count(p), 1);
		cr_assert(pods__lookup(p, NULL, UID2, &info));
		cr_assert_str_eq(info.name, "two");
		pod_info__release(&info);
		cr_assert_not(pods__lookup(p, NULL, UID1, &info));
		pods__free(p);
	}
}

Test(kube_watch, what_ends_a_watch)
{
	static const char gone[] =
		"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
		"\"reason\":\"Expired\",\"message\":\"too old resource version\"}}\n"
		"{\"type\":\"ADDED\",\"object\":" POD(UID1, "one") "}\n";
	static const char failure[] =
		"{\"type\":\"ERROR\",\"object\":{\"code\":500,\"message\":\"boom\"}}\n";
	static const char not_json[] = "{\"type\":\"ADDED\",\"object\":{\n";
	static const char not_event[] = "{\"type\":\"ADDED\"}\n";
	static const char cut[] = "{\"type\":\"ADDED\",\"object\":" POD(UID1, "one") "}";
	struct pods *p = pods__new(16);
	struct kube_stats st;

	/* 410: list again at once; nothing after it is applied. */
	cr_assert_eq(kube__watch_body(p, gone, strlen(gone), 0, &st), -ESTALE);
	cr_assert_eq(st.events, 0);
	cr_assert_eq(pods__count(p), 0);
	cr_assert_eq(kube__watch_body(p, failure, strlen(failure), 0, NULL), -EBADMSG);
	cr_assert_eq(kube__watch_body(p, not_json, strlen(not_json), 3, &st), -EBADMSG);
	cr_assert_eq(st.bad_objects, 1);
	cr_assert_eq(kube__watch_body(p, not_event, strlen(not_event), 0, &st), -EBADMSG);
	cr_assert_eq(st.bad_objects, 1);
	/* A stream that ends inside a line has lost that event. */
	cr_assert_eq(kube__watch_body(p, cut, strlen(cut), 0, &st), -EBADMSG);
	cr_assert_eq(pods__count(p), 0);
	/* An unknown type is skipped and counted; the watch goes on. */
	cr_assert_eq(kube__watch_body(p, "{\"type\":\"RESYNC\",\"object\":{}}\n", 30, 0, &st), 0);
	cr_assert_eq(st.bad_objects, 1);
	pods__free(p);
}
