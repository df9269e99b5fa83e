// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/parse.h"

enum source { SRC_DEFAULT = 0, SRC_FILE, SRC_ENV, SRC_FLAG };

/* The values one option received from its highest source so far. */
struct raw {
	enum source src;
	const char **vals;
	size_t n;
	int line;               /* SRC_FILE: line number of the last value */
};

struct parse_state {
	const char *cmd;
	enum config_args args_mode;
	struct config_list *args;       /* non-option arguments, NULL: none allowed */
	const struct config_option *table;
	size_t n;
	struct raw *raw;
	const char *file;
	char file_from[128];    /* what named the file: --config, KILN_CONFIG */
};

/* Config-file text and copies of environment lists live until exit (the
 * options struct points into them); statics keep them reachable. The
 * lists' item arrays belong to the options struct: config__release. */
static char *file_text;
static char **env_copies;
static size_t n_env_copies;

void config__env_name(const struct config_option *o, char *buf, size_t n)
{
	size_t i = 0;

	i = (size_t)snprintf(buf, n, "KILN_");
	for (const char *s = o->name; *s && i + 1 < n; s++)
		buf[i++] = *s == '-' ? '_' : (char)toupper((unsigned char)*s);
	/* A repeatable option's variable holds a list: plural (KILN_TAGS). */
	if (o->type == CONFIG_LIST && i + 1 < n)
		buf[i++] = 'S';
	buf[i < n ? i : n - 1] = '\0';
}

static int add_value(struct raw *r, enum source src, const char *v, int line)
{
	const char **vals;

	if (src > r->src) {             /* a higher source replaces, never merges */
		r->src = src;
		r->n = 0;
		r->line = line;
	} else if (src < r->src) {
		return 0;
	}
	vals = realloc(r->vals, (r->n + 1) * sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	vals[r->n++] = v;
	r->vals = vals;
	/* The last value is the one used: an error names its line. */
	r->line = line;
	return 0;
}

static const struct config_option *find_long(const struct parse_state *ps, const char *name,
					     size_t len)
{
	for (size_t i = 0; i < ps->n; i++)
		if (strlen(ps->table[i].name) == len && strncmp(ps->table[i].name, name, len) == 0)
			return &ps->table[i];
	return NULL;
}

static const struct config_option *find_short(const struct parse_state *ps, char c)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->table[i].short_name && ps->table[i].short_name == c)
			return &ps->table[i];
	return NULL;
}

static void where(const struct parse_state *ps, const struct config_option *o,
		  const struct raw *r, char *buf, size_t n)
{
	char env[128];

	switch (r->src) {
	case SRC_FLAG:
		snprintf(buf, n, "--%s", o->name);
		break;
	case SRC_ENV:
		config__env_name(o, env, sizeof(env));
		snprintf(buf, n, "%s", env);
		break;
	case SRC_FILE:
		snprintf(buf, n, "%s:%d (%s)", ps->file, r->line, o->name);
		break;
	default:
		snprintf(buf, n, "the default of --%s", o->name);
	}
}

static int out_of_memory(const struct parse_state *ps)
{
	fprintf(stderr, "kiln %s: out of memory while reading the options\n", ps->cmd);
	return 2;
}

static int bad(const struct parse_state *ps, const struct config_option *o,
	       const struct raw *r, const char *value, const char *want)
{
	char w[256];

	where(ps, o, r, w, sizeof(w));
	fprintf(stderr, "kiln %s: invalid value '%s' for %s: %s\n", ps->cmd, value, w, want);
	return 2;
}

/* Stores u into an unsigned field of o->width bytes (0: uint64_t); -ERANGE
 * when it does not fit. */
static int store_unsigned(const struct config_option *o, char *field, uint64_t u)
{
	switch (o->width) {
	case 0:
	case 8:
		*(uint64_t *)field = u;
		return 0;
	case 4:
		if (u > UINT32_MAX)
			return -ERANGE;
		*(uint32_t *)field = (uint32_t)u;
		return 0;
	}
	return -ERANGE;         /* a row macro never makes another width */
}

static bool is_zero(const char *v)
{
	while (*v == '0')
		v++;
	return !*v;
}

static int convert(const struct parse_state *ps, const struct config_option *o,
		   const struct raw *r, void *opts)
{
	char *field = (char *)opts + o->offset;
	const char *v = r->n ? r->vals[r->n - 1] : NULL;
	char want[160];
	uint64_t u;
	double d;

	if (!v)
		return 0;
	switch (o->type) {
	case CONFIG_STRING:
		*(const char **)field = v;
		return 0;
	case CONFIG_LIST:
		if (o->flags & CONFIG_SPLIT_LIST) {
			*(const char ***)field = r->vals;
			*(size_t *)((char *)opts + o->count_offset) = r->n;
		} else {
			struct config_list *l = (struct config_list *)field;

			l->items = r->vals;
			l->n = r->n;
		}
		return 0;
	case CONFIG_COUNT:
		/* A flag counts its occurrences; env and file give the number. */
		if (r->src == SRC_FLAG)
			u = r->n;
		else if (parse_u64(v, (uint64_t)o->min, (uint64_t)o->max, &u))
			return bad(ps, o, r, v, "want a number of times");
		return store_unsigned(o, field, u) ? bad(ps, o, r, v, "too large") : 0;
	case CONFIG_U64:
		if ((o->flags & CONFIG_ZERO_AUTO) && is_zero(v) && *v) {
			u = 0;
		} else if (o->flags & CONFIG_OCTAL ?
			   parse_octal(v, (uint64_t)o->min, (uint64_t)o->max, &u) :
			   parse_u64(v, (uint64_t)o->min, (uint64_t)o->max, &u)) {
			if (o->flags & CONFIG_OCTAL)
				snprintf(want, sizeof(want), "want an octal mode in [%04llo, %04llo]",
					 (unsigned long long)o->min, (unsigned long long)o->max);
			else
				snprintf(want, sizeof(want), "want %san integer in [%.0f, %.0f]",
					 o->flags & CONFIG_ZERO_AUTO ? "0 (automatic) or " : "",
					 o->min, o->max);
			return bad(ps, o, r, v, want);
		}
		return store_unsigned(o, field, u) ? bad(ps, o, r, v, "too large") : 0;
	case CONFIG_SIZE:
		if (parse_size(v, (uint64_t)o->min, (uint64_t)o->max, &u)) {
			snprintf(want, sizeof(want), "want a size (K, M, G suffixes) in [%.0f, %.0f] bytes",
				 o->min, o->max);
			return bad(ps, o, r, v, want);
		}
		return store_unsigned(o, field, u) ? bad(ps, o, r, v, "too large") : 0;
	case CONFIG_SECONDS:
	case CONFIG_DURATION:
		if (o->type == CONFIG_SECONDS ? parse_seconds(v, o->min, o->max, &d) :
		    parse_duration(v, o->min, o->max, &d)) {
			snprintf(want, sizeof(want), o->type == CONFIG_SECONDS ?
				 "want seconds in [%g, %g]" :
				 "want a duration (seconds, or with a unit: s, m, h) in [%g, %g] seconds",
				 o->min, o->max);
			return bad(ps, o, r, v, want);
		}
		if (o->flags & CONFIG_NANOSECONDS)
			return store_unsigned(o, field, (uint64_t)(d * 1e9)) ?
			       bad(ps, o, r, v, "too large") : 0;
		*(double *)field = d;
		return 0;
	case CONFIG_BOOL:
		if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
			*(bool *)field = true;
		else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
			*(bool *)field = false;
		else
			return bad(ps, o, r, v, "want true or false");
		return 0;
	case CONFIG_CHOICE: {
		size_t len = strlen(v);

		for (const char *c = o->choices; c && *c;) {
			const char *bar = strchr(c, '|');
			size_t cl = bar ? (size_t)(bar - c) : strlen(c);

			if (cl == len && strncmp(c, v, len) == 0) {
				*(const char **)field = v;
				return 0;
			}
			c = bar ? bar + 1 : c + cl;
		}
		snprintf(want, sizeof(want), "want one of %s", o->choices);
		return bad(ps, o, r, v, want);
	}
	}
	return 0;
}

/* Splits an environment value of a repeatable option on commas. */
static int env_list(struct raw *r, const char *val)
{
	char *copy = strdup(val), *save = NULL, **kept;

	if (!copy)
		return -ENOMEM;
	kept = realloc(env_copies, (n_env_copies + 1) * sizeof(*kept));
	if (!kept) {
		free(copy);
		return -ENOMEM;
	}
	env_copies = kept;
	env_copies[n_env_copies++] = copy;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (*tok && add_value(r, SRC_ENV, tok, 0))
			return -ENOMEM;
	}
	return 0;               /* copy stays (env_copies): r->vals point into it */
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int read_file(struct parse_state *ps)
{
	FILE *f = fopen(ps->file, "re");
	size_t cap = 0, len = 0;
	int line = 0;

	if (!f) {
		fprintf(stderr, "kiln %s: %s %s: %s\n", ps->cmd, ps->file_from, ps->file,
			strerror(errno));
		return 2;
	}
	/* Bounded: a config file is small. */
	for (;;) {
		char *grown;

		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if (cap > (1u << 20)) {
				fclose(f);
				fprintf(stderr, "kiln %s: %s %s: larger than 1 MiB\n", ps->cmd,
					ps->file_from, ps->file);
				return 2;
			}
			grown = realloc(file_text, cap);
			if (!grown) {
				fclose(f);
				return out_of_memory(ps);
			}
			file_text = grown;
		}
		size_t got = fread(file_text + len, 1, 4096, f);

		len += got;
		if (got < 4096)
			break;
	}
	fclose(f);
	file_text[len] = '\0';
	for (char *l = file_text, *next; l; l = next) {
		char *eq, *key, *val;
		const struct config_option *o;

		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		line++;
		l = trim(l);
		if (!*l || *l == '#')
			continue;
		eq = strchr(l, '=');
		if (!eq) {
			fprintf(stderr, "kiln %s: %s:%d: want 'key = value', got '%s'\n", ps->cmd,
				ps->file, line, l);
			return 2;
		}
		*eq = '\0';
		key = trim(l);
		val = trim(eq + 1);
		if (strlen(val) >= 2 && val[0] == '"' && val[strlen(val) - 1] == '"') {
			val[strlen(val) - 1] = '\0';
			val++;
		}
		o = find_long(ps, key, strlen(key));
		if (!o || !strcmp(key, "config")) {
			fprintf(stderr, "kiln %s: %s:%d: unknown setting '%s'\n", ps->cmd, ps->file,
				line, key);
			return 2;
		}
		if (add_value(&ps->raw[o - ps->table], SRC_FILE, val, line))
			return out_of_memory(ps);
	}
	return 0;
}

/* A non-option argument: kept when the command takes arguments. 0, 2 or
 * -ENOMEM. */
static int add_arg(struct parse_state *ps, char *a)
{
	const char **items;

	if (!ps->args) {
		fprintf(stderr, "kiln %s: unexpected argument '%s' (try --help)\n", ps->cmd, a);
		return 2;
	}
	items = realloc(ps->args->items, (ps->args->n + 1) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	items[ps->args->n++] = a;
	ps->args->items = items;
	return 0;
}

/* One option o given as `shown`, its value val or (NULL) the next
 * argument. 0 or 2. */
static int take(struct parse_state *ps, const struct config_option *o, const char *shown,
		const char *val, int argc, char **argv, int *i)
{
	if (!val && (o->type == CONFIG_BOOL || o->type == CONFIG_COUNT))
		val = "true";
	if (!val) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "kiln %s: %s needs a value (%s)\n", ps->cmd, shown,
				o->arg ? o->arg : "VALUE");
			return 2;
		}
		val = argv[++*i];
	}
	if (add_value(&ps->raw[o - ps->table], SRC_FLAG, val, 0))
		return out_of_memory(ps);
	return 0;
}

/* Short flags as getopt reads them: -q, -qv, -d 10, -d10, -qd 10. */
static int take_short(struct parse_state *ps, int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	for (const char *c = a + 1; *c; c++) {
		const struct config_option *o = find_short(ps, *c);
		char shown[3] = { '-', *c, '\0' };
		int status;

		if (*c == 'h')
			return 1;
		if (!o) {
			fprintf(stderr, "kiln %s: unknown option '%s' (try --help)\n", ps->cmd, shown);
			return 2;
		}
		if (o->type == CONFIG_BOOL || o->type == CONFIG_COUNT) {
			status = take(ps, o, shown, NULL, argc, argv, i);
		} else {
			/* The rest of the cluster is the value, else the next argument. */
			status = take(ps, o, shown, c[1] ? c + 1 : NULL, argc, argv, i);
			c += strlen(c) - 1;
		}
		if (status)
			return status;
	}
	return 0;
}

static int parse_flags(struct parse_state *ps, int argc, char **argv)
{
	int status;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq = NULL;
		const struct config_option *o;
		char shown[128];

		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return 1;
		if (!strcmp(a, "--") && ps->args) {
			while (++i < argc)
				if ((status = add_arg(ps, argv[i])))
					return status < 0 ? out_of_memory(ps) : status;
			return 0;
		}
		if (a[0] != '-' || !a[1]) {
			if ((status = add_arg(ps, argv[i])))
				return status < 0 ? out_of_memory(ps) : status;
			if (ps->args_mode == CONFIG_ARGS_TAIL) {
				while (++i < argc)
					if ((status = add_arg(ps, argv[i])))
						return status < 0 ? out_of_memory(ps) : status;
				return 0;
			}
			continue;
		}
		if (a[1] != '-') {
			if ((status = take_short(ps, argc, argv, &i)))
				return status;
			continue;
		}
		eq = strchr(a + 2, '=');
		o = a[2] ? find_long(ps, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2)) : NULL;
		if (eq)
			val = eq + 1;
		snprintf(shown, sizeof(shown), "%.*s", eq ? (int)(eq - a) : 100, a);
		if (!o) {
			fprintf(stderr, "kiln %s: unknown option '%s' (try --help)\n", ps->cmd, shown);
			return 2;
		}
		if ((status = take(ps, o, shown, val, argc, argv, &i)))
			return status;
	}
	return 0;
}

static int parse(struct parse_state *ps_in, void *opts, int argc, char **argv, bool use_env)
{
	struct parse_state ps = *ps_in;
	const struct config_option *table = ps.table;
	size_t n = ps.n;
	int status = 2;
	char env[128];

	ps.raw = calloc(n, sizeof(*ps.raw));
	if (!ps.raw)
		return 2;
	for (size_t i = 0; i < n; i++)
		if (table[i].def && add_value(&ps.raw[i], SRC_DEFAULT, table[i].def, 0))
			goto out;
	status = parse_flags(&ps, argc, argv);
	if (status)
		goto out;
	status = 2;
	for (size_t i = 0; use_env && i < n; i++) {
		const char *v;

		config__env_name(&table[i], env, sizeof(env));
		v = getenv(env);
		if (!v || ps.raw[i].src == SRC_FLAG)
			continue;
		if (table[i].type == CONFIG_LIST ? env_list(&ps.raw[i], v) :
		    add_value(&ps.raw[i], SRC_ENV, v, 0)) {
			out_of_memory(&ps);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].name, "config") && ps.raw[i].n) {
			ps.file = ps.raw[i].vals[ps.raw[i].n - 1];
			where(&ps, &table[i], &ps.raw[i], ps.file_from, sizeof(ps.file_from));
		}
	if (ps.file && *ps.file && read_file(&ps))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (convert(&ps, &table[i], &ps.raw[i], opts))
			goto out;
	status = 0;
out:
	/* Lists keep their value arrays; the rest are freed. */
	for (size_t i = 0; i < n; i++)
		if (table[i].type != CONFIG_LIST || status)
			free(ps.raw[i].vals);
	free(ps.raw);
	return status;
}

int config__parse(const char *cmd, const struct config_option *table, size_t n,
		  void *opts, int argc, char **argv)
{
	struct parse_state ps = { .cmd = cmd, .table = table, .n = n };

	return parse(&ps, opts, argc, argv, true);
}

int config__parse_command(const struct config_command *c, void *opts, int argc,
			  char **argv, struct config_list *args)
{
	struct parse_state ps = {
		.cmd = c->name, .table = c->rows, .n = c->nrows, .args_mode = c->args,
		.args = c->args == CONFIG_ARGS_NONE ? NULL : args,
	};
	int status;

	if (args)
		*args = (struct config_list){ 0 };
	status = parse(&ps, opts, argc, argv, c->env);
	if (status && args) {
		free(args->items);
		*args = (struct config_list){ 0 };
	}
	return status;
}

void config__release(const struct config_option *table, size_t n, void *opts)
{
	for (size_t i = 0; i < n; i++) {
		char *field = (char *)opts + table[i].offset;

		if (table[i].type != CONFIG_LIST)
			continue;
		if (table[i].flags & CONFIG_SPLIT_LIST) {
			free(*(const char ***)field);
			*(const char ***)field = NULL;
			*(size_t *)((char *)opts + table[i].count_offset) = 0;
		} else {
			free(((struct config_list *)field)->items);
			*(struct config_list *)field = (struct config_list){ 0 };
		}
	}
}

void config__release_command(const struct config_command *c, void *opts,
			     struct config_list *args)
{
	config__release(c->rows, c->nrows, opts);
	if (args) {
		free(args->items);
		*args = (struct config_list){ 0 };
	}
}

static void flag_text(const struct config_option *o, char *buf, size_t n)
{
	const char *arg = o->type == CONFIG_BOOL || o->type == CONFIG_COUNT ? NULL : o->arg;

	if (o->short_name)
		snprintf(buf, n, "-%c, --%s%s%s", o->short_name, o->name, arg ? " " : "",
			 arg ? arg : "");
	else
		snprintf(buf, n, "    --%s%s%s", o->name, arg ? " " : "", arg ? arg : "");
}

static void help_rows(const struct config_option *table, size_t n, bool env_shown, FILE *f)
{
	char env[128], flag[96];

	for (size_t i = 0; i < n; i++) {
		const struct config_option *o = &table[i];

		config__env_name(o, env, sizeof(env));
		flag_text(o, flag, sizeof(flag));
		fprintf(f, "  %-34s", flag);
		/* A flag wider than its column gets its help on the next line. */
		if (strlen(flag) > 33)
			fprintf(f, "\n  %-34s", "");
		fprintf(f, " %s", o->help);
		if (o->def && *o->def)
			fprintf(f, " (default %s)", o->def);
		fputc('\n', f);
		if (env_shown)
			fprintf(f, "  %-34s env %s%s\n", "", env,
				o->type == CONFIG_LIST ? " (comma-separated)" : "");
	}
}

void config__help(const struct config_option *table, size_t n, FILE *f)
{
	help_rows(table, n, true, f);
}

void config__usage(const struct config_command *c, FILE *f)
{
	fprintf(f, "Usage: kiln %s %s\n\n%s%sOptions:\n", c->name, c->synopsis,
		c->about ? c->about : "", c->about ? "\n" : "");
	help_rows(c->rows, c->nrows, c->env, f);
	fprintf(f, "  %-34s this help\n", "-h, --help");
	if (c->notes)
		fprintf(f, "\n%s", c->notes);
}

/* A bound in bytes as the size parser reads it: 1M, 64G, or plain bytes. */
static void size_text(double bytes, char *buf, size_t n)
{
	static const char units[] = "KMGTP";
	uint64_t v = (uint64_t)bytes;
	int u = -1;

	while (v && v % 1024 == 0 && u + 1 < (int)sizeof(units) - 1) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%" PRIu64, v);
	else
		snprintf(buf, n, "%" PRIu64 "%c", v, units[u]);
}

/* Seconds as a duration reads them: 90s, 10m, 168h. */
static void seconds_text(double s, char *buf, size_t n)
{
	uint64_t whole = (uint64_t)s;

	if ((double)whole != s || whole < 60)
		snprintf(buf, n, "%gs", s);
	else if (whole % 3600 == 0)
		snprintf(buf, n, "%" PRIu64 "h", whole / 3600);
	else if (whole % 60 == 0)
		snprintf(buf, n, "%" PRIu64 "m", whole / 60);
	else
		snprintf(buf, n, "%" PRIu64 "s", whole);
}

static void bound_text(const struct config_option *o, char *buf, size_t n)
{
	char lo[32], hi[32];

	switch (o->type) {
	case CONFIG_U64:
		if (o->flags & CONFIG_OCTAL)
			snprintf(buf, n, "%04llo to %04llo (octal)", (unsigned long long)o->min,
				 (unsigned long long)o->max);
		else
			snprintf(buf, n, "%s%.0f to %.0f",
				 o->flags & CONFIG_ZERO_AUTO ? "0 (auto), " : "", o->min, o->max);
		return;
	case CONFIG_SIZE:
	case CONFIG_DURATION: {
		void (*text)(double, char *, size_t) = o->type == CONFIG_SIZE ? size_text :
										 seconds_text;

		text(o->min, lo, sizeof(lo));
		text(o->max, hi, sizeof(hi));
		snprintf(buf, n, "%s to %s", lo, hi);
		return;
	}
	case CONFIG_SECONDS:
		snprintf(buf, n, "%g to %g seconds", o->min, o->max);
		return;
	case CONFIG_CHOICE:
		snprintf(buf, n, "one of %s", o->choices);
		return;
	case CONFIG_LIST:
	case CONFIG_COUNT:
		snprintf(buf, n, "repeatable");
		return;
	default:
		snprintf(buf, n, " ");
	}
}

/* Markdown table cells: '|' would end the cell, <x> would be read as HTML. */
static void cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<' || *s == '>')
			fputs(*s == '<' ? "&lt;" : "&gt;", f);
		else if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s, f);
	}
}

void config__markdown(const struct config_command *c, FILE *f)
{
	char env[128], flag[96], bound[96];

	fprintf(f, "## kiln %s\n\n`kiln %s %s`\n\n", c->name, c->name, c->synopsis);
	fprintf(f, "| flag |%s default | bound | meaning |\n", c->env ? " environment |" : "");
	fprintf(f, "|---|%s---|---|---|\n", c->env ? "---|" : "");
	for (size_t i = 0; i < c->nrows; i++) {
		const struct config_option *o = &c->rows[i];
		const char *p;

		flag_text(o, flag, sizeof(flag));
		for (p = flag; *p == ' '; p++)
			;
		fprintf(f, "| `%s` |", p);
		if (c->env) {
			config__env_name(o, env, sizeof(env));
			fprintf(f, " `%s`%s |", env, o->type == CONFIG_LIST ? " (comma-separated)" : "");
		}
		fputs(" ", f);
		cell(f, o->def && *o->def ? o->def : " ");
		bound_text(o, bound, sizeof(bound));
		fputs(" | ", f);
		cell(f, bound);
		fputs(" | ", f);
		cell(f, o->help);
		fputs(" |\n", f);
	}
	fprintf(f, "| `-h, --help` |%s   |   | this help |\n\n", c->env ? "   |" : "");
}
