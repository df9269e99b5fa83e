/* SPDX-License-Identifier: BSD-2-Clause */
/* Table-driven configuration: one table of options (flag name, environment
 * variable, type, bounds, default, help) drives command-line parsing, the
 * environment, the `key = value` config file and --help, so they never
 * disagree. Precedence: flag > environment > config file > default. A
 * repeatable option takes all its values from the one source that sets it
 * (environment: comma-separated). */
#ifndef KILN_CORE_CONFIG_H
#define KILN_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum config_type {
	CONFIG_STRING,          /* const char * */
	CONFIG_LIST,            /* struct config_list */
	CONFIG_U64,             /* uint64_t, in [min, max] */
	CONFIG_SIZE,            /* uint64_t bytes, K/M/G suffixes, in [min, max] */
	CONFIG_SECONDS,         /* double, in [min, max] */
	CONFIG_DURATION,        /* double seconds, s/m/h units, in [min, max] seconds */
	CONFIG_BOOL,            /* bool: a flag without value; env/file true|false|1|0 */
	CONFIG_CHOICE,          /* const char *, one of choices ("a|b|c") */
};

struct config_list {
	const char **items;
	size_t n;
};

struct config_option {
	const char *name;       /* long flag without "--"; also the file key */
	char short_name;        /* 0: none */
	enum config_type type;
	const char *arg;        /* value placeholder for --help ("URL") */
	const char *def;        /* default as text; NULL: unset */
	double min, max;        /* numeric bounds */
	const char *choices;    /* CONFIG_CHOICE: "text|json" */
	size_t offset;          /* where the value lives in the options struct */
	const char *help;
};

/* Environment variable of an option: KILN_ + upper-cased name, '-' -> '_',
 * plus 'S' for a repeatable option (--tag: KILN_TAGS). */
void config__env_name(const struct config_option *o, char *buf, size_t n);

/* Parses flags (argv[0] is the command name), the environment and the
 * file named by --config / KILN_CONFIG into opts. Strings point into argv,
 * the environment or memory owned by the config (kept until exit).
 * Returns 0, 1 when --help was given (help printed to stdout), or 2 after
 * printing one line naming the bad flag, variable or file line. Extra
 * non-option arguments are an error. */
int config__parse(const char *cmd, const struct config_option *table, size_t n,
		  void *opts, int argc, char **argv);
/* Frees the item arrays of opts' lists after a config__parse that returned
 * 0 (other returns free them); the lists are empty afterwards. */
void config__release(const struct config_option *table, size_t n, void *opts);
/* Prints the options part of --help: flag, value, help, default, env. */
void config__help(const struct config_option *table, size_t n, FILE *f);

#endif
