// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: one cache entry per (instance, code object address), holding the
 * check the object had when read, its qualified name, file, first line and
 * line table, in one allocation. A frame whose check differs from the
 * entry's reads the object again: the address was reused (or the entry
 * predates a change). The bound is in bytes; when an entry does not fit,
 * the whole cache is dropped and counted: cheap, bounded, and the next
 * frames read what they need again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "symbolize/py_lines.h"
#include "symbolize/py_names.h"

const char *const py_names_failure_names[PY_NAMES_FAILURE_COUNT] = {
	[PY_NAMES_GONE] = "no_process",	      [PY_NAMES_UNREADABLE] = "unreadable",
	[PY_NAMES_NOT_CODE] = "not_code",     [PY_NAMES_REUSED] = "reused",
	[PY_NAMES_BAD_STRING] = "bad_string",
};

#define CODE_READ 160 /* bytes of a code object read: every field used is below */
#define STR_HEAD 80 /* bytes of a str object's header read */

struct py_entry {
	uint32_t instance, check;
	uint64_t code;
	int32_t firstlineno;
	uint32_t linetable_len;
	const char *name, *file;
	size_t bytes;
	uint8_t data[]; /* name, file, line table */
};

struct py_names {
	size_t max_bytes;
	struct hashmap map; /* hash(instance, code) -> struct py_entry */
	struct py_names_stats st;
	char name[PY_NAME_MAX * 4 + 1], file[PY_NAME_MAX * 4 + 1];
	uint8_t linetable[PY_LINETABLE_MAX];
};

struct key {
	uint32_t instance;
	uint64_t code;
};

static bool entry_eq(const void *ctx, const void *val, const void *key)
{
	const struct py_entry *e = val;
	const struct key *k = key;

	(void)ctx;
	return e->instance == k->instance && e->code == k->code;
}

static uint64_t key_hash(const struct key *k)
{
	return hash__mix(k->code ^ (uint64_t)k->instance << 48 ^ k->instance);
}

struct py_names *py_names__new(size_t max_bytes)
{
	struct py_names *n = calloc(1, sizeof(*n));

	if (n)
		n->max_bytes = max_bytes;
	return n;
}

static void free_entry(uint64_t hash, void *val, void *ctx)
{
	(void)hash;
	(void)ctx;
	free(val);
}

static void flush(struct py_names *n)
{
	hashmap__each(&n->map, free_entry, NULL);
	hashmap__clear(&n->map);
	n->st.bytes = 0;
	n->st.entries = 0;
	n->st.flushes++;
}

static void put_utf8(uint32_t cp, char *out, size_t *o, size_t cap)
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

size_t py_names__utf8(const uint8_t *data, size_t len, unsigned kind, char *out, size_t out_len)
{
	size_t o = 0;

	if (!out_len)
		return 0;
	for (size_t i = 0; i < len && o + 1 < out_len; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, data + 2 * i, 2);
			cp = u;
		} else {
			memcpy(&cp, data + 4 * i, 4);
		}
		if (cp == 0)
			cp = 0xfffd;
		put_utf8(cp, out, &o, out_len);
	}
	out[o] = 0;
	return o;
}

/* The str object at addr as UTF-8 into out (at most PY_NAME_MAX
 * characters). 0 or -1. */
static int read_str(const struct python_info *info, pid_t pid, uint64_t addr, char *out,
		    size_t out_len)
{
	uint8_t head[STR_HEAD], data[PY_NAME_MAX * 4];
	int64_t len;
	uint32_t state;
	unsigned kind;
	size_t at;

	if (python__read(pid, addr, head, sizeof(head)))
		return -1;
	memcpy(&len, head + 16, 8);
	memcpy(&state, head + 32, 4);
	kind = state >> 2 & 7;
	if (len < 0 || !(state >> 5 & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -1; /* not a compact str (legacy strings: not names) */
	if (state >> 6 & 1) {
		if (kind != 1)
			return -1;
		at = info->ascii_data;
	} else {
		at = info->compact_data;
	}
	if (len > PY_NAME_MAX)
		len = PY_NAME_MAX;
	if (len && python__read(pid, addr + at, data, (size_t)len * kind))
		return -1;
	py_names__utf8(data, (size_t)len, kind, out, out_len);
	return 0;
}

static uint32_t u32_at(const uint8_t *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, 4);
	return v;
}

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

/* Reads code object code of pid into a new entry (counted). NULL and the
 * failure in *why. */
static struct py_entry *read_code(struct py_names *n, const struct python_info *info, pid_t pid,
				  uint32_t instance, uint64_t code, enum py_names_failure *why)
{
	const struct kiln_py_offsets *o = &info->bpf.o;
	uint8_t c[CODE_READ];
	uint64_t name_addr, lt, lt_len = 0;
	size_t name_len, file_len, bytes;
	struct py_entry *e;

	n->st.reads++;
	if (python__read(pid, code, c, sizeof(c))) {
		*why = PY_NAMES_UNREADABLE;
		return NULL;
	}
	if (u64_at(c, 8) != info->bpf.code_type) {
		*why = PY_NAMES_NOT_CODE;
		return NULL;
	}
	name_addr = u64_at(c, info->co_qualname ? info->co_qualname : info->co_name);
	*why = PY_NAMES_BAD_STRING;
	if (read_str(info, pid, name_addr, n->name, sizeof(n->name)) ||
	    read_str(info, pid, u64_at(c, info->co_filename), n->file, sizeof(n->file)))
		return NULL;
	lt = u64_at(c, info->co_linetable);
	if (lt && python__read(pid, lt + 16, &lt_len, 8) == 0) {
		if (lt_len > PY_LINETABLE_MAX) {
			n->st.no_lines++;
			lt_len = 0;
		} else if (lt_len && python__read(pid, lt + 32, n->linetable, lt_len)) {
			lt_len = 0;
		}
	} else {
		lt_len = 0;
	}
	name_len = strlen(n->name) + 1;
	file_len = strlen(n->file) + 1;
	bytes = sizeof(*e) + name_len + file_len + lt_len;
	e = malloc(bytes);
	if (!e) {
		*why = PY_NAMES_UNREADABLE;
		return NULL;
	}
	e->instance = instance;
	e->code = code;
	e->check = (u32_at(c, o->code_firstlineno) ^ u32_at(c, o->code_argcount) << 16 ^
		    u32_at(c, o->code_flags) << 8) &
		   KILN_PY_CHECK_MASK;
	e->firstlineno = (int32_t)u32_at(c, o->code_firstlineno);
	e->bytes = bytes;
	e->linetable_len = (uint32_t)lt_len;
	memcpy(e->data, n->linetable, lt_len);
	memcpy(e->data + lt_len, n->name, name_len);
	memcpy(e->data + lt_len + name_len, n->file, file_len);
	e->name = (const char *)e->data + lt_len;
	e->file = (const char *)e->data + lt_len + name_len;
	return e;
}

/* Replaces (or adds) the entry of e's key. */
static struct py_entry *store(struct py_names *n, struct py_entry *e)
{
	struct key k = { e->instance, e->code };
	uint64_t h = key_hash(&k);
	struct py_entry *old = hashmap__del(&n->map, h, entry_eq, NULL, &k);

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

int py_names__frame(struct py_names *n, const struct python_info *info, pid_t pid,
		    uint32_t instance, uint64_t code, uint32_t check, uint32_t index,
		    struct py_frame_name *out)
{
	struct key k = { instance, code };
	struct py_entry *e = hashmap__get(&n->map, key_hash(&k), entry_eq, NULL, &k);
	enum py_names_failure why = PY_NAMES_GONE;

	n->st.frames++;
	if (!e || e->check != check) {
		e = info ? read_code(n, info, pid, instance, code, &why) : NULL;
		if (e && e->check != check) {
			free(e);
			e = NULL;
			why = PY_NAMES_REUSED;
		}
		if (e)
			e = store(n, e);
		if (!e) {
			n->st.failures[why]++;
			return -1;
		}
	}
	out->name = e->name;
	out->file = e->file;
	out->line = index == KILN_PY_NO_INSTR ?
			    0 :
			    py_lines__line(e->data, e->linetable_len, e->firstlineno, index);
	if (!out->line && e->firstlineno > 0)
		out->line = (uint32_t)e->firstlineno;
	n->st.named++;
	return 0;
}

void py_names__prefetch(struct py_names *n, const struct python_info *info, pid_t pid,
			uint32_t instance, uint64_t code)
{
	struct key k = { instance, code };
	enum py_names_failure why;
	struct py_entry *e;

	if (!info || hashmap__get(&n->map, key_hash(&k), entry_eq, NULL, &k))
		return;
	e = read_code(n, info, pid, instance, code, &why);
	if (e)
		store(n, e);
}

void py_names__stats(const struct py_names *n, struct py_names_stats *out)
{
	*out = n->st;
}

void py_names__free(struct py_names *n)
{
	if (!n)
		return;
	hashmap__each(&n->map, free_entry, NULL);
	hashmap__clear(&n->map);
	free(n);
}
