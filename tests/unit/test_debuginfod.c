// SPDX-License-Identifier: BSD-2-Clause
/* The debuginfod lookups against real sources libdebuginfod reads: a
 * file:// server (DIR/buildid/<id>/debuginfo, the debuginfod URL scheme)
 * holding the debug file of a program stripped here, and a local TCP
 * listener that takes the request and never answers. Each test has its
 * own libdebuginfod cache. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "symbolize/debuginfod.h"
#include "symbolize/elf_symtab.h"
#include "unit_helpers.h"

#define SEC 1000000000ull

static char dir[64];
static char id[129];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void teardown(void)
{
	if (dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	unsetenv("DEBUGINFOD_URLS");
}

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_lt(n, (int)sizeof(cmd));
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* DIR/prog (stripped: no symbols, no debuglink) and its debug file under
 * DIR/srv/buildid/<id>/debuginfo; id set; libdebuginfod's cache in
 * DIR/cache. */
static void setup_server(void)
{
	char path[128];
	FILE *f;

	temp_dir(dir, sizeof(dir), "debuginfod");
	sh("cd %s && printf '%%s\\n' "
	   "'__attribute__((noinline)) int kiln_far_away(int x) { return x * 7 + 1; }' "
	   "'int main(int c, char **v) { (void)v; return kiln_far_away(c) == 0; }' > prog.c && "
	   "cc -O1 -g -Wl,--build-id=sha1 -o full prog.c && "
	   "readelf -n full | awk '/Build ID:/ { print $3 }' > id && "
	   "mkdir -p srv/buildid/$(cat id) && "
	   "objcopy --only-keep-debug full srv/buildid/$(cat id)/debuginfo && "
	   "objcopy --strip-all full prog && rm full",
	   dir);
	snprintf(path, sizeof(path), "%s/id", dir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%128s", id), 1);
	fclose(f);
	snprintf(path, sizeof(path), "%s/cache", dir);
	setenv("DEBUGINFOD_CACHE_PATH", path, 1);
}

static void serve_files(void)
{
	char url[128];

	snprintf(url, sizeof(url), "file://%s/srv", dir);
	setenv("DEBUGINFOD_URLS", url, 1);
}

static struct debuginfod *client(uint64_t max_bytes)
{
	struct debuginfod_opts o = {
		.lookups = 2,
		.timeout_ns = 30 * SEC,
		.max_bytes = max_bytes,
		.miss_ttl_ns = 600 * SEC,
	};
	struct debuginfod *d = debuginfod__new(&o);

	cr_assert_not_null(d, "%s", strerror(errno));
	return d;
}

static struct debuginfod_stats stats_of(struct debuginfod *d)
{
	struct debuginfod_stats s;

	debuginfod__stats(d, &s);
	return s;
}

TestSuite(debuginfod, .fini = teardown);

Test(debuginfod, off_without_urls)
{
	struct debuginfod_opts o = { .lookups = 2, .timeout_ns = SEC, .max_bytes = 1 << 20 };

	unsetenv("DEBUGINFOD_URLS");
	errno = EINVAL;
	cr_assert_null(debuginfod__new(&o));
	cr_assert_eq(errno, 0);
	setenv("DEBUGINFOD_URLS", "  ", 1);
	cr_assert_null(debuginfod__new(&o));
	setenv("DEBUGINFOD_URLS", "file:///nonexistent", 1);
	o.lookups = 0;
	cr_assert_null(debuginfod__new(&o));
	cr_assert_eq(errno, 0);
	/* NULL is off: every call is a no-op. */
	cr_assert_not(debuginfod__request(NULL, "abcd", 0));
	cr_assert_eq(debuginfod__wait(NULL, SEC), 0);
}

/* Fetched in the background, then a table of the stripped program named
 * from it: the path handed over is the one symtab__load_with takes. */
Test(debuginfod, fetched_file_names_the_stripped_program)
{
	char path[4096], prog[128];
	struct debuginfod *d;
	struct debuginfod_stats s;
	struct symtab *st;
	int fd;

	setup_server();
	serve_files();
	d = client(256 << 20);
	cr_assert(debuginfod__request(d, id, monotonic_ns()));
	cr_assert_eq(debuginfod__wait(d, UNIT_WAIT_S * SEC), 0);
	cr_assert_not(debuginfod__waiting(d, id));
	cr_assert(debuginfod__fetched(d, id, path, sizeof(path)));
	cr_assert_not(debuginfod__fetched(d, id, path, 8), "a path that does not fit");
	/* known now: not looked up again */
	cr_assert_not(debuginfod__request(d, id, monotonic_ns()));
	s = stats_of(d);
	cr_assert_eq(s.lookups, 1);
	cr_assert_eq(s.results[DEBUGINFOD_FOUND], 1);
	cr_assert_gt(s.bytes, 0);
	cr_assert_eq(s.pending, 0);

	snprintf(prog, sizeof(prog), "%s/prog", dir);
	fd = open(prog, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	st = symtab__load_with(fd, "", prog, SYMTAB_DEFAULT_MAX_BYTES, NULL);
	cr_assert_str_eq(symtab__source(st), "none"); /* .dynsym without functions */
	symtab__free(st);
	st = symtab__load_with(fd, "", prog, SYMTAB_DEFAULT_MAX_BYTES, path);
	cr_assert_str_eq(symtab__source(st), "debuginfod");
	cr_assert_geq(symtab__count(st), 2);
	symtab__free(st);
	/* A file of another build id is refused: here, the program itself. */
	st = symtab__load_with(fd, "", prog, SYMTAB_DEFAULT_MAX_BYTES, prog);
	cr_assert_str_eq(symtab__source(st), "none");
	symtab__free(st);
	close(fd);

	/* Refused by the readers: a miss from then on. */
	debuginfod__unusable(d, id, monotonic_ns());
	cr_assert_not(debuginfod__fetched(d, id, path, sizeof(path)));
	cr_assert_not(debuginfod__request(d, id, monotonic_ns()));
	cr_assert_eq(stats_of(d).remembered, 1);
	debuginfod__free(d);
}

/* A miss is remembered for miss_ttl_ns, then asked again. */
Test(debuginfod, misses_are_remembered)
{
	const char *nobody = "0123456789abcdef0123456789abcdef01234567";
	struct debuginfod *d;
	struct debuginfod_stats s;
	uint64_t now = monotonic_ns();

	setup_server();
	serve_files();
	d = client(256 << 20);
	cr_assert(debuginfod__request(d, nobody, now));
	cr_assert_eq(debuginfod__wait(d, UNIT_WAIT_S * SEC), 0);
	s = stats_of(d);
	cr_assert_eq(s.results[DEBUGINFOD_NOT_FOUND], 1);
	cr_assert_not(debuginfod__request(d, nobody, monotonic_ns()));
	cr_assert_not(debuginfod__request(d, nobody, now + 599 * SEC));
	cr_assert_eq(stats_of(d).remembered, 2);
	/* past the TTL: asked again (libdebuginfod's own cache answers) */
	cr_assert(debuginfod__request(d, nobody, monotonic_ns() + 601 * SEC));
	cr_assert_eq(debuginfod__wait(d, UNIT_WAIT_S * SEC), 0);
	s = stats_of(d);
	cr_assert_eq(s.lookups, 2);
	cr_assert_eq(s.results[DEBUGINFOD_NOT_FOUND], 2);
	/* not build ids: never looked up */
	cr_assert_not(debuginfod__request(d, "", now));
	cr_assert_not(debuginfod__request(d, "ABCD", now));
	cr_assert_not(debuginfod__request(d, "abc", now));
	cr_assert_eq(stats_of(d).lookups, 2);
	debuginfod__free(d);
}

Test(debuginfod, too_large)
{
	char path[4096];
	struct debuginfod *d;

	setup_server();
	serve_files();
	d = client(64); /* the debug file has kilobytes */
	cr_assert(debuginfod__request(d, id, monotonic_ns()));
	cr_assert_eq(debuginfod__wait(d, UNIT_WAIT_S * SEC), 0);
	cr_assert_eq(stats_of(d).results[DEBUGINFOD_TOO_LARGE], 1);
	cr_assert_not(debuginfod__fetched(d, id, path, sizeof(path)));
	debuginfod__free(d);
}

/* A server that takes the request and never answers: the lookup ends at
 * the time limit; meanwhile the queue fills to its bound and the next
 * request is refused; freeing cancels what still waits. */
Test(debuginfod, hung_server_times_out_and_the_queue_is_bounded)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct debuginfod_opts o = {
		.lookups = 1,
		.timeout_ns = 2 * SEC,
		.max_bytes = 1 << 20,
		.miss_ttl_ns = 600 * SEC,
	};
	socklen_t len = sizeof(sa);
	struct debuginfod *d;
	struct debuginfod_stats s;
	char url[64], bid[41];
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	setup_server();
	cr_assert_geq(ls, 0);
	cr_assert_eq(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(ls, 64), 0);
	cr_assert_eq(getsockname(ls, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	setenv("DEBUGINFOD_URLS", url, 1);
	d = debuginfod__new(&o);
	cr_assert_not_null(d);
	/* one lookup under way, then the queue filled past its bound */
	cr_assert(
		debuginfod__request(d, "0000000000000000000000000000000000000001", monotonic_ns()));
	POLL_UNTIL(stats_of(d).lookups == 1, "the first lookup never started");
	for (int i = 1; i <= DEBUGINFOD_QUEUE_MAX + 1; i++) {
		snprintf(bid, sizeof(bid), "%040x", i + 1);
		debuginfod__request(d, bid, monotonic_ns());
	}
	s = stats_of(d);
	cr_assert_eq(s.refused_queue, 1, "refused %llu", (unsigned long long)s.refused_queue);
	cr_assert_eq(s.pending, DEBUGINFOD_QUEUE_MAX + 1);
	POLL_UNTIL(stats_of(d).results[DEBUGINFOD_TIMEOUT] >= 1, "no timeout");
	cr_assert(debuginfod__waiting(d, "0000000000000000000000000000000000000100"));
	debuginfod__free(d);
	close(ls);
}
