// SPDX-License-Identifier: BSD-2-Clause
/* Kernel function symbols from the /proc/kallsyms text format.
 *
 * DESIGN: one pass over the text collects (address, name, module) entries;
 * names and module names go into one string arena (modules interned through
 * a small hash, one copy each); the entries are then sorted by address,
 * deduplicated and turned into the public struct ksym array, whose pointers
 * point into the arena. Lookups are a binary search. Nothing points into the
 * caller's buffer after kallsyms__parse returns. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "symbolize/kallsyms.h"

/* Longest line we accept: KSYM_NAME_LEN is 512 since Linux 6.1, module
 * names are below 64; anything longer is junk. */
#define KSYM_LINE_MAX	1024
#define KSYM_NAME_MAX	511
#define KSYM_MOD_MAX	255
/* No kernel function is this long: an address further past its nearest
 * symbol is outside any known function (e.g. past the last module symbol,
 * or in a hole between the core image and the module area). */
#define KSYM_MAX_SPAN	(1u << 20)
/* /proc/kallsyms is about 10 MB on large hosts; refuse absurd files. */
#define KSYM_FILE_MAX	(256u << 20)

struct kallsyms {
	struct ksym *syms;
	size_t count;
	char *arena;		/* NUL-terminated names and module names */
	size_t arena_len;
	size_t skipped;
	bool restricted;
};

/* An entry while parsing: strings are arena offsets until the arena stops
 * moving. */
struct kentry {
	uint64_t addr;
	size_t name;
	size_t mod;		/* arena offset + 1; 0 for the core image */
	size_t line;		/* input order, the last tie-breaker */
	unsigned rank;
};

struct builder {
	struct kentry *v;
	size_t n, cap;
	char *arena;
	size_t arena_len, arena_cap;
	struct hashmap mods;	/* module name -> its arena offset + 1 */
};

static int arena_add(struct builder *b, const char *s, size_t len, size_t *off)
{
	if (b->arena_len + len + 1 > b->arena_cap) {
		size_t cap = b->arena_cap ? b->arena_cap * 2 : 4096;
		char *p;

		while (cap < b->arena_len + len + 1)
			cap *= 2;
		p = realloc(b->arena, cap);
		if (!p)
			return -ENOMEM;
		b->arena = p;
		b->arena_cap = cap;
	}
	memcpy(b->arena + b->arena_len, s, len);
	b->arena[b->arena_len + len] = '\0';
	*off = b->arena_len;
	b->arena_len += len + 1;
	return 0;
}

struct mod_key {
	const char *s;
	size_t len;
};

static bool mod_is(const void *ctx, const void *val, const void *key)
{
	const struct builder *b = ctx;
	const struct mod_key *k = key;
	const char *m = b->arena + (uintptr_t)val - 1;

	return strncmp(m, k->s, k->len) == 0 && m[k->len] == '\0';
}

/* Interns a module name: *off gets its arena offset + 1. */
static int mod_intern(struct builder *b, const char *s, size_t len, size_t *off)
{
	struct mod_key k = { s, len };
	uint64_t h = hash__bytes(s, len);
	void *v = hashmap__get(&b->mods, h, mod_is, b, &k);
	size_t o;
	int err;

	if (v) {
		*off = (uintptr_t)v;
		return 0;
	}
	err = arena_add(b, s, len, &o);
	if (err)
		return err;
	if (hashmap__add(&b->mods, h, (void *)(uintptr_t)(o + 1)))
		return -ENOMEM;
	*off = o + 1;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Global before weak before local: the name a reader expects when several
 * symbols share an address. */
static int type_rank(char t)
{
	switch (t) {
	case 'T': return 0;
	case 'W': return 1;
	case 't': return 2;
	case 'w': return 3;
	default:  return -1;
	}
}

struct parsed {
	uint64_t addr;
	char type;
	const char *name, *mod;
	size_t name_len, mod_len;
};

/* "ADDR TYPE NAME" optionally followed by "\t[MODULE]". false: junk. */
static bool parse_line(const char *s, size_t len, struct parsed *p)
{
	size_t i = 0, digits = 0;
	int v;

	if (len > KSYM_LINE_MAX)
		return false;
	p->addr = 0;
	while (i < len && (v = hexval(s[i])) >= 0) {
		p->addr = p->addr << 4 | (uint64_t)v;
		i++;
		digits++;
	}
	if (digits == 0 || digits > 16 || i + 3 > len || s[i] != ' ' ||
	    s[i + 1] == ' ' || s[i + 1] == '\t' || s[i + 2] != ' ')
		return false;
	p->type = s[i + 1];
	i += 3;
	p->name = s + i;
	while (i < len && s[i] != '\t' && s[i] != ' ')
		i++;
	p->name_len = (size_t)(s + i - p->name);
	if (p->name_len == 0 || p->name_len > KSYM_NAME_MAX ||
	    memchr(p->name, '\0', p->name_len))
		return false;
	p->mod = NULL;
	p->mod_len = 0;
	if (i == len)
		return true;
	if (s[i] != '\t' || i + 3 > len || s[i + 1] != '[' || s[len - 1] != ']')
		return false;
	p->mod = s + i + 2;
	p->mod_len = len - i - 3;
	if (p->mod_len == 0 || p->mod_len > KSYM_MOD_MAX ||
	    memchr(p->mod, ']', p->mod_len) || memchr(p->mod, '[', p->mod_len) ||
	    memchr(p->mod, ' ', p->mod_len) || memchr(p->mod, '\t', p->mod_len) ||
	    memchr(p->mod, '\0', p->mod_len))
		return false;
	return true;
}

static int add_entry(struct builder *b, const struct parsed *p, size_t line)
{
	struct kentry *e;
	int err;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct kentry *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	e = &b->v[b->n];
	e->addr = p->addr;
	e->line = line;
	e->rank = (unsigned)type_rank(p->type);
	e->mod = 0;
	err = arena_add(b, p->name, p->name_len, &e->name);
	if (!err && p->mod)
		err = mod_intern(b, p->mod, p->mod_len, &e->mod);
	if (err)
		return err;
	b->n++;
	return 0;
}

static int kentry_cmp(const void *a, const void *b)
{
	const struct kentry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sorts, keeps the best-ranked entry per address, and moves the arena
 * into ks. */
static int finish(struct builder *b, struct kallsyms *ks)
{
	size_t n = 0;

	if (b->arena_len && b->arena_len < b->arena_cap) {
		char *a = realloc(b->arena, b->arena_len);

		if (a)
			b->arena = a;
	}
	ks->arena = b->arena;
	ks->arena_len = b->arena_len;
	b->arena = NULL;
	if (!b->n)
		return 0;
	qsort(b->v, b->n, sizeof(*b->v), kentry_cmp);
	/* Convert in place (a ksym is smaller than a kentry, and entry i is
	 * copied out before slot n <= i is written), so the two arrays never
	 * coexist: kallsyms is kiln's largest allocation at start. */
	for (size_t i = 0; i < b->n; i++) {
		struct kentry e = b->v[i];
		struct ksym *out = (struct ksym *)b->v;

		if (n && out[n - 1].addr == e.addr)
			continue;
		out[n].addr = e.addr;
		out[n].name = ks->arena + e.name;
		out[n].module = e.mod ? ks->arena + e.mod - 1 : NULL;
		n++;
	}
	ks->syms = realloc(b->v, n * sizeof(*ks->syms));
	if (!ks->syms)
		ks->syms = (struct ksym *)b->v;
	b->v = NULL;
	ks->count = n;
	return 0;
}

/* Parsing state shared by the buffer and the file readers. */
struct reader {
	struct builder b;
	struct kallsyms *ks;
	size_t line;
	bool any_addr, any_line;
};

static int reader_line(struct reader *r, const char *s, size_t l)
{
	struct parsed p;

	r->line++;
	if (l == 0)
		return 0;
	if (!parse_line(s, l, &p)) {
		r->ks->skipped++;
		return 0;
	}
	r->any_line = true;
	if (p.addr)
		r->any_addr = true;
	if (type_rank(p.type) < 0 || p.addr == 0)
		return 0;
	return add_entry(&r->b, &p, r->line);
}

static int reader_start(struct reader *r)
{
	memset(r, 0, sizeof(*r));
	r->ks = calloc(1, sizeof(*r->ks));
	return r->ks ? 0 : -ENOMEM;
}

/* Builds the table (err == 0) or frees everything, a failed
 * reader_start included; NULL + errno. */
static struct kallsyms *reader_finish(struct reader *r, int err)
{
	if (!err) {
		r->ks->restricted = r->any_line && !r->any_addr;
		err = finish(&r->b, r->ks);
	}
	free(r->b.v);
	hashmap__clear(&r->b.mods);
	free(r->b.arena);
	if (err) {
		kallsyms__free(r->ks);
		errno = -err;
		return NULL;
	}
	return r->ks;
}

struct kallsyms *kallsyms__parse(const char *buf, size_t len)
{
	struct reader r;
	size_t pos = 0;
	int err;

	if (!buf && len) {
		errno = EINVAL;
		return NULL;
	}
	err = reader_start(&r);
	while (pos < len && !err) {
		const char *s = buf + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;

		pos += l + 1;
		err = reader_line(&r, s, l);
	}
	return reader_finish(&r, err);
}

/* Streams the file line by line: /proc/kallsyms is several MiB, and holding
 * it whole would double kiln's peak memory at start. */
struct kallsyms *kallsyms__load(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, total = 0;
	struct reader r;
	ssize_t n;
	int err;

	if (!f)
		return NULL;
	err = reader_start(&r);
	while (!err && (n = getline(&line, &cap, f)) > 0) {
		total += (size_t)n;
		if (total > KSYM_FILE_MAX) {
			err = -EFBIG;
			break;
		}
		if (line[n - 1] == '\n')
			n--;
		err = reader_line(&r, line, (size_t)n);
	}
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	fclose(f);
	return reader_finish(&r, err);
}

const struct ksym *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!ks || !ks->count || addr < ks->syms[0].addr)
		return NULL;
	/* Last symbol with syms[i].addr <= addr. */
	hi = ks->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (addr - ks->syms[lo].addr >= KSYM_MAX_SPAN)
		return NULL;
	return &ks->syms[lo];
}

size_t kallsyms__count(const struct kallsyms *ks)
{
	return ks ? ks->count : 0;
}

size_t kallsyms__skipped_lines(const struct kallsyms *ks)
{
	return ks ? ks->skipped : 0;
}

bool kallsyms__restricted(const struct kallsyms *ks)
{
	return ks && ks->restricted;
}

size_t kallsyms__bytes(const struct kallsyms *ks)
{
	if (!ks)
		return 0;
	return sizeof(*ks) + ks->count * sizeof(*ks->syms) + ks->arena_len;
}

void kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->arena);
	free(ks);
}
