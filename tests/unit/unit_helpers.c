// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "unit_helpers.h"

uint64_t unit_deadline(void)
{
	return monotonic_ns() + UNIT_WAIT_S * 1000000000ull;
}

bool unit_poll_pause(uint64_t deadline)
{
	if (monotonic_ns() > deadline)
		return false;
	usleep(10 * 1000);
	return true;
}

char *folded_text(const struct profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cr_assert_eq(folded__write(p, false, f), 0);
	cr_assert_eq(fclose(f), 0);
	return text;
}

const struct read_limits test_limits = { .max_bytes = 64 << 20, .max_nodes = 1000000 };

void read_text(struct profile *p, const char *text)
{
	struct read_info info;
	int err = profile__read(p, (const uint8_t *)text, strlen(text), &test_limits, &info);

	cr_assert_eq(err, 0, "profile__read: %d (%s)", err, info.why);
}

struct profile *profile_of(const char *text)
{
	struct profile *p = profile__new();

	cr_assert_not_null(p);
	read_text(p, text);
	return p;
}

struct frame app_frame(const char *name, uint64_t addr)
{
	return (struct frame){
		.kind = FRAME_USER, .name = name, .addr = addr,
		.map_file = "/usr/bin/app", .map_build_id = "deadbeef",
		.map_start = 0x400000, .map_limit = 0x500000, .map_offset = 0x1000,
	};
}

struct frame kernel_frame(const char *name, uint64_t addr)
{
	return (struct frame){
		.kind = FRAME_KERNEL, .name = name, .addr = addr,
		.map_file = "[kernel.kallsyms]",
		.map_start = UNIT_KSTART, .map_limit = UNIT_KSTART + 0x1000000,
	};
}

struct profile *cpu_profile_sample(void)
{
	struct frame f[] = {
		{ .kind = FRAME_ROOT, .name = "app" },
		app_frame("main", 0x401000), app_frame("work", 0x401100),
		kernel_frame("do_syscall_64", UNIT_KSTART + 0x100),
	};
	struct profile *p = profile__new();

	cr_assert_not_null(p);
	cr_assert_eq(profile__add(p, f, 3, 3), 0);
	cr_assert_eq(profile__add(p, f, 4, 2), 0);
	cr_assert_eq(profile__add(p, f, 2, 1), 0);
	return p;
}

struct pair {
	const char *name, *value;
};

static int cmp_pair(const void *a, const void *b)
{
	return strcmp(((const struct pair *)a)->name, ((const struct pair *)b)->name);
}

void labels_of_array(struct labels *l, const char *const *names_values, size_t n)
{
	struct pair *pairs = calloc(n ? n : 1, sizeof(*pairs));
	size_t len = 0, pos = 0;

	cr_assert_not_null(pairs);
	for (size_t i = 0; i < n; i++) {
		pairs[i].name = names_values[2 * i];
		pairs[i].value = names_values[2 * i + 1];
		len += strlen(pairs[i].name) + strlen(pairs[i].value) + 2;
	}
	qsort(pairs, n, sizeof(*pairs), cmp_pair);
	free(l->buf);
	l->buf = malloc(len ? len : 1);
	cr_assert_not_null(l->buf);
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(pairs[i].name) + 1, vl = strlen(pairs[i].value) + 1;

		memcpy(l->buf + pos, pairs[i].name, nl);
		memcpy(l->buf + pos + nl, pairs[i].value, vl);
		pos += nl + vl;
	}
	l->len = l->cap = len;
	l->n = n;
	free(pairs);
}

void labels_of_pairs(struct labels *l, ...)
{
	const char *a[128];
	size_t n = 0;
	va_list ap;

	va_start(ap, l);
	while (n < 64 && (a[2 * n] = va_arg(ap, const char *))) {
		a[2 * n + 1] = va_arg(ap, const char *);
		n++;
	}
	va_end(ap);
	labels_of_array(l, a, n);
}

void temp_dir(char *path, size_t size, const char *what)
{
	snprintf(path, size, "/tmp/kiln-%s-XXXXXX", what);
	cr_assert_not_null(mkdtemp(path), "mkdtemp %s", path);
}

void write_under(const char *root, const char *sub, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", root, sub, name);
	f = fopen(path, "we");
	cr_assert_not_null(f, "%s", path);
	cr_assert_geq(fputs(text, f), 0);
	cr_assert_eq(fclose(f), 0);
}

/* Removes dir and what is in it, one level of subdirectories deep. */
static void remove_tree(const char *dir, int depth)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) && depth > 0)
			remove_tree(path, depth - 1);
	}
	closedir(d);
	rmdir(dir);
}

void remove_dir(const char *dir)
{
	remove_tree(dir, 1);
}
