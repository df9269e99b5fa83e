/* SPDX-License-Identifier: BSD-2-Clause */
/* Pulled profiles (agent_pull.c) through the real HTTP server: bad
 * requests answered at once, the bound on pulls at once, and a pull's
 * window driven by drains (its samples selected by label), answered with a
 * pprof that reads back. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_pull.h"
#include "core/http_server.h"
#include "profile/profile.h"
#include "unit_helpers.h"

#define S 1000000000ull

struct get {
	uint16_t port;
	char path[256];
	long status;
	char *body;
	size_t len;
	pthread_t t;
};

static void *get_thread(void *arg)
{
	struct get *g = arg;
	FILE *f = open_memstream(&g->body, &g->len);
	CURL *c = curl_easy_init();
	char url[320];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", g->port, g->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)UNIT_WAIT_S);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g->status);
	curl_easy_cleanup(c);
	fclose(f);
	return NULL;
}

static void get_start(struct get *g, struct http_server *s, const char *path)
{
	memset(g, 0, sizeof(*g));
	g->port = http_server__port(s);
	snprintf(g->path, sizeof(g->path), "%s", path);
	cr_assert_eq(pthread_create(&g->t, NULL, get_thread, g), 0);
}

static long get_end(struct get *g)
{
	pthread_join(g->t, NULL);
	return g->status;
}

static long get(struct http_server *s, const char *path, struct get *g)
{
	get_start(g, s, path);
	return get_end(g);
}

static void on_profile(void *ctx, const struct http_arg *args, size_t n, struct http_deferred *d)
{
	pulls__request(ctx, args, n, d);
}

static void add(struct pulls *p, const char *pod, uint64_t count)
{
	const char *names[] = { "pod", "service_name" }, *values[] = { pod, "web" };
	struct frame f[] = { { .kind = FRAME_ROOT, .name = "web" },
			     { .kind = FRAME_USER, .name = "serve" } };
	struct labels l = { 0 };

	cr_assert_eq(labels__set_pairs(&l, names, values, 2), 0);
	pulls__add(p, &l, f, 2, count);
	labels__release(&l);
}

TestSuite(agent_pull, .init = (void (*)(void))curl_global_init, .timeout = 4 * UNIT_WAIT_S);

Test(agent_pull, window_by_drains_selected_by_labels)
{
	struct pulls *p = pulls__new(1, 60, 100);
	struct http_handlers h = { .profile = on_profile };
	struct http_server *s = http_server__start("127.0.0.1:0", &h, p);
	struct get g, busy, bad;
	struct profile *got = profile__new();
	struct read_info info = { 0 };
	struct read_limits lim = { .max_bytes = 1 << 20, .max_nodes = 1000 };
	uint64_t t0 = 1000 * S;

	cr_assert_not_null(s);
	cr_assert_eq(get(s, "/debug/pprof/profile?seconds=0", &bad), 400);
	free(bad.body);
	cr_assert_eq(get(s, "/debug/pprof/profile?seconds=61", &bad), 400);
	cr_assert(strstr(bad.body, "--pull-max-seconds"));
	free(bad.body);
	cr_assert_eq(get(s, "/debug/pprof/profile?seconds=1&bad-name=x", &bad), 400);
	free(bad.body);

	get_start(&g, s, "/debug/pprof/profile?seconds=2&pod=web-a");
	POLL_UNTIL(pulls__drain_at(p) == 0);
	add(p, "web-a", 100);           /* before the window: not counted */
	pulls__drained(p, t0);          /* the window starts */
	cr_assert_eq(get(s, "/debug/pprof/profile?seconds=1", &busy), 429);
	free(busy.body);
	add(p, "web-a", 5);
	add(p, "web-b", 3);             /* not selected */
	cr_assert_eq(pulls__drain_at(p), t0 + 2 * S);  /* due when its 2 s have run */
	pulls__drained(p, t0 + S);      /* still running */
	add(p, "web-a", 2);
	cr_assert_eq(pulls__drain_at(p), t0 + 2 * S);
	pulls__drained(p, t0 + 2 * S);
	cr_assert_eq(get_end(&g), 200);
	cr_assert_eq(profile__read(got, (uint8_t *)g.body, g.len, &lim, &info), 0, "%s", info.why);
	cr_assert_eq(profile__total(got), 7);
	cr_assert_eq(info.duration_nanos, 2 * (int64_t)S);
	free(g.body);

	/* at the stop, a running pull gets what it holds */
	get_start(&g, s, "/debug/pprof/profile?seconds=30");
	POLL_UNTIL(pulls__drain_at(p) == 0);
	pulls__finish_all(p);
	cr_assert_eq(get_end(&g), 200);
	free(g.body);
	http_server__stop(s);
	pulls__free(p);
	profile__free(got);
}
