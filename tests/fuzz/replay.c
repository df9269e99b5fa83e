// SPDX-License-Identifier: BSD-2-Clause
/* The corpus replay of `make test`: built with the project's compiler
 * (gcc) and linked with one fuzz target, it calls that target's
 * LLVMFuzzerTestOneInput once on every file named or inside a directory
 * named on the command line. The same checks as under libFuzzer, without
 * the clang build: a crash or a failed check aborts, and with SANITIZE=1
 * ASan, UBSan and LeakSanitizer watch every input.
 *
 *   replay DIR|FILE...    prints "<n> inputs" and exits 0, or dies */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#define INPUT_MAX (64u << 20)

static unsigned long inputs;

static void run_file(const char *path)
{
	uint8_t *buf;
	size_t len = 0;
	struct stat sb;
	FILE *f = fopen(path, "rb");

	if (!f || fstat(fileno(f), &sb) || sb.st_size > INPUT_MAX) {
		fprintf(stderr, "replay: %s: %s\n", path, f ? "too large" : strerror(errno));
		exit(2);
	}
	/* One byte more than the size, so an empty file has a buffer too;
	 * the target sees exactly the file's bytes. */
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf)
		exit(2);
	len = fread(buf, 1, (size_t)sb.st_size, f);
	if (ferror(f) || len != (size_t)sb.st_size) {
		fprintf(stderr, "replay: %s: short read\n", path);
		exit(2);
	}
	fclose(f);
	/* Names the input before a crash report, on stdout (stderr gets the
	 * project's log lines). */
	printf("%s\n", path);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	inputs++;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path)
{
	struct dirent *de;
	struct stat sb;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;

	if (stat(path, &sb)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (!S_ISDIR(sb.st_mode)) {
		run_file(path);
		return;
	}
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				exit(2);
		}
		if (asprintf(&names[n++], "%s/%s", path, de->d_name) < 0)
			exit(2);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		run_path(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	printf("%lu inputs\n", inputs);
	return 0;
}
