/* SPDX-License-Identifier: BSD-2-Clause */
/* core/log: lines from threads logging at once stay whole, in each format;
 * a message past the cap is cut but still one line. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

#define THREADS 4
#define LINES 400

static char path[64];
static int saved_stderr = -1;

/* stderr goes to a fresh file until restore_stderr */
static void capture_stderr(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/kiln-log.XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
	close(fd);
}

static void restore_stderr(void)
{
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	unlink(path);
	log_set_format(LOG_FORMAT_HUMAN);
	log_level = LOG_WARN;
}

TestSuite(log, .fini = restore_stderr);

static void *chatter(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < LINES; i++)
		log_msg(LOG_INFO, "thread %ld says \"line\" %d of a message long enough to be "
			"written in several pieces if it were written piecewise id=%ld n=%d",
			id, i, id, i);
	return NULL;
}

/* What stderr got since capture_stderr, NUL-terminated (at most cap - 1
 * bytes). */
static char *captured(size_t cap)
{
	FILE *in = fopen(path, "r");
	char *text = calloc(1, cap);
	size_t len;

	cr_assert(in && text);
	len = fread(text, 1, cap - 1, in);
	fclose(in);
	text[len] = '\0';
	return text;
}

/* Runs THREADS chatter threads in format f; returns the lines written. */
static char *log_from_threads(enum log_format f)
{
	pthread_t t[THREADS];

	capture_stderr();
	log_set_format(f);
	log_level = LOG_INFO;
	for (long i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, chatter, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return captured(1 << 22);
}

/* Every line matches the format's shape for one whole chatter message. */
static void check_whole_lines(char *text, const char *head, const char *tail)
{
	int lines = 0;

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save), lines++) {
		char *h = strstr(l, head), *tl = strstr(l, tail);

		cr_assert(h && tl && strstr(l, "says") && !strstr(tl + 1, tail),
			  "line %d is not one whole message: '%s'", lines, l);
	}
	cr_assert_eq(lines, THREADS * LINES);
	free(text);
}

Test(log, text_lines_stay_whole)
{
	check_whole_lines(log_from_threads(LOG_FORMAT_TEXT), "level=info msg=\"thread ",
			  "piecewise\" id=");
}

Test(log, json_lines_stay_whole)
{
	check_whole_lines(log_from_threads(LOG_FORMAT_JSON), "{\"time\":", "\"n\":\"");
}

Test(log, human_lines_stay_whole)
{
	check_whole_lines(log_from_threads(LOG_FORMAT_HUMAN), "kiln: info: thread ",
			  "piecewise id=");
}

Test(log, long_message_is_cut_to_one_line)
{
	char big[8192], *text;

	memset(big, '"', sizeof(big) - 1);	/* every character escaped */
	big[sizeof(big) - 1] = '\0';
	capture_stderr();
	log_set_format(LOG_FORMAT_TEXT);
	log_msg(LOG_ERROR, "%s", big);
	log_msg(LOG_ERROR, "after");
	text = captured(1 << 16);
	cr_assert_not_null(strchr(text, '\n'));
	cr_assert_not_null(strstr(strchr(text, '\n') + 1, "msg=\"after\""),
			   "the line after a cut one is whole: '%s'", strchr(text, '\n') + 1);
	free(text);
}
