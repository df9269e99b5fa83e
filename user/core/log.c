// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <ctype.h>
#include <errno.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <jansson.h>

#include "core/log.h"

enum log_level log_level = LOG_WARN;
static enum log_format log_format;

/* a message longer than this is cut */
#define LOG_MSG_MAX 2048

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_set_format(enum log_format f)
{
	log_format = f;
}

/* Where the message's trailing key=value fields start (the first " key="
 * with key in [a-z_]), or the end. */
static char *fields_start(char *msg)
{
	for (char *s = strchr(msg, ' '); s; s = strchr(s + 1, ' ')) {
		char *k = s + 1;

		while (islower((unsigned char)*k) || *k == '_')
			k++;
		if (k > s + 1 && *k == '=')
			return s;
	}
	return msg + strlen(msg);
}

static void timestamp(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (ts.tv_nsec / 1000000) % 1000);
}

/* Adds "k=v k2=\"quoted v\"" fields to a JSON object. */
static void json_fields(json_t *o, char *f)
{
	while (*f) {
		char *k, *v, *eq;

		while (*f == ' ')
			f++;
		k = f;
		eq = strchr(k, '=');
		if (!eq)
			break;
		*eq = '\0';
		v = eq + 1;
		if (*v == '"') {
			char *end = strchr(++v, '"');

			f = end ? end + 1 : v + strlen(v);
			if (end)
				*end = '\0';
		} else {
			f = v + strcspn(v, " ");
			if (*f)
				*f++ = '\0';
		}
		json_object_set_new(o, k, json_string(v));
	}
}

/* Writes one whole line with one write(2): stderr is unbuffered, and the
 * agent's threads log at once; a line written piecewise interleaves with
 * theirs. */
static void put_line(char *line, size_t len, size_t cap)
{
	if (len >= cap) {	/* cut: still one line */
		len = cap - 1;
		line[len - 1] = '\n';
	}
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, line, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		line += n;
		len -= (size_t)n;
	}
}

static void emit(enum log_level level, char *buf)
{
	/* the message at most doubled by escapes, plus the fields and prefix */
	char ts[80], line[2 * LOG_MSG_MAX + 256], *fields;
	size_t n;
	json_t *o;
	char *json;

	if (log_format == LOG_FORMAT_HUMAN) {
		n = (size_t)snprintf(line, sizeof(line), "kiln: %s: %s\n", level_names[level], buf);
		put_line(line, n, sizeof(line));
		return;
	}
	timestamp(ts, sizeof(ts));
	fields = fields_start(buf);
	if (log_format == LOG_FORMAT_TEXT) {
		n = (size_t)snprintf(line, sizeof(line), "time=%s level=%s msg=\"", ts,
				     level_names[level]);
		for (char *c = buf; c < fields && n + 2 < sizeof(line); c++) {
			if (*c == '"' || *c == '\\')
				line[n++] = '\\';
			line[n++] = *c;
		}
		n += (size_t)snprintf(line + n, sizeof(line) - n, "\"%s\n", fields);
		put_line(line, n, sizeof(line));
		return;
	}
	o = json_object();
	json_object_set_new(o, "time", json_string(ts));
	json_object_set_new(o, "level", json_string(level_names[level]));
	json_object_set_new(o, "msg", json_stringn(buf, (size_t)(fields - buf)));
	json_fields(o, fields);
	json = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	n = (size_t)snprintf(line, sizeof(line), "%s\n", json ? json : "{}");
	put_line(line, n, sizeof(line));
	free(json);
	json_decref(o);
}

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char buf[LOG_MSG_MAX];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	/* libbpf ends its lines with '\n'; ours do not. */
	while (n > 0 && (size_t)n < sizeof(buf) && buf[n - 1] == '\n')
		buf[--n] = '\0';
	emit(level, buf);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level ours = level == LIBBPF_WARN ? LOG_WARN :
			      level == LIBBPF_INFO ? LOG_DEBUG : LOG_DEBUG;
	char *text;
	va_list again;
	int n;

	/* libbpf's info chatter is debug for us; its warnings surface only
	 * with -v because start-up checks explain failures in one sentence. */
	if (level == LIBBPF_WARN && log_level < LOG_INFO)
		return 0;
	if (ours > log_level)
		return 0;
	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	/* a verifier's log comes whole in one message: a line each, so the
	 * end, where the verifier says why, is not cut */
	if (n < LOG_MSG_MAX || !(text = malloc((size_t)n + 1))) {
		log_vmsg(ours, fmt, ap);
		return 0;
	}
	vsnprintf(text, (size_t)n + 1, fmt, ap);
	for (char *line = text, *end; *line; line = end) {
		end = strchrnul(line, '\n');
		if (*end)
			*end++ = '\0';
		log_msg(ours, "%s", line);
	}
	free(text);
	return 0;
}

void log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}
