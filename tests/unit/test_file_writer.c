/* SPDX-License-Identifier: BSD-2-Clause */
/* The output writer (core/file.c) against the links and directories
 * another user could plant: a symlink at the final name or at the old
 * predictable temporary name, a directory writable by others, one owned
 * by another user, a symlink on the path; and --output-mode's parsing. The
 * ownership cases need root (chown), as kiln runs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/file.h"
#include "core/parse.h"
#include "export/files.h"
#include "unit_helpers.h"

#define NOBODY 65534
#define VICTIM_TEXT "victim: must stay as it is\n"

static char dir[128], victim[256];

static void setup(void)
{
	FILE *f;

	temp_dir(dir, sizeof(dir), "writer");
	/* The victim lives outside the output directory. */
	snprintf(victim, sizeof(victim), "%s.victim", dir);
	f = fopen(victim, "we");
	cr_assert_not_null(f);
	fputs(VICTIM_TEXT, f);
	fclose(f);
	umask(022);
}

static void teardown(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, victim);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(file_writer, .init = setup, .fini = teardown);

static int fill_hello(FILE *f, void *ctx)
{
	(void)ctx;
	return fputs("hello\n", f) < 0 ? -EIO : 0;
}

static int write_in(const char *name, unsigned mode)
{
	char path[512];
	uint64_t bytes;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return file__write_atomic(path, mode, fill_hello, NULL, &bytes);
}

static void assert_victim_untouched(void)
{
	char buf[128] = "";
	FILE *f = fopen(victim, "re");

	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_assert_str_eq(buf, VICTIM_TEXT, "the victim was written through a link");
}

/* No temporary file is left behind, whatever happened. */
static void assert_no_temporary(void)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		cr_assert_null(strstr(de->d_name, ".tmp"), "left behind: %s", de->d_name);
	closedir(d);
}

static uint64_t refused(enum file_refusal r)
{
	uint64_t n[FILE_REFUSAL_COUNT];

	file__refusal_stats(n);
	return n[r];
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (chown to another user), as kiln runs");
}

Test(file_writer, writes_with_the_mode_and_replaces_a_regular_file)
{
	char path[512];
	struct stat st;
	uint64_t bytes;

	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), 0);
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), 0);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %04o", st.st_mode & 07777);
	cr_assert_eq(st.st_size, 6);
	/* Execute bits are never given; the umask narrows. */
	cr_assert_eq(write_in("x.txt", 0755), 0);
	snprintf(path, sizeof(path), "%s/x.txt", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "mode %04o", st.st_mode & 07777);
	cr_assert_eq(file__write_atomic(dir, 0640, fill_hello, NULL, &bytes), -EPERM);
	snprintf(path, sizeof(path), "%s/", dir);
	cr_assert_eq(file__write_atomic(path, 0640, fill_hello, NULL, &bytes), -EISDIR);
	assert_no_temporary();
}

Test(file_writer, symlink_at_the_final_name_is_refused_not_followed)
{
	char path[512];
	uint64_t before = refused(FILE_REFUSED_LINK);
	struct stat st;

	snprintf(path, sizeof(path), "%s/out.txt", dir);
	cr_assert_eq(symlink(victim, path), 0);
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), -EPERM);
	assert_victim_untouched();
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the planted link was replaced silently");
	cr_assert_eq(refused(FILE_REFUSED_LINK), before + 1);
	assert_no_temporary();
}

Test(file_writer, directory_at_the_final_name_is_refused)
{
	char path[512];
	uint64_t before = refused(FILE_REFUSED_NOT_REGULAR);

	snprintf(path, sizeof(path), "%s/out.txt", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), -EPERM);
	cr_assert_eq(refused(FILE_REFUSED_NOT_REGULAR), before + 1);
}

/* The old writer used "<path>.tmp.<pid>": links planted at every such name
 * of the next pids are never opened. */
Test(file_writer, links_at_the_old_temporary_names_are_ignored)
{
	char path[512];
	pid_t me = getpid();

	for (pid_t p = me - 5; p < me + 200; p++) {
		snprintf(path, sizeof(path), "%s/out.txt.tmp.%d", dir, (int)p);
		cr_assert_eq(symlink(victim, path), 0);
	}
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), 0);
	assert_victim_untouched();
}

Test(file_writer, group_or_world_writable_directory_needs_the_sticky_bit)
{
	uint64_t before = refused(FILE_REFUSED_DIR_MODE);
	int fd;

	cr_assert_eq(chmod(dir, 0777), 0);
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), -EPERM);
	cr_assert_eq(refused(FILE_REFUSED_DIR_MODE), before + 1);
	cr_assert_eq(file__check_dir_of(dir), 0);       /* its parent is /tmp: sticky */
	fd = file__open_dir(dir);
	cr_assert_eq(fd, -EPERM);
	cr_assert_eq(refused(FILE_REFUSED_DIR_MODE), before + 2);
	cr_assert_eq(chmod(dir, 01777), 0);     /* as /tmp */
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), 0);
}

/* The agent's file exporter checks its --output-dir once, at start. */
Test(file_writer, exporter_refuses_a_directory_others_can_write)
{
	struct files *fs;

	cr_assert_eq(chmod(dir, 0777), 0);
	errno = 0;
	cr_assert_null(files__new(dir, 1 << 20, FILE_MODE_DEFAULT));
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(chmod(dir, 0755), 0);
	fs = files__new(dir, 1 << 20, FILE_MODE_DEFAULT);
	cr_assert_not_null(fs);
	files__free(fs);
}

Test(file_writer, directory_of_another_user_is_refused)
{
	uint64_t before = refused(FILE_REFUSED_DIR_OWNER);
	char sub[256];

	need_root();
	cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
	cr_assert_eq(write_in("out.txt", FILE_MODE_DEFAULT), -EPERM);
	cr_assert_eq(refused(FILE_REFUSED_DIR_OWNER), before + 1);
	/* Also when it is only on the way: nobody could rename sub. */
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	cr_assert_eq(file__open_dir(sub), -EPERM);
	cr_assert_eq(refused(FILE_REFUSED_DIR_OWNER), before + 2);
}

/* A symlink on the way is followed when root made it, refused when
 * another user did (in a sticky directory anyone can plant one). */
Test(file_writer, symlink_on_the_path_needs_a_trusted_owner)
{
	char real[256], link[256], path[512];
	uint64_t before = refused(FILE_REFUSED_LINK), bytes;

	need_root();
	cr_assert_eq(chmod(dir, 01777), 0);
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(mkdir(real, 0755), 0);
	cr_assert_eq(symlink("real", link), 0);
	snprintf(path, sizeof(path), "%s/out.txt", link);
	cr_assert_eq(file__write_atomic(path, 0640, fill_hello, NULL, &bytes), 0);
	snprintf(path, sizeof(path), "%s/out.txt", real);
	cr_assert_eq(access(path, F_OK), 0);
	cr_assert_eq(lchown(link, NOBODY, NOBODY), 0);
	snprintf(path, sizeof(path), "%s/other.txt", link);
	cr_assert_eq(file__write_atomic(path, 0640, fill_hello, NULL, &bytes), -EPERM);
	cr_assert_eq(refused(FILE_REFUSED_LINK), before + 1);
	snprintf(path, sizeof(path), "%s/other.txt", real);
	cr_assert_eq(access(path, F_OK), -1);
}

/* --output-mode: octal, within [0600, 0666]. */
struct mode_opts {
	unsigned output_mode;
};

#define T struct mode_opts
static const struct config_option mode_table[] = {
	CONFIG_ROW_MODE(T, output_mode, "output-mode", "0640", FILE_MODE_MIN, FILE_MODE_MAX,
			"mode"),
};
#undef T

static int parse_mode(const char *arg, unsigned *out)
{
	char *argv[] = { "test", (char *)"--output-mode", (char *)arg, NULL };
	struct mode_opts o = { 0 };
	int err = config__parse("test", mode_table, 1, &o, arg ? 3 : 1, argv);

	*out = o.output_mode;
	return err;
}

Test(file_writer, output_mode_is_octal_and_bounded)
{
	uint64_t v;
	unsigned m;

	unsetenv("KILN_OUTPUT_MODE");
	cr_assert_eq(parse_octal("0640", 0, 0777, &v), 0);
	cr_assert_eq(v, 0640);
	cr_assert_eq(parse_octal("8", 0, 0777, &v), -EINVAL);
	cr_assert_eq(parse_mode(NULL, &m), 0);
	cr_assert_eq(m, 0640);
	cr_assert_eq(parse_mode("600", &m), 0);
	cr_assert_eq(m, 0600);
	cr_assert_eq(parse_mode("0644", &m), 0);
	cr_assert_eq(m, 0644);
	cr_assert_eq(parse_mode("0777", &m), 2);
	cr_assert_eq(parse_mode("0400", &m), 2);
	cr_assert_eq(parse_mode("640x", &m), 2);
	cr_assert_eq(parse_mode("420", &m), 2);         /* 0644 in decimal */
}
