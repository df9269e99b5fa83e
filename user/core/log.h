/* SPDX-License-Identifier: BSD-2-Clause */
/* One logging family for the whole agent, libbpf's output included.
 * Messages name their object ("pid 42: ...") and never end in '\n'. */
#ifndef KILN_CORE_LOG_H
#define KILN_CORE_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_level;

/* Line formats. HUMAN (the default, for commands run by people):
 * "kiln: warn: message". TEXT (logfmt, for the agent): time=... level=...
 * msg="..." then the message's trailing key=value fields. JSON: the same
 * as one object per line. Messages put their fields last: "push failed
 * status=503 retry_in=2.0s". */
enum log_format { LOG_FORMAT_HUMAN = 0, LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

void log_set_format(enum log_format f);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Routes libbpf's messages into log_msg (warnings as warn, debug as debug). */
void log_route_libbpf(void);
int log_level_parse(const char *s, enum log_level *out);

#define pr_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)  do { if (log_level >= LOG_WARN)  log_msg(LOG_WARN, __VA_ARGS__); } while (0)
#define pr_info(...)  do { if (log_level >= LOG_INFO)  log_msg(LOG_INFO, __VA_ARGS__); } while (0)
#define pr_debug(...) do { if (log_level >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
