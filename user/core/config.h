/* SPDX-License-Identifier: BSD-2-Clause */
/* Table-driven configuration: one table of options (flag name, environment
 * variable, type, bounds, default, help) drives command-line parsing, the
 * environment, the `key = value` config file, --help and the option tables
 * of docs/options.md, so they never disagree. Precedence: flag >
 * environment > config file > default. A repeatable option takes all its
 * values from the one source that sets it (environment: comma-separated).
 *
 * Every command (agent, record, view, diff) describes itself with one
 * struct config_command. Rows are written with the typed CONFIG_ROW_*
 * macros, which check at compile time that the field has the row's C type
 * and record its width, so an option lands directly in a stage's own
 * options struct (sampler_opts.frequency is an unsigned, metadata_opts'
 * lists are an items pointer beside a count). Rows two commands share are
 * macros expanding to rows (user/options.h). */
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
	CONFIG_COUNT,           /* unsigned: how often the flag was given (-v -v);
				 * env/file: the number */
};

/* Row flags. */
#define CONFIG_ZERO_AUTO   0x1u /* numeric: 0 ("pick for me") besides [min, max] */
#define CONFIG_SPLIT_LIST  0x2u /* list: items at offset, size_t count at count_offset */
#define CONFIG_NANOSECONDS 0x4u /* duration/seconds: stored as uint64_t nanoseconds */
#define CONFIG_OCTAL       0x8u /* numeric: written and shown in octal (file modes) */

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
	/* Set by the CONFIG_ROW_* macros; 0 in a hand-written row keeps the
	 * plain meaning (a uint64_t field, a struct config_list). */
	unsigned char width;    /* CONFIG_U64/SIZE/COUNT: bytes of the unsigned field */
	unsigned flags;         /* CONFIG_ZERO_AUTO, ... */
	size_t count_offset;    /* CONFIG_SPLIT_LIST */
};

/* Compile-time check that field F of T has one of the listed types: a
 * char array of size -1 does not compile. Evaluates to 0. */
#define CONFIG__IS(T, F, ...) \
	(0 * sizeof(char[_Generic(((T *)0)->F, __VA_ARGS__, default: -1)]))
#define CONFIG__UNSIGNED(T, F) \
	CONFIG__IS(T, F, unsigned int: 1, unsigned long: 1, unsigned long long: 1)
#define CONFIG__OFF(T, F, ...) (offsetof(T, F) + CONFIG__IS(T, F, __VA_ARGS__))
#define CONFIG__WIDTH(T, F) ((unsigned char)sizeof(((T *)0)->F))

/* Typed rows: T the options struct, F the field (a member path such as
 * pipe.sampler.frequency), NAME the long flag, SH the short one (0: none),
 * ARG the value placeholder, DEF the default as text (NULL: unset). */
#define CONFIG_ROW_U64(T, F, NAME, SH, ARG, DEF, MIN, MAX, HELP) \
	{ .name = NAME, .short_name = SH, .type = CONFIG_U64, .arg = ARG, .def = DEF, \
	  .min = MIN, .max = MAX, .offset = offsetof(T, F) + CONFIG__UNSIGNED(T, F), \
	  .width = CONFIG__WIDTH(T, F), .help = HELP }
/* As CONFIG_ROW_U64; 0 also accepted, meaning "derive it" (the help says how). */
#define CONFIG_ROW_U64_AUTO(T, F, NAME, ARG, MIN, MAX, HELP) \
	{ .name = NAME, .type = CONFIG_U64, .arg = ARG, .def = "0", .min = MIN, .max = MAX, \
	  .offset = offsetof(T, F) + CONFIG__UNSIGNED(T, F), .width = CONFIG__WIDTH(T, F), \
	  .flags = CONFIG_ZERO_AUTO, .help = HELP }
/* A file mode: an unsigned field, the value in octal ("0640"), in
 * [MIN, MAX] (give them as octal C literals). */
#define CONFIG_ROW_MODE(T, F, NAME, DEF, MIN, MAX, HELP) \
	{ .name = NAME, .type = CONFIG_U64, .arg = "MODE", .def = DEF, .min = MIN, .max = MAX, \
	  .offset = offsetof(T, F) + CONFIG__UNSIGNED(T, F), .width = CONFIG__WIDTH(T, F), \
	  .flags = CONFIG_OCTAL, .help = HELP }
#define CONFIG_ROW_SIZE(T, F, NAME, ARG, DEF, MIN, MAX, HELP) \
	{ .name = NAME, .type = CONFIG_SIZE, .arg = ARG, .def = DEF, .min = MIN, .max = MAX, \
	  .offset = offsetof(T, F) + CONFIG__UNSIGNED(T, F), .width = CONFIG__WIDTH(T, F), \
	  .help = HELP }
#define CONFIG_ROW_SECONDS(T, F, NAME, SH, ARG, DEF, MIN, MAX, HELP) \
	{ .name = NAME, .short_name = SH, .type = CONFIG_SECONDS, .arg = ARG, .def = DEF, \
	  .min = MIN, .max = MAX, .offset = CONFIG__OFF(T, F, double: 1), .help = HELP }
#define CONFIG_ROW_DURATION(T, F, NAME, DEF, MIN, MAX, HELP) \
	{ .name = NAME, .type = CONFIG_DURATION, .arg = "DURATION", .def = DEF, .min = MIN, \
	  .max = MAX, .offset = CONFIG__OFF(T, F, double: 1), .help = HELP }
/* A duration the stage keeps as uint64_t nanoseconds. */
#define CONFIG_ROW_DURATION_NS(T, F, NAME, DEF, MIN, MAX, HELP) \
	{ .name = NAME, .type = CONFIG_DURATION, .arg = "DURATION", .def = DEF, .min = MIN, \
	  .max = MAX, .offset = CONFIG__OFF(T, F, unsigned long: 1, unsigned long long: 1), \
	  .width = CONFIG__WIDTH(T, F), .flags = CONFIG_NANOSECONDS, .help = HELP }
#define CONFIG_ROW_BOOL(T, F, NAME, SH, HELP) \
	{ .name = NAME, .short_name = SH, .type = CONFIG_BOOL, .def = "false", \
	  .offset = CONFIG__OFF(T, F, _Bool: 1), .help = HELP }
#define CONFIG_ROW_COUNT(T, F, NAME, SH, HELP) \
	{ .name = NAME, .short_name = SH, .type = CONFIG_COUNT, .min = 0, .max = 16, \
	  .offset = CONFIG__OFF(T, F, unsigned int: 1), .width = CONFIG__WIDTH(T, F), \
	  .help = HELP }
#define CONFIG_ROW_STRING(T, F, NAME, SH, ARG, DEF, HELP) \
	{ .name = NAME, .short_name = SH, .type = CONFIG_STRING, .arg = ARG, .def = DEF, \
	  .offset = CONFIG__OFF(T, F, const char *: 1), .help = HELP }
#define CONFIG_ROW_CHOICE(T, F, NAME, ARG, DEF, CHOICES, HELP) \
	{ .name = NAME, .type = CONFIG_CHOICE, .arg = ARG, .def = DEF, .choices = CHOICES, \
	  .offset = CONFIG__OFF(T, F, const char *: 1), .help = HELP }
/* A repeatable option into an items pointer (const char *const * or
 * const char **) beside its size_t count, as the stages keep lists. */
#define CONFIG_ROW_LIST(T, ITEMS, COUNT, NAME, SH, ARG, HELP) \
	{ .name = NAME, .short_name = SH, .type = CONFIG_LIST, .arg = ARG, \
	  .offset = CONFIG__OFF(T, ITEMS, const char *const *: 1, const char **: 1), \
	  .flags = CONFIG_SPLIT_LIST, \
	  .count_offset = CONFIG__OFF(T, COUNT, unsigned long: 1), .help = HELP }

/* Where a command's non-option arguments may stand. */
enum config_args {
	CONFIG_ARGS_NONE,       /* none: an argument is an error */
	CONFIG_ARGS_ANYWHERE,   /* among the options (kiln view a.pb.gz -o x.html) */
	CONFIG_ARGS_TAIL,       /* the first one ends the options (record's COMMAND) */
};

/* One command: its rows and the text of its --help around them. */
struct config_command {
	const char *name;               /* "record": messages say "kiln record: ..." */
	const char *synopsis;           /* after "Usage: kiln NAME " */
	const char *about;              /* --help before "Options:", '\n'-terminated lines */
	const char *notes;              /* --help after the options (exit status, ...) */
	const struct config_option *rows;
	size_t nrows;
	enum config_args args;
	bool env;                       /* read KILN_* variables (agent, record) */
};

#define CONFIG_ROWS(rows) (rows), (sizeof(rows) / sizeof((rows)[0]))

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
/* config__parse for a command: the same contract, plus its arguments
 * (c->args) into *args (pointing into argv; items freed by
 * config__release_command). "--" ends the options. Short flags may be
 * clustered as with getopt (-qd 10, -vv, -d10). */
int config__parse_command(const struct config_command *c, void *opts, int argc,
			  char **argv, struct config_list *args);
void config__release_command(const struct config_command *c, void *opts,
			     struct config_list *args);
/* The whole --help of a command: usage line, about, options (with -h),
 * notes. */
void config__usage(const struct config_command *c, FILE *f);
/* The command's section of docs/options.md: a Markdown table of flag,
 * environment variable, default, bound and meaning. */
void config__markdown(const struct config_command *c, FILE *f);

/* Frees the item arrays of opts' lists after a config__parse that returned
 * 0 (other returns free them); the lists are empty afterwards. */
void config__release(const struct config_option *table, size_t n, void *opts);
/* Prints the options part of --help: flag, value, help, default, env. */
void config__help(const struct config_option *table, size_t n, FILE *f);

#endif
