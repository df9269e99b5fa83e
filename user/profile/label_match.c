// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/label_match.h"

#define NAME_MAX_LEN 256
#define VALUE_MAX_LEN 2048

enum op { OP_EQ, OP_NE, OP_RE, OP_NRE };

struct selector {
	char name[NAME_MAX_LEN];
	char *value;
	enum op op;
	regex_t re;
};

struct label_match {
	struct selector s[LABEL_MATCH_MAX];
	size_t n;
};

static bool name_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

int label_match__add(struct label_match **mp, const char *text, char *why, size_t why_len)
{
	struct label_match *m = *mp;
	struct selector *s;
	size_t nl = 0, vl;
	const char *v;
	char *anchored;
	int rc;

	while (name_char(text[nl], nl == 0))
		nl++;
	if (!nl || nl >= NAME_MAX_LEN) {
		snprintf(why, why_len, "'%s': want KEY=VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX", text);
		return -EINVAL;
	}
	if (!m && !(m = *mp = calloc(1, sizeof(*m))))
		return -ENOMEM;
	if (m->n == LABEL_MATCH_MAX) {
		snprintf(why, why_len, "more than %d label selectors", LABEL_MATCH_MAX);
		return -E2BIG;
	}
	s = &m->s[m->n];
	memcpy(s->name, text, nl);
	s->name[nl] = '\0';
	v = text + nl;
	if (!strncmp(v, "=~", 2))
		s->op = OP_RE, v += 2;
	else if (!strncmp(v, "!~", 2))
		s->op = OP_NRE, v += 2;
	else if (!strncmp(v, "!=", 2))
		s->op = OP_NE, v += 2;
	else if (*v == '=')
		s->op = OP_EQ, v += 1;
	else {
		snprintf(why, why_len, "'%s': want KEY=VALUE, KEY!=VALUE, KEY=~REGEX or KEY!~REGEX", text);
		return -EINVAL;
	}
	vl = strlen(v);
	if (vl > VALUE_MAX_LEN) {
		snprintf(why, why_len, "'%.32s...': a value longer than %d bytes", text, VALUE_MAX_LEN);
		return -EINVAL;
	}
	s->value = strdup(v);
	if (!s->value)
		return -ENOMEM;
	if (s->op == OP_RE || s->op == OP_NRE) {
		/* the whole value, as Prometheus anchors its matchers */
		if (asprintf(&anchored, "^(%s)$", v) < 0) {
			free(s->value);
			return -ENOMEM;
		}
		rc = regcomp(&s->re, anchored, REG_EXTENDED | REG_NOSUB);
		free(anchored);
		if (rc) {
			char msg[128];

			regerror(rc, &s->re, msg, sizeof(msg));
			snprintf(why, why_len, "'%s': bad regular expression: %s", text, msg);
			free(s->value);
			return -EINVAL;
		}
	}
	m->n++;
	return 0;
}

bool label_match__test(const struct label_match *m, const struct labels *l)
{
	for (size_t i = 0; m && i < m->n; i++) {
		const struct selector *s = &m->s[i];
		const char *v = labels__get(l, s->name);
		bool hit;

		if (!v)
			v = "";
		if (s->op == OP_EQ || s->op == OP_NE)
			hit = !strcmp(v, s->value);
		else
			hit = !regexec(&s->re, v, 0, NULL, 0);
		if (hit != (s->op == OP_EQ || s->op == OP_RE))
			return false;
	}
	return true;
}

void label_match__free(struct label_match *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->s[i].value);
		if (m->s[i].op == OP_RE || m->s[i].op == OP_NRE)
			regfree(&m->s[i].re);
	}
	free(m);
}
