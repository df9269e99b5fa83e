// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: one cache entry per (instance, object address), holding the
 * check the object had when read, its name, file, first line and line
 * table, in one allocation. A frame whose check differs from the entry's
 * reads the object again: the address was reused (or the entry predates
 * a change). The bound is in bytes; when an entry does not fit, the whole
 * cache is dropped and counted: cheap, bounded, and the next frames read
 * what they need again. What an object holds and how its lines are found
 * is its language's (struct code_lang). */
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "symbolize/code_names.h"

const char *const code_names_failure_names[CODE_NAMES_FAILURE_COUNT] = {
	[CODE_NAMES_GONE] = "no_process",	[CODE_NAMES_UNREADABLE] = "unreadable",
	[CODE_NAMES_NOT_CODE] = "not_code",	[CODE_NAMES_REUSED] = "reused",
	[CODE_NAMES_BAD_STRING] = "bad_string",
};

struct code_names {
	const struct code_lang *lang;
	size_t max_bytes;
	struct hashmap map; /* hash(instance, addr, aux) -> struct code_entry */
	struct code_names_stats st;
	struct code_scratch sc;
};

struct key {
	uint32_t instance;
	uint64_t addr, aux;
};

static bool entry_eq(const void *ctx, const void *val, const void *key)
{
	const struct code_entry *e = val;
	const struct key *k = key;

	(void)ctx;
	return e->instance == k->instance && e->addr == k->addr && e->aux == k->aux;
}

static uint64_t key_hash(const struct key *k)
{
	return hash__mix(k->addr ^ (uint64_t)k->instance << 48 ^ k->instance ^ hash__mix(k->aux));
}

struct code_names *code_names__new(const struct code_lang *lang, size_t max_bytes)
{
	struct code_names *n = calloc(1, sizeof(*n));

	if (n) {
		n->lang = lang;
		n->max_bytes = max_bytes;
	}
	return n;
}

static void free_entry(uint64_t hash, void *val, void *ctx)
{
	(void)hash;
	(void)ctx;
	free(val);
}

static void flush(struct code_names *n)
{
	hashmap__each(&n->map, free_entry, NULL);
	hashmap__clear(&n->map);
	n->st.bytes = 0;
	n->st.entries = 0;
	n->st.flushes++;
}

void code_names__put_utf8(uint32_t cp, char *out, size_t *o, size_t cap)
{
	char b[4];
	size_t k = 0;

	if (cp < 0x80) {
		b[k++] = (char)cp;
	} else if (cp < 0x800) {
		b[k++] = (char)(0xc0 | cp >> 6);
		b[k++] = (char)(0x80 | (cp & 63));
	} else if (cp < 0x10000) {
		if (cp >= 0xd800 && cp < 0xe000)
			cp = 0xfffd; /* a lone surrogate */
		b[k++] = (char)(0xe0 | cp >> 12);
		b[k++] = (char)(0x80 | (cp >> 6 & 63));
		b[k++] = (char)(0x80 | (cp & 63));
	} else if (cp < 0x110000) {
		b[k++] = (char)(0xf0 | cp >> 18);
		b[k++] = (char)(0x80 | (cp >> 12 & 63));
		b[k++] = (char)(0x80 | (cp >> 6 & 63));
		b[k++] = (char)(0x80 | (cp & 63));
	} else {
		b[k++] = '?';
	}
	if (*o + k >= cap)
		return;
	memcpy(out + *o, b, k);
	*o += k;
}

struct code_entry *code_names__entry(const struct code_scratch *sc, uint32_t lines_len,
				     uint32_t check, int32_t firstlineno)
{
	size_t name_len = strlen(sc->name) + 1, file_len = strlen(sc->file) + 1;
	size_t bytes = sizeof(struct code_entry) + lines_len + name_len + file_len;
	struct code_entry *e = malloc(bytes);

	if (!e)
		return NULL;
	e->instance = 0;
	e->addr = 0;
	e->aux = 0;
	e->check = check;
	e->firstlineno = firstlineno;
	e->bytes = bytes;
	e->lines_len = lines_len;
	memcpy(e->data, sc->lines, lines_len);
	memcpy(e->data + lines_len, sc->name, name_len);
	memcpy(e->data + lines_len + name_len, sc->file, file_len);
	e->name = (const char *)e->data + lines_len;
	e->file = (const char *)e->data + lines_len + name_len;
	return e;
}

static struct code_entry *read_entry(struct code_names *n, const void *facts, pid_t pid,
				     uint32_t instance, uint64_t addr, uint64_t aux,
				     enum code_names_failure *why)
{
	struct code_entry *e;

	n->st.reads++;
	e = n->lang->read(facts, pid, addr, aux, &n->sc, &n->st, why);
	if (e) {
		e->instance = instance;
		e->addr = addr;
		e->aux = aux;
	}
	return e;
}

/* Replaces (or adds) the entry of e's key. */
static struct code_entry *store(struct code_names *n, struct code_entry *e)
{
	struct key k = { e->instance, e->addr, e->aux };
	uint64_t h = key_hash(&k);
	struct code_entry *old = hashmap__del(&n->map, h, entry_eq, NULL, &k);

	if (old) {
		n->st.bytes -= old->bytes;
		n->st.entries--;
		free(old);
	}
	if (e->bytes > n->max_bytes) {
		free(e);
		return NULL;
	}
	if (n->st.bytes + e->bytes > n->max_bytes)
		flush(n);
	if (hashmap__add(&n->map, h, e)) {
		free(e);
		return NULL;
	}
	n->st.bytes += e->bytes;
	n->st.entries++;
	return e;
}

static struct code_entry *lookup(struct code_names *n, uint32_t instance, uint64_t addr,
				 uint64_t aux)
{
	struct key k = { instance, addr, aux };

	return hashmap__get(&n->map, key_hash(&k), entry_eq, NULL, &k);
}

int code_names__frame(struct code_names *n, const void *facts, pid_t pid, uint32_t instance,
		      uint64_t addr, uint64_t aux, uint32_t check, uint32_t index,
		      struct code_frame_name *out)
{
	struct code_entry *e = lookup(n, instance, addr, aux);
	enum code_names_failure why = CODE_NAMES_GONE;

	n->st.frames++;
	if (!e || e->check != check) {
		e = facts ? read_entry(n, facts, pid, instance, addr, aux, &why) : NULL;
		if (e && e->check != check) {
			free(e);
			e = NULL;
			why = CODE_NAMES_REUSED;
		}
		if (e)
			e = store(n, e);
		if (!e && aux && why != CODE_NAMES_REUSED) {
			/* the object's own entry, read while the process lived */
			e = lookup(n, instance, addr, 0);
			e = e && e->check == check ? e : NULL;
		}
		if (!e) {
			n->st.failures[why]++;
			return -1;
		}
	}
	out->name = e->name;
	out->file = e->file;
	out->line = n->lang->line(e, index);
	if (!out->line && e->firstlineno > 0)
		out->line = (uint32_t)e->firstlineno;
	n->st.named++;
	return 0;
}

bool code_names__prefetch(struct code_names *n, const void *facts, pid_t pid, uint32_t instance,
			  uint64_t addr, uint64_t aux)
{
	enum code_names_failure why;
	struct code_entry *e;

	if (!facts || lookup(n, instance, addr, aux))
		return false;
	e = read_entry(n, facts, pid, instance, addr, aux, &why);
	if (e)
		store(n, e);
	return true;
}

void code_names__stats(const struct code_names *n, struct code_names_stats *out)
{
	*out = n->st;
}

void code_names__free(struct code_names *n)
{
	if (!n)
		return;
	hashmap__each(&n->map, free_entry, NULL);
	hashmap__clear(&n->map);
	free(n);
}
