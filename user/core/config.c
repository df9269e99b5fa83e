// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
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
	case CONFIG_LIST: {
		struct config_list *l = (struct config_list *)field;

		l->items = r->vals;
		l->n = r->n;
		return 0;
	}
	case CONFIG_U64:
		if (parse_u64(v, (uint64_t)o->min, (uint64_t)o->max, &u)) {
			snprintf(want, sizeof(want), "want an integer in [%.0f, %.0f]", o->min, o->max);
			return bad(ps, o, r, v, want);
		}
		*(uint64_t *)field = u;
		return 0;
	case CONFIG_SIZE:
		if (parse_size(v, (uint64_t)o->min, (uint64_t)o->max, &u)) {
			snprintf(want, sizeof(want), "want a size (K, M, G suffixes) in [%.0f, %.0f] bytes",
				 o->min, o->max);
			return bad(ps, o, r, v, want);
		}
		*(uint64_t *)field = u;
		return 0;
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

static int parse_flags(struct parse_state *ps, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq = NULL;
		const struct config_option *o;
		char shown[128];

		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return 1;
		if (a[0] == '-' && a[1] == '-' && a[2]) {
			eq = strchr(a + 2, '=');
			o = find_long(ps, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
			if (eq)
				val = eq + 1;
		} else if (a[0] == '-' && a[1] && !a[2]) {
			o = find_short(ps, a[1]);
		} else {
			fprintf(stderr, "kiln %s: unexpected argument '%s' (try --help)\n", ps->cmd, a);
			return 2;
		}
		snprintf(shown, sizeof(shown), "%.*s", eq && a[1] == '-' ? (int)(eq - a) : 100, a);
		if (!o) {
			fprintf(stderr, "kiln %s: unknown option '%s' (try --help)\n", ps->cmd, shown);
			return 2;
		}
		if (!val && o->type == CONFIG_BOOL)
			val = "true";
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "kiln %s: %s needs a value (%s)\n", ps->cmd, shown,
					o->arg ? o->arg : "VALUE");
				return 2;
			}
			val = argv[++i];
		}
		if (add_value(&ps->raw[o - ps->table], SRC_FLAG, val, 0))
			return out_of_memory(ps);
	}
	return 0;
}

int config__parse(const char *cmd, const struct config_option *table, size_t n,
		  void *opts, int argc, char **argv)
{
	struct parse_state ps = { .cmd = cmd, .table = table, .n = n };
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
	for (size_t i = 0; i < n; i++) {
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

void config__release(const struct config_option *table, size_t n, void *opts)
{
	for (size_t i = 0; i < n; i++) {
		struct config_list *l;

		if (table[i].type != CONFIG_LIST)
			continue;
		l = (struct config_list *)((char *)opts + table[i].offset);
		free(l->items);
		*l = (struct config_list){ 0 };
	}
}

void config__help(const struct config_option *table, size_t n, FILE *f)
{
	char env[128], flag[96];

	for (size_t i = 0; i < n; i++) {
		const struct config_option *o = &table[i];

		config__env_name(o, env, sizeof(env));
		if (o->short_name)
			snprintf(flag, sizeof(flag), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(flag, sizeof(flag), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(f, "  %-34s", flag);
		/* A flag wider than its column gets its help on the next line. */
		if (strlen(flag) > 33)
			fprintf(f, "\n  %-34s", "");
		fprintf(f, " %s", o->help);
		if (o->def && *o->def)
			fprintf(f, " (default %s)", o->def);
		fprintf(f, "\n  %-34s env %s%s\n", "", env,
			o->type == CONFIG_LIST ? " (comma-separated)" : "");
	}
}
