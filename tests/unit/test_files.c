// SPDX-License-Identifier: BSD-2-Clause
/* The file exporter: what one interval leaves in the directory (names,
 * the folded file's lines, the pprof files read back), atomic writes and
 * the directory's bound across runs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "export/files.h"
#include "unit_helpers.h"

#define PERIOD_NS 10309278ull   /* 97 Hz */

static char dir[128];

static void dir_new(void)
{
	temp_dir(dir, sizeof(dir), "files");
}

static void dir_free(void)
{
	remove_dir(dir);
}

TestSuite(files, .init = dir_new, .fini = dir_free);

/* The directory's entries, sorted, one a line. */
static void listing(char *out, size_t size)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	size_t pos = 0;

	cr_assert_geq(n, 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && pos < size)
			pos += (size_t)snprintf(out + pos, size - pos, "%s\n", names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

static char *slurp(const char *name, size_t *len)
{
	char path[512], *buf = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	*len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(*len + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, *len, f), *len);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void put_file(const char *name, size_t bytes)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	for (size_t i = 0; i < bytes; i++)
		fputc('x', f);
	cr_assert_eq(fclose(f), 0);
}

static bool exists(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The exporter's counters; -1: not checked. */
static void expect_stats(const struct files *fs, int64_t written, int64_t removed,
			 int64_t errors, int64_t files_held, int64_t bytes_held)
{
	struct files_stats st;

	files__stats(fs, &st);
	if (written >= 0)
		cr_assert_eq(st.written, (uint64_t)written);
	if (removed >= 0)
		cr_assert_eq(st.removed, (uint64_t)removed);
	if (errors >= 0)
		cr_assert_eq(st.errors, (uint64_t)errors);
	if (files_held >= 0)
		cr_assert_eq(st.files_held, (uint64_t)files_held);
	if (bytes_held >= 0)
		cr_assert_eq(st.bytes_held, (uint64_t)bytes_held);
}

/* One label set of an interval: its labels and folded stacks. */
struct input {
	const char *service;    /* NULL: no service_name label */
	const char *pod;
	const char *folded;     /* sorted lines, as folded__write writes them */
};

Test(files, one_interval_names_contents_and_totals)
{
	/* Sorted by service_name, as the agent gives them. */
	static const struct input in[] = {
		{ "api", "api-1", "api;main;serve 7\napi;main;serve;read_[k] 3\n" },
		{ "api", "api-2", "api;main;idle 1\n" },
		{ "api", "api-3", "api;main;serve 2\n" },
		{ "ns/web app", "web-1", "nginx;main;loop 11\nnginx;main;ssl;aes 5\n" },
		{ NULL, "k", "swapper;cpu_idle_[k] 40\n" },
	};
	const size_t n = sizeof(in) / sizeof(in[0]);
	struct pprof_meta meta = { .period_ns = PERIOD_NS, .time_nanos = 1700000000000000000ll,
				   .duration_nanos = 10000000000ll };
	struct profile_set *set = profile_set__new(16);
	struct files *fs = files__new(dir, 1 << 30, FILE_MODE_DEFAULT);
	struct files_profile fp[5];
	struct labels l[5] = { 0 };
	uint8_t *pprof[5];
	char list[2048], *text, expected[1024] = "";
	size_t len;

	cr_assert_not_null(set);
	cr_assert_not_null(fs);
	for (size_t i = 0; i < n; i++) {
		struct profile_set_entry *e;
		int err;

		if (in[i].service)
			labels_of_pairs(&l[i], "service_name", in[i].service, "pod", in[i].pod, NULL);
		else
			labels_of_pairs(&l[i], "pod", in[i].pod, NULL);
		e = profile_set__get(set, &l[i], &err);
		cr_assert_not_null(e);
		read_text(e->profile, in[i].folded);
		cr_assert_eq(pprof__encode(e->profile, &meta, true, &pprof[i], &fp[i].len), 0);
		fp[i].labels = &e->labels;
		fp[i].pprof = pprof[i];
		strcat(expected, in[i].folded);
	}
	files__write_interval(fs, 1700000000, fp, n, set);

	listing(list, sizeof(list));
	cr_assert_str_eq(list, "1700000000-all.folded\n"
			       "1700000000-api-2.pb.gz\n"
			       "1700000000-api-3.pb.gz\n"
			       "1700000000-api.pb.gz\n"
			       "1700000000-ns_web_app.pb.gz\n"
			       "1700000000-unknown.pb.gz\n");
	/* The folded file holds every label set's stacks, counts as given. */
	text = slurp("1700000000-all.folded", &len);
	cr_assert_str_eq(text, expected);
	free(text);
	/* Each pprof reads back to the stacks and counts that went in. */
	{
		static const char *const files_of[] = {
			"1700000000-api.pb.gz", "1700000000-api-2.pb.gz", "1700000000-api-3.pb.gz",
			"1700000000-ns_web_app.pb.gz", "1700000000-unknown.pb.gz",
		};
		uint64_t total = 0;

		for (size_t i = 0; i < n; i++) {
			struct profile *back = profile__new();
			struct read_info info = { 0 };
			char path[512], *folded;

			snprintf(path, sizeof(path), "%s/%s", dir, files_of[i]);
			cr_assert_eq(profile__read_file(back, path, &test_limits, &info), 0, "%s: %s",
				     path, info.why);
			cr_assert_eq(info.period_ns, PERIOD_NS);
			folded = folded_text(back);
			cr_assert_str_eq(folded, in[i].folded, "%s", files_of[i]);
			total += profile__total(back);
			free(folded);
			profile__free(back);
		}
		cr_assert_eq(total, profile_set__total(set));
		cr_assert_eq(total, 7 + 3 + 1 + 2 + 11 + 5 + 40);
	}
	expect_stats(fs, 6, 0, 0, 6, -1);
	for (size_t i = 0; i < n; i++) {
		free(pprof[i]);
		labels__release(&l[i]);
	}
	files__free(fs);
	profile_set__free(set);
}

static int fill_text(FILE *f, void *ctx)
{
	return fputs(ctx, f) < 0 ? -EIO : 0;
}

static int fill_then_fail(FILE *f, void *ctx)
{
	fputs("half a file", f);
	return -EIO;
}

Test(files, writes_are_atomic_and_failures_leave_nothing)
{
	struct files *fs = files__new(dir, 1 << 30, FILE_MODE_DEFAULT);
	char list[1024], *text;
	size_t len;

	cr_assert_not_null(fs);
	cr_assert_eq(files__write(fs, "1700000000-a.pb.gz", fill_text, "first"), 0);
	/* A failed rewrite keeps the old file whole, and no temporary. */
	cr_assert_eq(files__write(fs, "1700000000-a.pb.gz", fill_then_fail, NULL), -EIO);
	cr_assert_eq(files__write(fs, "1700000010-b.pb.gz", fill_then_fail, NULL), -EIO);
	listing(list, sizeof(list));
	cr_assert_str_eq(list, "1700000000-a.pb.gz\n");
	text = slurp("1700000000-a.pb.gz", &len);
	cr_assert_str_eq(text, "first");
	free(text);
	expect_stats(fs, 1, 0, 2, 1, 5);
	files__free(fs);
}

Test(files, rotation_removes_the_oldest_interval_files_of_any_run)
{
	struct files *fs;
	char list[2048];

	/* An earlier run's interval files, and files kiln does not own. */
	put_file("1600000000-old.pb.gz", 100);
	put_file("1600000000-all.folded", 100);
	put_file("1600000010-old.pb.gz", 100);
	put_file("latest.html", 5000);
	put_file("notes.txt", 5000);
	put_file("backup-1600000000.pb.gz", 5000);
	put_file("1600000000", 5000);   /* digits but not an interval name */
	/* At start, what is held is within the bound: nothing removed. */
	fs = files__new(dir, 350, FILE_MODE_DEFAULT);
	cr_assert_not_null(fs);
	expect_stats(fs, 0, 0, 0, 3, 300);

	/* 300 + 100 > 350: the oldest (the earlier run's first) goes. */
	cr_assert_eq(files__write(fs, "1700000000-new.pb.gz", fill_text,
				  "0123456789012345678901234567890123456789012345678901234567890123456789"
				  "012345678901234567890123456789"), 0);
	cr_assert(!exists("1600000000-all.folded"));
	cr_assert(exists("1600000000-old.pb.gz"));
	expect_stats(fs, 1, 1, 0, 3, 300);
	/* latest.html is rewritten in place and never counted. */
	cr_assert_eq(files__write(fs, "latest.html", fill_text, "<html>"), 0);
	expect_stats(fs, 2, 1, 0, 3, 300);
	/* One big interval file: everything older goes, the newest stays
	 * even over the bound. */
	{
		char *big = malloc(1001);

		cr_assert_not_null(big);
		memset(big, 'y', 1000);
		big[1000] = '\0';
		cr_assert_eq(files__write(fs, "1700000010-big.pb.gz", fill_text, big), 0);
		free(big);
	}
	listing(list, sizeof(list));
	cr_assert_str_eq(list, "1600000000\n"
			       "1700000010-big.pb.gz\n"
			       "backup-1600000000.pb.gz\n"
			       "latest.html\n"
			       "notes.txt\n");
	expect_stats(fs, 3, 4, 0, 1, 1000);
	files__free(fs);

	/* The next run starts over the bound: it trims at start. */
	put_file("1500000000-ancient.pb.gz", 10);
	fs = files__new(dir, 500, FILE_MODE_DEFAULT);
	cr_assert_not_null(fs);
	cr_assert(!exists("1500000000-ancient.pb.gz"));
	cr_assert(exists("1700000010-big.pb.gz"));
	expect_stats(fs, 0, 1, 0, 1, 1000);
	files__free(fs);
}
