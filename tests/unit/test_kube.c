// SPDX-License-Identifier: BSD-2-Clause
/* The pod watcher against tests/kube/fake_apiserver.py, a local server
 * that speaks the Kubernetes list/watch protocol: the real kube__start
 * thread, real HTTP, the server's request log as the witness. Conditions
 * are polled (POLL_UNTIL: up to UNIT_WAIT_S each); nothing asserts on
 * elapsed time. python3 is a test dependency (the Makefile's TEST_DEPS):
 * without it these tests fail, they are not skipped. An
 * alarm() per test only turns a hang into a failure (Criterion's own
 * .timeout leaks in its runner under ASan when tests run in parallel). */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "metadata/kube.h"
#include "metadata/pods.h"
#include "unit_helpers.h"

#define SERVER_SCRIPT "tests/kube/fake_apiserver.py"
#define NODE "node-a"
#define CID_WEB "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_OTHER "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define CID_NEW "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define CID_MISSED "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define CID_LATE "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
static pid_t server_pid;
static char dir[64], token_path[128], url[64];
static struct pods *pods;
static struct kube *kube;

/* A hung test dies of SIGALRM, which Criterion reports as a crash. */
static void hang_guard(unsigned seconds)
{
	alarm(seconds);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static bool python3_on_path(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/python3", (int)n, p);
		if (access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

static const char *pod_json(char *buf, size_t size, const char *uid, const char *name,
			    const char *node, const char *cid, const char *label)
{
	snprintf(buf, size,
		 "{\"metadata\":{\"uid\":\"%s\",\"name\":\"%s\",\"namespace\":\"default\","
		 "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"nodeName\":\"%s\","
		 "\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Running\","
		 "\"containerStatuses\":[{\"name\":\"main\",\"containerID\":\"containerd://%s\"}]}}",
		 uid, name, label, node, cid);
	return buf;
}

/* Starts the server with two pods, one on this node and one elsewhere. */
static void server_start(void)
{
	char scenario[160], web[1024], other[1024], text[2300], line[64];
	int fds[2];
	size_t n = 0;
	uint64_t end;

	hang_guard(3 * UNIT_WAIT_S);
	cr_assert(python3_on_path(), "python3 is not on PATH: the pod watcher tests run "
		  "tests/kube/fake_apiserver.py with it (apt-get install python3, or make deps)");
	cr_assert_eq(access(SERVER_SCRIPT, R_OK), 0,
		     "%s not found: run the unit tests from the repository root", SERVER_SCRIPT);
	strcpy(dir, "/tmp/kiln-kube-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(token_path, sizeof(token_path), "%s/token", dir);
	write_text(token_path, "token-1\n");   /* the trailing newline is trimmed */
	snprintf(scenario, sizeof(scenario), "%s/scenario.json", dir);
	snprintf(text, sizeof(text), "{\"resourceVersion\":1000,\"pods\":[%s,%s]}",
		 pod_json(web, sizeof(web), "uid-web", "web", NODE, CID_WEB, "web"),
		 pod_json(other, sizeof(other), "uid-other", "other", "node-b", CID_OTHER, "other"));
	write_text(scenario, text);

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	server_pid = fork();
	cr_assert_geq(server_pid, 0);
	if (server_pid == 0) {
		/* A test killed by its hang guard takes the server along. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(fds[1], 1);
		execlp("python3", "python3", SERVER_SCRIPT, "--node", NODE, "--token", "token-1",
		       "--scenario", scenario, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	end = unit_deadline();
	while (n < sizeof(line) - 1 && !memchr(line, '\n', n)) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		ssize_t r;

		cr_assert_lt(monotonic_ns(), end, "fake API server did not start");
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = read(fds[0], line + n, sizeof(line) - 1 - n);
		cr_assert_gt(r, 0, "fake API server exited before listening");
		n += (size_t)r;
	}
	line[n] = '\0';
	close(fds[0]);
	{
		int port = 0;

		cr_assert_eq(sscanf(line, "PORT %d", &port), 1, "server said '%s'", line);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	}
	pods = pods__new(1000);
	cr_assert_not_null(pods);
}

static void server_stop(void)
{
	kube__stop(kube);
	kube = NULL;
	pods__free(pods);
	pods = NULL;
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		waitpid(server_pid, NULL, 0);
		server_pid = 0;
	}
	if (dir[0]) {
		char path[160];

		unlink(token_path);
		snprintf(path, sizeof(path), "%s/scenario.json", dir);
		unlink(path);
		rmdir(dir);
	}
}

/* The local server speaks plain http: the token goes in clear on purpose. */
static void kube_start_paged(unsigned page_size)
{
	struct kube_opts opts = { .api_url = url, .token_file = token_path, .node_name = NODE,
				  .allow_insecure = true, .page_size = page_size };

	kube = kube__start(&opts, pods);
	cr_assert_not_null(kube, "kube__start: %s", strerror(errno));
}

static void kube_start(void)
{
	kube_start_paged(0);
}

struct body {
	char *buf;
	size_t len;
};

static size_t collect(char *data, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	char *nb = realloc(b->buf, b->len + size * nmemb + 1);

	if (!nb)
		return 0;
	memcpy(nb + b->len, data, size * nmemb);
	b->buf = nb;
	b->len += size * nmemb;
	b->buf[b->len] = '\0';
	return size * nmemb;
}

/* A request to the server's test endpoints; the JSON answer. */
static json_t *server_call(const char *path, const char *post)
{
	CURL *c = curl_easy_init();
	struct body b = { 0 };
	char full[256];
	long status = 0;
	json_t *j;
	CURLcode rc;

	snprintf(full, sizeof(full), "%s%s", url, path);
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)UNIT_WAIT_S);   /* a hang guard */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (post)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	cr_assert_eq(rc, CURLE_OK, "%s: %s", path, curl_easy_strerror(rc));
	cr_assert_eq(status, 200, "%s: HTTP %ld: %s", path, status, b.buf ? b.buf : "");
	j = json_loadb(b.buf, b.len, 0, NULL);
	cr_assert_not_null(j, "%s: not JSON", path);
	free(b.buf);
	return j;
}

static void control(const char *ops)
{
	json_decref(server_call("/_control", ops));
}

static int live_watches(void)
{
	json_t *st = server_call("/_state", NULL);
	int n = (int)json_integer_value(json_object_get(st, "watches"));

	json_decref(st);
	return n;
}

/* Requests in the server's log matching kind/status/token/resourceVersion
 * (NULL/0: any). */
static size_t requests(const char *kind, long status, const char *token, const char *rv)
{
	json_t *log = server_call("/_log", NULL), *r;
	size_t i, n = 0;

	json_array_foreach(log, i, r) {
		const char *q_rv = json_string_value(json_object_get(json_object_get(r, "query"),
								     "resourceVersion"));
		const char *tok = json_string_value(json_object_get(r, "token"));

		if (kind && strcmp(kind, json_string_value(json_object_get(r, "kind"))))
			continue;
		if (status && status != json_integer_value(json_object_get(r, "status")))
			continue;
		if (token && (!tok || strcmp(token, tok)))
			continue;
		if (rv && (!q_rv || strcmp(rv, q_rv)))
			continue;
		n++;
	}
	json_decref(log);
	return n;
}

static struct kube_stats stats(void)
{
	struct kube_stats s;

	kube__stats(kube, &s);
	return s;
}

static bool has_container(const char *cid)
{
	struct pod_info info;

	if (!pods__lookup(pods, cid, NULL, &info))
		return false;
	pod_info__release(&info);
	return true;
}

static bool label_is(const char *cid, const char *value)
{
	struct pod_info info;
	bool ok;

	if (!pods__lookup(pods, cid, NULL, &info))
		return false;
	ok = pod_info__label(&info, "app") && !strcmp(pod_info__label(&info, "app"), value);
	pod_info__release(&info);
	return ok;
}

/* Sends one pod op ("add", "modify") to the server. */
static void pod_op(const char *op, const char *uid, const char *name, const char *node,
		   const char *cid, const char *label, bool silent)
{
	char pod[1024], text[1200];

	snprintf(text, sizeof(text), "{\"op\":\"%s\",\"silent\":%s,\"pod\":%s}", op,
		 silent ? "true" : "false", pod_json(pod, sizeof(pod), uid, name, node, cid, label));
	control(text);
}

static void synced_and_watching(void)
{
	kube_start();
	POLL_UNTIL(stats().synced, "the first list never completed");
	POLL_UNTIL(live_watches() >= 1, "no watch after the list");
}

TestSuite(kube, .init = server_start, .fini = server_stop);

Test(kube, list_then_watch_keeps_the_index_current)
{
	json_t *log, *first, *q;
	struct kube_stats s;

	synced_and_watching();
	cr_assert(has_container(CID_WEB));
	cr_assert_not(has_container(CID_OTHER), "a pod of another node was indexed");
	cr_assert_eq(pods__count(pods), 1);

	/* The list, then a watch from the list's resourceVersion. */
	log = server_call("/_log", NULL);
	first = json_array_get(log, 0);
	q = json_object_get(first, "query");
	cr_assert_str_eq(json_string_value(json_object_get(first, "kind")), "list");
	cr_assert_str_eq(json_string_value(json_object_get(first, "token")), "token-1");
	cr_assert_str_eq(json_string_value(json_object_get(q, "fieldSelector")), "spec.nodeName=" NODE);
	cr_assert_str_eq(json_string_value(json_object_get(q, "resourceVersion")), "0");
	q = json_object_get(json_array_get(log, 1), "query");
	cr_assert_str_eq(json_string_value(json_object_get(q, "watch")), "1");
	cr_assert_str_eq(json_string_value(json_object_get(q, "resourceVersion")), "1002");
	cr_assert_str_eq(json_string_value(json_object_get(q, "allowWatchBookmarks")), "true");
	cr_assert_str_eq(json_string_value(json_object_get(q, "timeoutSeconds")), "300");
	cr_assert_str_eq(json_string_value(json_object_get(q, "fieldSelector")), "spec.nodeName=" NODE);
	json_decref(log);

	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "ADDED pod never indexed");
	pod_op("modify", "uid-web", "web", NODE, CID_WEB, "web-v2", false);
	POLL_UNTIL(label_is(CID_WEB, "web-v2"), "MODIFIED label never seen");
	control("{\"op\":\"delete\",\"uid\":\"uid-new\"}");
	POLL_UNTIL(!has_container(CID_NEW), "DELETED pod still indexed");
	/* Another node's pod is never sent; the later pod proves the stream
	 * got past it. */
	pod_op("add", "uid-far", "far", "node-b", CID_MISSED, "far", false);
	pod_op("add", "uid-late", "late", NODE, CID_LATE, "late", false);
	POLL_UNTIL(has_container(CID_LATE), "ADDED pod never indexed");
	cr_assert_not(has_container(CID_MISSED));

	s = stats();
	cr_assert_eq(s.events, 4);
	cr_assert_eq(s.lists, 1);
	cr_assert_eq(s.relists, 0);
	cr_assert_eq(s.errors, 0);
	cr_assert_eq(s.bad_objects, 0);
	cr_assert_eq(requests("list", 0, NULL, NULL), 1);
}

/* Pods on this node besides uid-web, added before the watcher starts. */
static void add_silent_pods(int n)
{
	for (int i = 0; i < n; i++) {
		char uid[32], name[32], cid[65];

		snprintf(uid, sizeof(uid), "uid-p%d", i);
		snprintf(name, sizeof(name), "p%02d", i);
		snprintf(cid, sizeof(cid), "%064d", i + 1);
		pod_op("add", uid, name, NODE, cid, "p", true);
	}
}

/* Requests of the list whose query has (or lacks) a continue token. */
static size_t list_pages(long status, bool with_continue)
{
	json_t *log = server_call("/_log", NULL), *r;
	size_t i, n = 0;

	json_array_foreach(log, i, r) {
		json_t *q = json_object_get(r, "query");

		if (strcmp(json_string_value(json_object_get(r, "kind")), "list") ||
		    (status && status != json_integer_value(json_object_get(r, "status"))) ||
		    (json_object_get(q, "continue") != NULL) != with_continue)
			continue;
		cr_assert_str_eq(json_string_value(json_object_get(q, "limit")), "2");
		/* A continued page never names a resourceVersion (the API
		 * refuses both); the first asks the cache (0). */
		if (with_continue)
			cr_assert_null(json_object_get(q, "resourceVersion"));
		else
			cr_assert_str_eq(json_string_value(json_object_get(q, "resourceVersion")), "0");
		n++;
	}
	json_decref(log);
	return n;
}

Test(kube, list_in_pages)
{
	struct kube_stats s;

	add_silent_pods(6);     /* 7 on this node: pages of 2, 2, 2, 1 */
	kube_start_paged(2);
	POLL_UNTIL(stats().synced, "the paged list never completed");
	POLL_UNTIL(live_watches() >= 1, "no watch after the paged list");
	cr_assert_eq(pods__count(pods), 7);
	cr_assert(pods__synced(pods));
	cr_assert(has_container(CID_WEB));
	s = stats();
	cr_assert_eq(s.list_pages, 4);
	cr_assert_eq(s.lists, 1);
	cr_assert_eq(s.list_restarts, 0);
	cr_assert_eq(list_pages(200, false), 1);
	cr_assert_eq(list_pages(200, true), 3);
	/* The watch starts at the list's resourceVersion (every page's). */
	cr_assert_eq(requests("watch", 200, NULL, "1008"), 1);
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "watch after a paged list does not work");
}

/* 410 Gone on a continued page (the server no longer keeps the list's
 * snapshot): the list starts over from the first page, at once. */
Test(kube, expired_continue_token_restarts_the_list)
{
	struct kube_stats s;

	add_silent_pods(4);     /* 5 on this node: pages of 2, 2, 1 */
	control("{\"op\":\"fail\",\"kind\":\"continue\",\"status\":410,\"count\":1}");
	kube_start_paged(2);
	POLL_UNTIL(stats().synced, "the list never completed after its continue token expired");
	s = stats();
	cr_assert_eq(s.list_restarts, 1);
	cr_assert_eq(s.lists, 1);
	cr_assert_eq(s.errors, 0, "a restart is not a failure");
	cr_assert_eq(pods__count(pods), 5);
	cr_assert_eq(list_pages(410, true), 1);
	cr_assert_eq(list_pages(200, false), 2, "the list did not start over from its first page");
	cr_assert_eq(list_pages(200, true), 2);
}

/* A token over plain http:// is refused unless allowed. */
Test(kube, token_over_http_is_refused)
{
	struct kube_opts opts = { .api_url = url, .token_file = token_path, .node_name = NODE };

	errno = 0;
	cr_assert_null(kube__start(&opts, pods));
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(requests(NULL, 0, NULL, NULL), 0, "a request was sent");
}

Test(kube, watch_end_resumes_from_the_bookmark)
{
	synced_and_watching();
	control("{\"op\":\"bookmark\",\"rv\":5000}");
	POLL_UNTIL(stats().bookmarks >= 1, "BOOKMARK never counted");
	cr_assert_eq(requests("watch", 0, NULL, "5000"), 0);
	control("{\"op\":\"end_watches\"}");
	POLL_UNTIL(requests("watch", 200, "token-1", "5000") == 1,
		   "no watch from the bookmark's resourceVersion 5000");
	cr_assert_eq(requests("list", 0, NULL, NULL), 1, "a normal watch end must not relist");
	cr_assert_eq(stats().relists, 0);
	cr_assert_eq(stats().errors, 0);
	/* The resumed watch works. */
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "ADDED pod never indexed after the resumed watch");
}

Test(kube, http_410_relists)
{
	synced_and_watching();
	/* A change the watch never reports, then the history is compacted:
	 * only a new list can bring the pod. */
	pod_op("add", "uid-missed", "missed", NODE, CID_MISSED, "m", true);
	control("{\"op\":\"expire\",\"mode\":\"http\"}");
	POLL_UNTIL(has_container(CID_MISSED), "no relist after HTTP 410");
	cr_assert_geq(requests("watch", 410, NULL, NULL), 1);
	cr_assert_eq(requests("list", 200, NULL, "0"), 2);
	cr_assert_eq(stats().relists, 1);
	cr_assert_eq(pods__count(pods), 2);
	POLL_UNTIL(live_watches() >= 1, "no watch after the relist");
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "watch after the relist does not work");
}

Test(kube, error_event_410_relists)
{
	synced_and_watching();
	pod_op("add", "uid-missed", "missed", NODE, CID_MISSED, "m", true);
	control("{\"op\":\"expire\",\"mode\":\"event\"}");
	POLL_UNTIL(has_container(CID_MISSED), "no relist after an ERROR 410 event");
	cr_assert_eq(requests("watch", 410, NULL, NULL), 0);
	cr_assert_eq(requests("list", 200, NULL, "0"), 2);
	cr_assert_eq(stats().relists, 1);
	cr_assert_eq(stats().errors, 0, "a 410 is not an error");
}

Test(kube, unauthorized_rereads_the_rotated_token)
{
	struct kube_stats s;

	synced_and_watching();
	s = stats();
	cr_assert_eq(s.token_reads, 1);
	write_text(token_path, "token-2");
	control("[{\"op\":\"token\",\"token\":\"token-2\"},{\"op\":\"end_watches\"}]");
	POLL_UNTIL(requests(NULL, 200, "token-2", NULL) >= 1, "the rotated token was never used");
	cr_assert_geq(requests(NULL, 401, "token-1", NULL), 1);
	s = stats();
	cr_assert_geq(s.unauthorized, 1);
	cr_assert_geq(s.token_reads, 2);
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "watch with the new token does not work");
}

Test(kube, server_errors_back_off_and_recover)
{
	synced_and_watching();
	control("[{\"op\":\"fail\",\"kind\":\"watch\",\"status\":500,\"count\":2},"
		"{\"op\":\"end_watches\"}]");
	POLL_UNTIL(requests("watch", 200, NULL, NULL) >= 2, "no watch after two 500s");
	cr_assert_eq(requests("watch", 500, NULL, NULL), 2);
	cr_assert_eq(stats().errors, 2);
	cr_assert_eq(requests("list", 0, NULL, NULL), 1, "a 500 on a watch resumes, no relist");
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "watch after recovery does not work");
}

Test(kube, failed_first_list_is_retried)
{
	control("{\"op\":\"fail\",\"kind\":\"list\",\"status\":503,\"count\":1}");
	kube_start();
	POLL_UNTIL(stats().synced, "the list was not retried");
	cr_assert_eq(requests("list", 503, NULL, NULL), 1);
	cr_assert_eq(requests("list", 200, NULL, NULL), 1);
	cr_assert_eq(stats().errors, 1);
	cr_assert(has_container(CID_WEB));
}

Test(kube, malformed_and_truncated_lines)
{
	struct kube_stats s;
	uint64_t relists;

	synced_and_watching();
	/* A line that is not JSON: an event was lost, so list again. */
	pod_op("add", "uid-missed", "missed", NODE, CID_MISSED, "m", true);
	control("{\"op\":\"raw\",\"data\":\"{\\\"type\\\":\\\"ADDED\\\",\\\"object\\\":{\\n\"}");
	POLL_UNTIL(has_container(CID_MISSED), "no relist after a line that is not JSON");
	s = stats();
	cr_assert_geq(s.bad_objects, 1);
	cr_assert_eq(s.relists, 1);

	/* A well-formed event with an unusable pod: counted, the watch goes on. */
	POLL_UNTIL(live_watches() >= 1, "no watch after the relist");
	control("{\"op\":\"raw\",\"data\":\"{\\\"type\\\":\\\"ADDED\\\",\\\"object\\\":{\\\"metadata\\\":{}}}\\n"
		"{\\\"type\\\":\\\"SURPRISE\\\",\\\"object\\\":{}}\\n\"}");
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "the watch stopped after an unusable pod");
	s = stats();
	cr_assert_eq(s.bad_objects, 3);
	cr_assert_eq(s.relists, 1);

	/* The stream ends inside a line: list again. */
	relists = s.relists;
	control("[{\"op\":\"raw\",\"data\":\"{\\\"type\\\":\\\"DELE\"},{\"op\":\"end_watches\"}]");
	POLL_UNTIL(stats().relists > relists, "no relist after a truncated stream");
	POLL_UNTIL(stats().synced && live_watches() >= 1, "no watch after the relist");
	cr_assert(has_container(CID_NEW));

	/* The connection drops mid-stream: watch again, nothing lost. */
	control("{\"op\":\"drop_watches\"}");
	pod_op("add", "uid-late", "late", NODE, CID_LATE, "late", false);
	POLL_UNTIL(has_container(CID_LATE), "no recovery after a dropped connection");
}

Test(kube, over_long_line_is_bounded)
{
	/* 17 MiB without a newline, over the 16 MiB line bound. */
	size_t n = 17u << 20;
	char *text = malloc(n + 64);
	uint64_t relists;

	hang_guard(4 * UNIT_WAIT_S);
	synced_and_watching();
	relists = stats().relists;
	strcpy(text, "{\"op\":\"raw\",\"data\":\"");
	memset(text + strlen(text), 'x', n);
	strcpy(text + strlen("{\"op\":\"raw\",\"data\":\"") + n, "\"}");
	control(text);
	free(text);
	POLL_UNTIL(stats().relists > relists, "no relist after an over-long line");
	cr_assert_geq(stats().bad_objects, 1);
	POLL_UNTIL(live_watches() >= 1, "no watch after the relist");
	pod_op("add", "uid-new", "batch", NODE, CID_NEW, "batch", false);
	POLL_UNTIL(has_container(CID_NEW), "no recovery after an over-long line");
}

/* kube__stop during a watch that would otherwise idle for 300 s: the
 * hang guard, far below that, fails the test if the stop waits for the
 * server. */
Test(kube, stop_interrupts_an_idle_watch)
{
	synced_and_watching();
	hang_guard(2 * UNIT_WAIT_S);
	kube__stop(kube);
	kube = NULL;
	POLL_UNTIL(live_watches() == 0, "the watch connection stayed open after kube__stop");
}

Test(kube, stop_interrupts_a_backoff)
{
	control("{\"op\":\"fail\",\"kind\":\"list\",\"status\":500,\"count\":1000}");
	kube_start();
	POLL_UNTIL(stats().errors >= 3, "no retries of a failing list");
	hang_guard(2 * UNIT_WAIT_S);
	kube__stop(kube);
	kube = NULL;
}

/* ---- configuration, no server ---- */

static char *api_url(const char *url_opt)
{
	struct kube_opts opts = { .api_url = url_opt, .node_name = NODE };

	return kube__api_url(&opts);
}

Test(kube_config, api_url_from_the_environment)
{
	char *u;

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	u = api_url(NULL);
	cr_assert_str_eq(u, "https://10.96.0.1:443");
	free(u);
	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	u = api_url(NULL);
	cr_assert_str_eq(u, "https://[fd00:10:96::1]:6443");
	free(u);
	setenv("KUBERNETES_SERVICE_PORT", "6443; rm", 1);
	cr_assert_null(api_url(NULL));
	cr_assert_eq(errno, EINVAL);
	unsetenv("KUBERNETES_SERVICE_HOST");
	cr_assert_null(api_url(NULL));
	cr_assert_eq(errno, ENOENT);
	u = api_url("http://127.0.0.1:8001//");
	cr_assert_str_eq(u, "http://127.0.0.1:8001");
	free(u);
	cr_assert_null(api_url("ftp://example"));
	cr_assert_eq(errno, EINVAL);
}

Test(kube_config, start_names_what_is_missing)
{
	char d[] = "/tmp/kiln-kubecfg-XXXXXX", path[64];
	struct pods *p = pods__new(10);
	struct kube_opts opts = { .api_url = "http://127.0.0.1:1", .allow_insecure = true };

	hang_guard(2 * UNIT_WAIT_S);
	cr_assert_not_null(mkdtemp(d));
	cr_assert_null(kube__start(&opts, p));
	cr_assert_eq(errno, EINVAL, "no node name");
	opts.node_name = NODE;
	opts.token_file = "/nonexistent/kiln/token";
	cr_assert_null(kube__start(&opts, p));
	cr_assert_eq(errno, ENOENT);

	snprintf(path, sizeof(path), "%s/token", d);
	opts.token_file = path;
	write_text(path, " \n");
	cr_assert_null(kube__start(&opts, p));
	cr_assert_eq(errno, ENODATA, "empty token");
	write_text(path, "abc\r\nX-Injected: 1");
	cr_assert_null(kube__start(&opts, p));
	cr_assert_eq(errno, EBADMSG, "a token with a line break");

	write_text(path, "token");
	opts.ca_file = "/nonexistent/kiln/ca.crt";
	cr_assert_null(kube__start(&opts, p));
	cr_assert_eq(errno, ENOENT);

	unsetenv("KUBERNETES_SERVICE_HOST");
	opts = (struct kube_opts){ .node_name = NODE };
	cr_assert_null(kube__start(&opts, p));
	cr_assert_eq(errno, ENOENT, "not in a cluster");

	/* A server that is not there: start succeeds, the thread retries,
	 * stop is prompt. */
	opts = (struct kube_opts){ .api_url = "http://127.0.0.1:1", .token_file = path,
				   .node_name = NODE, .allow_insecure = true };
	{
		struct kube *k = kube__start(&opts, p);
		struct kube_stats s;

		cr_assert_not_null(k);
		POLL_UNTIL((kube__stats(k, &s), s.errors >= 1),
			   "the refused connection to be counted as an error");
		cr_assert_not(s.synced);
		kube__stop(k);
	}
	kube__stop(NULL);
	unlink(path);
	rmdir(d);
	pods__free(p);
}
