#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>

#include "core/log.h"

enum log_level log_level = LOG_WARN;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char buf[2048];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	/* libbpf ends its lines with '\n'; ours do not. */
	while (n > 0 && (size_t)n < sizeof(buf) && buf[n - 1] == '\n')
		buf[--n] = '\0';
	fprintf(stderr, "kiln: %s: %s\n", level_names[level], buf);
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

	/* libbpf's info chatter is debug for us; its warnings surface only
	 * with -v because start-up checks explain failures in one sentence. */
	if (level == LIBBPF_WARN && log_level < LOG_INFO)
		return 0;
	if (ours > log_level)
		return 0;
	log_vmsg(ours, fmt, ap);
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
