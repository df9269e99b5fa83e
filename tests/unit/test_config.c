// SPDX-License-Identifier: BSD-2-Clause
/* The option table: flags, environment and config file, their precedence,
 * and the one-line errors. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"

struct opts {
	uint64_t hz;
	double interval;
	uint64_t bytes;
	const char *server;
	const char *format;
	bool insecure;
	struct config_list tags;
	const char *config;
	double ttl;
};

#define T struct opts
static const struct config_option table[] = {
	CONFIG_ROW_U64(T, hz, "frequency", 'F', "HZ", "97", 1, 1000, "rate"),
	CONFIG_ROW_SECONDS(T, interval, "interval", 0, "S", "10", 1, 3600, "interval"),
	CONFIG_ROW_SIZE(T, bytes, "queue-max-bytes", "SIZE", "64M", 1024, 1ull << 40, "q"),
	CONFIG_ROW_STRING(T, server, "server", 0, "URL", NULL, "server"),
	CONFIG_ROW_CHOICE(T, format, "log-format", "F", "text", "text|json", "fmt"),
	CONFIG_ROW_BOOL(T, insecure, "tls-insecure-skip-verify", 0, "x"),
	CONFIG_ROW_LIST(T, tags.items, tags.n, "tag", 0, "K=V", "tags"),
	CONFIG_ROW_STRING(T, config, "config", 'c', "FILE", NULL, "file"),
	CONFIG_ROW_DURATION(T, ttl, "cache-ttl", "10m", 0, 86400, "ttl"),
};
#undef T
#define N (sizeof(table) / sizeof(table[0]))

static void clean_env(void)
{
	const char *vars[] = { "KILN_FREQUENCY", "KILN_INTERVAL", "KILN_QUEUE_MAX_BYTES",
			       "KILN_SERVER", "KILN_LOG_FORMAT", "KILN_TLS_INSECURE_SKIP_VERIFY",
			       "KILN_TAGS", "KILN_CONFIG", "KILN_CACHE_TTL" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static int parse(struct opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	return config__parse("test", table, N, o, argc, argv);
}

/* A temporary file holding text; the caller unlinks and frees the path. */
static char *write_tmp(const char *text)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/kiln-config-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return strdup(path);
}

static void remove_tmp(char *path)
{
	unlink(path);
	free(path);
}

Test(config, defaults, .init = clean_env)
{
	struct opts o;
	char *argv[] = { "agent" };

	cr_assert_eq(parse(&o, 1, argv), 0);
	cr_assert_eq(o.hz, 97);
	cr_assert_float_eq(o.interval, 10.0, 1e-9);
	cr_assert_eq(o.bytes, 64ull << 20);
	cr_assert_null(o.server);
	cr_assert_str_eq(o.format, "text");
	cr_assert(!o.insecure);
	cr_assert_eq(o.tags.n, 0);
	cr_assert_float_eq(o.ttl, 600.0, 1e-9);         /* "10m" */
	config__release(table, N, &o);
}

Test(config, flags_forms, .init = clean_env)
{
	struct opts o;
	char *argv[] = { "agent", "-F", "49", "--interval=2.5", "--server", "http://x:4040",
			 "--tls-insecure-skip-verify", "--tag", "a=1", "--tag=b=2",
			 "--queue-max-bytes", "1G", "--cache-ttl", "90s" };

	cr_assert_eq(parse(&o, 14, argv), 0);
	cr_assert_eq(o.hz, 49);
	cr_assert_float_eq(o.interval, 2.5, 1e-9);
	cr_assert_str_eq(o.server, "http://x:4040");
	cr_assert(o.insecure);
	cr_assert_eq(o.tags.n, 2);
	cr_assert_str_eq(o.tags.items[0], "a=1");
	cr_assert_str_eq(o.tags.items[1], "b=2");
	cr_assert_eq(o.bytes, 1ull << 30);
	cr_assert_float_eq(o.ttl, 90.0, 1e-9);
	config__release(table, N, &o);
	cr_assert_eq(o.tags.n, 0);
	cr_assert_null(o.tags.items);
}

Test(config, precedence_flag_env_file, .init = clean_env)
{
	struct opts o;
	char *path = write_tmp("# comment\nfrequency = 11\ninterval = 3\nserver = \"http://file\"\n"
			       "tag = f=1\ntag = f=2\nlog-format = json\n");
	char *argv[] = { "agent", "--config", path, "--frequency", "33" };

	setenv("KILN_INTERVAL", "4", 1);
	setenv("KILN_TAGS", "e=1, e=2,e=3", 1);
	cr_assert_eq(parse(&o, 5, argv), 0);
	cr_assert_eq(o.hz, 33);                         /* flag beats file */
	cr_assert_float_eq(o.interval, 4.0, 1e-9);      /* env beats file */
	cr_assert_str_eq(o.server, "http://file");      /* file beats default */
	cr_assert_str_eq(o.format, "json");
	cr_assert_eq(o.tags.n, 3);                      /* env list replaces the file's */
	cr_assert_str_eq(o.tags.items[1], "e=2");
	config__release(table, N, &o);
	remove_tmp(path);
}

Test(config, config_from_env, .init = clean_env)
{
	struct opts o;
	char *path = write_tmp("frequency = 7\n");
	char *argv[] = { "agent" };

	setenv("KILN_CONFIG", path, 1);
	cr_assert_eq(parse(&o, 1, argv), 0);
	cr_assert_eq(o.hz, 7);
	config__release(table, N, &o);
	remove_tmp(path);
}

Test(config, help, .init = clean_env)
{
	struct opts o;
	char *argv[] = { "agent", "--frequency", "5", "--help" };

	cr_assert_eq(parse(&o, 4, argv), 1);
}

/* config__parse's status, with what it wrote to stderr in msg. */
static int parse_stderr(struct opts *o, int argc, char **argv, char *msg, size_t size)
{
	FILE *tmp = tmpfile();
	int saved, status;
	size_t len;

	cr_assert_not_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fileno(tmp), STDERR_FILENO), 0);
	status = parse(o, argc, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	len = fread(msg, 1, size - 1, tmp);
	msg[len] = '\0';
	fclose(tmp);
	return status;
}

/* argv is refused (status 2) with one line "kiln test: ..." naming source
 * (the flag, variable or file:line) and, when not NULL, the bad value as
 * given. */
static void check_error(int argc, char **argv, const char *source, const char *value)
{
	struct opts o;
	char msg[1024], quoted[256];
	int status = parse_stderr(&o, argc, argv, msg, sizeof(msg));

	cr_assert_eq(status, 2, "accepted, status %d: %s %s", status, source,
		     value ? value : "");
	cr_assert(!strncmp(msg, "kiln test: ", 11), "not the command's message: '%s'", msg);
	cr_assert(strchr(msg, '\n') == msg + strlen(msg) - 1, "not one line: '%s'", msg);
	cr_assert_not_null(strstr(msg, source), "'%s' does not name %s", msg, source);
	if (value) {
		snprintf(quoted, sizeof(quoted), "'%s'", value);
		cr_assert_not_null(strstr(msg, quoted), "'%s' does not show %s", msg, quoted);
	}
}

Test(config, errors_name_the_source, .init = clean_env)
{
	char *bad_flag[] = { "agent", "--frequency", "5000" };
	char *bad_short[] = { "agent", "-F", "0" };
	char *twice[] = { "agent", "--frequency", "5", "--frequency=5000" };
	char *unknown[] = { "agent", "--nope=1" };
	char *missing[] = { "agent", "--server" };
	char *choice[] = { "agent", "--log-format", "xml" };
	char *boolean[] = { "agent", "--tls-insecure-skip-verify=maybe" };
	char *size[] = { "agent", "--queue-max-bytes", "12Q" };
	char *stray[] = { "agent", "stray" };
	char *none[] = { "agent" };

	check_error(3, bad_flag, "for --frequency:", "5000");
	check_error(3, bad_short, "for --frequency:", "0");
	check_error(4, twice, "for --frequency:", "5000");
	check_error(2, unknown, "unknown option '--nope'", NULL);
	check_error(2, missing, "--server needs a value", NULL);
	check_error(3, choice, "for --log-format:", "xml");
	check_error(2, boolean, "for --tls-insecure-skip-verify:", "maybe");
	check_error(3, size, "for --queue-max-bytes:", "12Q");
	check_error(2, stray, "unexpected argument", "stray");
	setenv("KILN_INTERVAL", "0.5", 1);
	check_error(1, none, "for KILN_INTERVAL:", "0.5");
	unsetenv("KILN_INTERVAL");
	setenv("KILN_TLS_INSECURE_SKIP_VERIFY", "perhaps", 1);
	check_error(1, none, "for KILN_TLS_INSECURE_SKIP_VERIFY:", "perhaps");
	/* A flag beats the bad variable: no error. */
	{
		char *flag[] = { "agent", "--tls-insecure-skip-verify=false" };
		struct opts o;

		cr_assert_eq(parse(&o, 2, flag), 0);
	}
}

Test(config, durations, .init = clean_env)
{
	struct opts o;
	char *path = write_tmp("cache-ttl = 2h\n");
	char *from_file[] = { "agent", "-c", path };
	char *never[] = { "agent", "--cache-ttl", "0" };
	char *too_long[] = { "agent", "--cache-ttl", "25h" };
	char *bad_unit[] = { "agent", "--cache-ttl", "10d" };
	char *none[] = { "agent" };

	cr_assert_eq(parse(&o, 3, from_file), 0);
	cr_assert_float_eq(o.ttl, 7200.0, 1e-9);
	setenv("KILN_CACHE_TTL", "1.5h", 1);            /* env beats file */
	cr_assert_eq(parse(&o, 3, from_file), 0);
	cr_assert_float_eq(o.ttl, 5400.0, 1e-9);
	setenv("KILN_CACHE_TTL", "45", 1);              /* plain seconds */
	cr_assert_eq(parse(&o, 1, none), 0);
	cr_assert_float_eq(o.ttl, 45.0, 1e-9);
	cr_assert_eq(parse(&o, 3, never), 0);
	cr_assert_float_eq(o.ttl, 0.0, 1e-9);
	check_error(3, too_long, "for --cache-ttl:", "25h");
	check_error(3, bad_unit, "for --cache-ttl:", "10d");
	remove_tmp(path);
}

/* check_error for a config file holding text: the message names
 * file:line, with "(key)" for a bad value. */
static void check_file_error(const char *text, const char *line_key, const char *value)
{
	char *path = write_tmp(text);
	char *argv[] = { "agent", "-c", path };
	char source[128];

	snprintf(source, sizeof(source), "%s:%s", path, line_key);
	check_error(3, argv, source, value);
	remove_tmp(path);
}

Test(config, file_errors, .init = clean_env)
{
	char *missing[] = { "agent", "-c", "/nonexistent/kiln.conf" };
	char *none[] = { "agent" };

	check_file_error("frequency 5\n", "1: want 'key = value'", "frequency 5");
	check_file_error("# settings\n\nnope = 1\n", "3: unknown setting", "nope");
	check_file_error("frequency = 5\nconfig = /etc/other\n", "2: unknown setting", "config");
	check_file_error("\n\ninterval = soon\n", "3 (interval)", "soon");
	/* The value used is the last one: its line is named. */
	check_file_error("frequency = 5\n# again\nfrequency = 5000\n", "3 (frequency)", "5000");
	check_file_error("log-format = \"xml\"\n", "1 (log-format)", "xml");
	check_error(3, missing, "--config /nonexistent/kiln.conf: No such file", NULL);
	setenv("KILN_CONFIG", "/nonexistent/kiln.conf", 1);
	check_error(1, none, "KILN_CONFIG /nonexistent/kiln.conf: No such file", NULL);
	/* A file named by the environment names its own lines. */
	{
		char *path = write_tmp("frequency = 0\n");
		char source[128];

		setenv("KILN_CONFIG", path, 1);
		snprintf(source, sizeof(source), "for %s:1 (frequency):", path);
		check_error(1, none, source, "0");
		remove_tmp(path);
	}
}

Test(config, messages, .init = cr_redirect_stderr)
{
	struct opts o;
	char *path = write_tmp("\n\ninterval = soon\n");
	char *argv[] = { "agent", "-c", path };
	char want[256];

	clean_env();
	cr_assert_eq(parse(&o, 3, argv), 2);
	fflush(stderr);
	snprintf(want, sizeof(want),
		 "kiln test: invalid value 'soon' for %s:3 (interval): want seconds in [1, 3600]\n",
		 path);
	cr_assert_stderr_eq_str(want);
	remove_tmp(path);
}

Test(config, duration_message, .init = cr_redirect_stderr)
{
	struct opts o;
	char *argv[] = { "agent", "--cache-ttl", "10y" };

	clean_env();
	cr_assert_eq(parse(&o, 3, argv), 2);
	fflush(stderr);
	cr_assert_stderr_eq_str("kiln test: invalid value '10y' for --cache-ttl: want a duration (seconds, or with a unit: s, m, h) in [0, 86400] seconds\n");
}

Test(config, env_names)
{
	char buf[64];

	config__env_name(&table[5], buf, sizeof(buf));
	cr_assert_str_eq(buf, "KILN_TLS_INSECURE_SKIP_VERIFY");
	config__env_name(&table[6], buf, sizeof(buf));
	cr_assert_str_eq(buf, "KILN_TAGS");
}

/* A command's table: typed rows into a stage-like struct (32-bit and
 * size_t fields, a split list, nanoseconds), arguments, clusters. */
struct stage {
	uint32_t entries;
	size_t limit;
	uint64_t ttl_ns;
	const char *const *items;
	size_t nitems;
	unsigned verbose;
	bool quiet;
	const char *out;
};

#define S struct stage
static const struct config_option stage_rows[] = {
	CONFIG_ROW_U64_AUTO(S, entries, "entries", "N", 1024, 1 << 24, "e"),
	CONFIG_ROW_U64(S, limit, "limit", 'l', "N", "64", 64, 1 << 22, "l"),
	CONFIG_ROW_DURATION_NS(S, ttl_ns, "ttl", "10m", 0, 604800, "t"),
	CONFIG_ROW_LIST(S, items, nitems, "item", 'i', "X", "i"),
	CONFIG_ROW_COUNT(S, verbose, "verbose", 'v', "v"),
	CONFIG_ROW_BOOL(S, quiet, "quiet", 'q', "q"),
	CONFIG_ROW_STRING(S, out, "out", 'o', "FILE", NULL, "o"),
};
#undef S

static const struct config_command tail_cmd = {
	.name = "rec", .synopsis = "[OPTIONS] [-- COMMAND]", .rows = CONFIG_ROWS(stage_rows),
	.args = CONFIG_ARGS_TAIL,
};

Test(config_command, typed_rows_clusters_and_tail_arguments)
{
	struct stage s = { 0 };
	struct config_list args;
	char *argv[] = { "rec", "-qvv", "-l128", "-o", "x.pb.gz", "--entries", "0", "-i", "a",
			 "-ib", "--ttl", "90s", "sleep", "-v", "1" };

	cr_assert_eq(config__parse_command(&tail_cmd, &s, 15, argv, &args), 0);
	cr_assert(s.quiet);
	cr_assert_eq(s.verbose, 2);
	cr_assert_eq(s.entries, 0);
	cr_assert_eq(s.limit, 128);
	cr_assert_str_eq(s.out, "x.pb.gz");
	cr_assert_eq(s.nitems, 2);
	cr_assert_str_eq(s.items[1], "b");
	cr_assert_eq(s.ttl_ns, 90000000000ull);
	cr_assert_eq(args.n, 3);                /* the first argument ends the options */
	cr_assert_str_eq(args.items[1], "-v");
	config__release_command(&tail_cmd, &s, &args);
	cr_assert_null(s.items);
	cr_assert_eq(s.nitems, 0);
}

static const struct config_command any_cmd = {
	.name = "view", .synopsis = "FILE...", .rows = CONFIG_ROWS(stage_rows),
	.args = CONFIG_ARGS_ANYWHERE,
};

Test(config_command, arguments_anywhere_bounds_and_no_environment, .init = cr_redirect_stderr)
{
	struct stage s = { 0 };
	struct config_list args;
	char *ok[] = { "view", "a.folded", "-o", "x.html", "b.folded", "--", "-c.folded" };
	char *auto_only[] = { "view", "--entries", "5" };
	char *narrow[] = { "view", "--limit", "63" };

	setenv("KILN_OUT", "from-env", 1);      /* any_cmd reads no environment */
	cr_assert_eq(config__parse_command(&any_cmd, &s, 7, ok, &args), 0);
	cr_assert_str_eq(s.out, "x.html");
	cr_assert_eq(args.n, 3);
	cr_assert_str_eq(args.items[2], "-c.folded");
	config__release_command(&any_cmd, &s, &args);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(config__parse_command(&any_cmd, &s, 3, auto_only, &args), 2);
	cr_assert_eq(config__parse_command(&any_cmd, &s, 3, narrow, &args), 2);
	cr_assert_eq(config__parse_command(&tail_cmd, &s, 3, ok, NULL), 2);
	unsetenv("KILN_OUT");
}
