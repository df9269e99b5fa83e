/* SPDX-License-Identifier: BSD-2-Clause */
/* The safe opener on a tree built under /tmp, once through openat2 and once
 * through the O_NOFOLLOW walk (forced by the test hook): a FIFO is refused
 * without blocking, a symlink out of the root resolves inside it, a
 * directory, a device and a file over the cap are refused, a good file
 * opens, and each refusal is counted by reason. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safe_open.h"

static char base[64], root[128], host[128];

/* base/host/secret   a file outside the root
 * base/root/etc/good  "inside"; base/root/etc/fifo; base/root/etc/big (1 MiB)
 * base/root/etc/abs  -> <host>/secret  (absolute: must resolve inside root)
 * base/root/etc/up   -> ../../../host/secret (climbs: clamped at root)
 * base/root/etc/loop -> loop; base/root/etc/rel -> good; base/root/lnk -> etc
 * base/root/<host>/secret  the in-root file "abs" and "up" must reach */
static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static void setup(void)
{
	char p[512];
	FILE *f;

	alarm(30);
	snprintf(base, sizeof(base), "/tmp/kiln-safeopen-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(host, sizeof(host), "%s/host", base);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(host, 0755), 0);
	snprintf(p, sizeof(p), "%s/etc", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/secret", host);
	write_text(p, "host secret\n");
	snprintf(p, sizeof(p), "%s/etc/good", root);
	write_text(p, "inside\n");
	snprintf(p, sizeof(p), "%s/etc/big", root);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	cr_assert_eq(ftruncate(fileno(f), 1 << 20), 0);
	fclose(f);
	snprintf(p, sizeof(p), "%s/etc/fifo", root);
	cr_assert_eq(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/etc/abs", root);
	cr_assert_eq(symlink("/host/secret", p), 0);
	snprintf(p, sizeof(p), "%s/etc/up", root);
	cr_assert_eq(symlink("../../../../../host/secret", p), 0);
	snprintf(p, sizeof(p), "%s/etc/loop", root);
	cr_assert_eq(symlink("loop", p), 0);
	snprintf(p, sizeof(p), "%s/etc/rel", root);
	cr_assert_eq(symlink("./good", p), 0);
	snprintf(p, sizeof(p), "%s/lnk", root);
	cr_assert_eq(symlink("etc", p), 0);
	snprintf(p, sizeof(p), "%s/etc/proc", root);
	cr_assert_eq(symlink("/proc/self/root/etc/good", p), 0);
	/* The in-root file that "abs" and "up" name. */
	snprintf(p, sizeof(p), "%s/host", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/host/secret", root);
	write_text(p, "in-root decoy\n");
}

static void teardown(void)
{
	char cmd[128];

	safe_open__force_walk(false);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	cr_assert_eq(system(cmd), 0);
}

static void read_all(int fd, char *buf, size_t n)
{
	ssize_t r = read(fd, buf, n - 1);

	cr_assert_geq(r, 0);
	buf[r] = '\0';
}

static void expect_text(const char *path, const char *text)
{
	char buf[64];
	struct stat sb;
	int fd = safe_open__in(root, path, 4096, &sb);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(-fd));
	cr_assert(S_ISREG(sb.st_mode));
	read_all(fd, buf, sizeof(buf));
	close(fd);
	cr_assert_str_eq(buf, text, "%s: read '%s'", path, buf);
}

static uint64_t refused(enum safe_open_refusal r)
{
	struct safe_open_stats s;

	safe_open__stats(&s);
	return s.refused[r];
}

static void expect_refused(const char *path, uint64_t cap, int err, enum safe_open_refusal r)
{
	uint64_t before = refused(r);
	int fd = safe_open__in(root, path, cap, NULL);

	cr_assert_eq(fd, err, "%s: %d, want %d", path, fd, err);
	cr_assert_eq(refused(r), before + 1, "%s: refusal '%s' not counted", path,
		     safe_open_refusal_names[r]);
}

static void all_cases(void)
{
	struct safe_open_stats s0, s1;

	safe_open__stats(&s0);
	expect_text("/etc/good", "inside\n");
	expect_text("/lnk/rel", "inside\n");
	expect_text("/etc/../etc/./good", "inside\n");
	/* Out of the root and back: the absolute target and the climb both
	 * land on root/host/secret, never on base/host/secret. */
	expect_text("/etc/abs", "in-root decoy\n");
	expect_text("/etc/up", "in-root decoy\n");
	expect_text("/../../../host/secret", "in-root decoy\n");
	/* The FIFO has no writer: a plain open would block forever. */
	expect_refused("/etc/fifo", 4096, -EINVAL, SAFE_OPEN_NOT_REGULAR);
	expect_refused("/etc", 4096, -EINVAL, SAFE_OPEN_NOT_REGULAR);
	expect_refused("/lnk/", 4096, -EINVAL, SAFE_OPEN_NOT_REGULAR);
	expect_refused("/etc/big", (1 << 20) - 1, -EFBIG, SAFE_OPEN_TOO_LARGE);
	expect_refused("/etc/loop", 4096, -ELOOP, SAFE_OPEN_LINK);
	expect_refused("etc/good", 4096, -ENAMETOOLONG, SAFE_OPEN_BAD_PATH);
	cr_assert_eq(safe_open__in(root, "/etc/missing", 4096, NULL), -ENOENT);
	cr_assert_eq(safe_open__in(root, "/etc/good/x", 4096, NULL), -ENOTDIR);
	safe_open__stats(&s1);
	cr_assert_eq(s1.opened, s0.opened + 6);
}

/* alarm() in setup turns a hang on the FIFO into a failure (Criterion's
 * .timeout leaks in its runner under ASan). */
TestSuite(safe_open, .init = setup, .fini = teardown);

Test(safe_open, openat2_or_its_fallback)
{
	all_cases();
}

Test(safe_open, nofollow_walk)
{
	struct safe_open_stats a, b;

	safe_open__force_walk(true);
	safe_open__stats(&a);
	all_cases();
	safe_open__stats(&b);
	cr_assert_geq(b.walks, a.walks + 12, "the walk was not taken");
}

/* A magic link (a /proc link inside the root) is refused by openat2; the
 * walk reads its text and resolves it inside the root, where the in-root
 * /proc does not exist. Either way the host's file is not opened. */
Test(safe_open, magic_link_does_not_leave_the_root)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/etc/self", root);
	cr_assert_eq(symlink("/proc/self/root/etc/passwd", p), 0);
	for (int walk = 0; walk < 2; walk++) {
		safe_open__force_walk(walk);
		fd = safe_open__in(root, "/etc/self", 1 << 20, NULL);
		cr_assert_lt(fd, 0, "walk=%d: opened the host's /etc/passwd", walk);
	}
}

Test(safe_open, host_root_and_devices)
{
	uint64_t before = refused(SAFE_OPEN_NOT_REGULAR);
	int fd;

	/* A character device is refused from its O_PATH descriptor: never opened. */
	cr_assert_eq(safe_open__in("/", "/dev/null", 4096, NULL), -EINVAL);
	cr_assert_eq(safe_open__in("", "/dev/zero", 4096, NULL), -EINVAL);
	cr_assert_eq(refused(SAFE_OPEN_NOT_REGULAR), before + 2);
	fd = safe_open__in(NULL, "/proc/self/exe", 1ull << 40, NULL);
	cr_assert_eq(fd, -ELOOP, "a magic link under the host root: %d", fd);
	fd = safe_open__proc_link("/proc/self/exe", 1ull << 40, NULL);
	cr_assert_geq(fd, 0, "map_files-style trusted link: %s", strerror(-fd));
	cr_assert_eq(safe_open__check_fd(fd, "exe", 1ull << 40, NULL), 0);
	cr_assert_eq(safe_open__check_fd(fd, "exe", 16, NULL), -EFBIG);
	close(fd);
}

/* safe_open__in_nofollow: a symlink as the last component is refused and
 * counted as "link", through openat2 and through the walk, whatever it
 * points at (in the root, out of it, itself); links before the last
 * component still resolve inside the root; a plain file opens. */
Test(safe_open, nofollow_refuses_a_last_symlink)
{
	static const char *const links[] = { "/etc/rel", "/etc/abs", "/etc/up", "/etc/loop",
					     "/lnk/rel" };
	char buf[64];
	int fd;

	for (int walk = 0; walk < 2; walk++) {
		safe_open__force_walk(walk);
		for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
			uint64_t before = refused(SAFE_OPEN_LINK);

			fd = safe_open__in_nofollow(root, links[i], 4096, NULL);
			cr_assert_eq(fd, -ELOOP, "walk=%d %s: %d", walk, links[i], fd);
			cr_assert_eq(refused(SAFE_OPEN_LINK), before + 1, "walk=%d %s: not counted",
				     walk, links[i]);
		}
		fd = safe_open__in_nofollow(root, "/lnk/good", 4096, NULL);
		cr_assert_geq(fd, 0, "walk=%d: %s", walk, strerror(-fd));
		read_all(fd, buf, sizeof(buf));
		close(fd);
		cr_assert_str_eq(buf, "inside\n");
		cr_assert_eq(safe_open__in_nofollow(root, "/etc/fifo", 4096, NULL), -EINVAL);
	}
}

/* safe_open__dir_in: a directory inside the root, through a symlink that
 * stays inside it; a file is -ENOTDIR. Files open under it later, with
 * safe_open__at_nofollow refusing a last symlink, also once the directory
 * has no path any more (renamed away, as a process's root is once its
 * /proc entry went). */
Test(safe_open, a_directory_held_to_open_under_later)
{
	char from[512], to[512], buf[64];
	int dir, fd;

	for (int walk = 0; walk < 2; walk++) {
		safe_open__force_walk(walk);
		cr_assert_eq(safe_open__dir_in(root, "/etc/good"), -ENOTDIR, "walk=%d", walk);
		dir = safe_open__dir_in(root, "/lnk");
		cr_assert_geq(dir, 0, "walk=%d: %s", walk, strerror(-dir));
		cr_assert_eq(safe_open__at_nofollow(dir, "/rel", 4096, NULL), -ELOOP, "walk=%d", walk);
		fd = safe_open__at_nofollow(dir, "/good", 4096, NULL);
		cr_assert_geq(fd, 0, "walk=%d: %s", walk, strerror(-fd));
		read_all(fd, buf, sizeof(buf));
		close(fd);
		cr_assert_str_eq(buf, "inside\n");
		close(dir);
	}
	dir = safe_open__dir_in(root, "/etc");
	cr_assert_geq(dir, 0);
	snprintf(from, sizeof(from), "%s", root);
	snprintf(to, sizeof(to), "%s/gone", base);
	cr_assert_eq(rename(from, to), 0);
	fd = safe_open__at_nofollow(dir, "/good", 4096, NULL);
	cr_assert_geq(fd, 0, "after the rename: %s", strerror(-fd));
	close(fd);
	cr_assert_eq(rename(to, from), 0);
	close(dir);
}
