// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: an rb_iseq_t is checked to be an instruction sequence (T_IMEMO,
 * imemo_iseq), then its body read in one bounded read; label and path are
 * String objects (path may be an Array [path, realpath]: its first), and
 * the line table is the body's insns_info: its entries' lines and where
 * they begin, packed for rb_lines__line. Ruby 3.1 layouts (x86-64). */
#include <stdio.h>
#include <string.h>

#include "core/bytes.h"
#include "symbolize/rb_lines.h"
#include "symbolize/rb_names.h"

#define BODY_READ 184 /* bytes of an iseq body read: every field used is below */
#define T_MASK 0x1f
#define T_STRING 0x05
#define T_ARRAY 0x07
#define T_CLASS 0x02
#define T_MODULE 0x03
#define T_ICLASS 0x1c
#define T_IMEMO 0x1a
#define IMEMO_SVAR 2
#define IMEMO_MENT 6
#define IMEMO_ISEQ 7
#define FL_SINGLETON (1u << 12)
#define METHOD_TYPE_ISEQ 0
#define FL_NOEMBED (1u << 13) /* RSTRING_NOEMBED */
#define RARRAY_EMBED (1u << 13) /* RARRAY_EMBED_FLAG */
#define ENTRY_SIZE 12 /* struct iseq_insn_info_entry */

/* The String at addr into out (at most CODE_NAME_MAX bytes, a NUL or a
 * control character written as '?'). 0 or -1. */
static int read_string(pid_t pid, uint64_t addr, char *out)
{
	uint64_t head[4], len;
	uint8_t data[CODE_NAME_MAX];

	if (interp__read(pid, addr, head, sizeof(head)) || (head[0] & T_MASK) != T_STRING)
		return -1;
	if (head[0] & FL_NOEMBED) {
		len = head[2];
		addr = head[3];
	} else {
		len = head[0] >> 14 & 0x1f;
		addr += 16;
		if (len > 24)
			return -1;
	}
	if (len > CODE_NAME_MAX)
		len = CODE_NAME_MAX;
	if (len && interp__read(pid, addr, data, len))
		return -1;
	for (size_t i = 0; i < len; i++)
		out[i] = data[i] < 0x20 || data[i] == 0x7f ? '?' : (char)data[i];
	out[len] = 0;
	return 0;
}

/* pathobj: a String, or an Array whose first element is one. */
static int read_path(pid_t pid, uint64_t obj, char *out)
{
	uint64_t head[5];

	if (interp__read(pid, obj, head, sizeof(head)))
		return -1;
	if ((head[0] & T_MASK) == T_ARRAY) {
		if (head[0] & RARRAY_EMBED)
			obj = head[2]; /* as.ary[0] */
		else if (interp__read_u64(pid, head[4], &obj))
			return -1; /* as.heap.ptr[0] */
	}
	return read_string(pid, obj, out);
}

/* The line table of body b into sc->lines (rb_lines.h's packing); its
 * length, 0 when there is none or it is over CODE_LINES_MAX (counted). */
static uint32_t read_lines(const struct ruby_info *info, pid_t pid, const uint8_t *b,
			   struct code_scratch *sc, struct code_names_stats *st)
{
	uint32_t n, iseq_size, kind, *lines = (uint32_t *)(void *)(sc->lines + 8);
	uint64_t entries = bytes__u64(b, info->info_body),
		 positions = bytes__u64(b, info->info_positions);
	uint64_t succ = bytes__u64(b, info->info_succ);
	uint8_t *rest;
	size_t rest_len, total;

	memcpy(&n, b + info->info_size, 4);
	memcpy(&iseq_size, b + info->bpf.o.body_size, 4);
	if (!n || !entries)
		return 0;
	kind = positions ? RB_LINES_POSITIONS : RB_LINES_SUCCINCT;
	rest_len = kind == RB_LINES_POSITIONS ? 4 * (size_t)n : rb_lines__succ_bytes(iseq_size);
	total = 8 + (size_t)n * (4 + ENTRY_SIZE) + rest_len;
	if (n > 1 && kind == RB_LINES_SUCCINCT && !succ)
		return 0;
	if (total > CODE_LINES_MAX) {
		st->no_lines++;
		return 0;
	}
	/* the entries at the end of the buffer, their lines packed in front */
	rest = sc->lines + CODE_LINES_MAX - (size_t)n * ENTRY_SIZE;
	if (interp__read(pid, entries, rest, (size_t)n * ENTRY_SIZE))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		memcpy(&lines[i], rest + (size_t)i * ENTRY_SIZE, 4);
	memcpy(sc->lines, &n, 4);
	memcpy(sc->lines + 4, &kind, 4);
	rest = sc->lines + 8 + 4 * (size_t)n;
	if (n > 1 &&
	    interp__read(pid, kind == RB_LINES_POSITIONS ? positions : succ, rest, rest_len))
		return 0;
	return (uint32_t)(8 + 4 * (size_t)n + (n > 1 ? rest_len : 0));
}

static bool imemo(uint64_t flags, unsigned type)
{
	return (flags & T_MASK) == T_IMEMO && (flags >> 12 & 0xf) == type;
}

/* The value of klass's instance variable id, 0 when none. */
static uint64_t ivar(const struct ruby_info *info, pid_t pid, uint64_t klass, uint64_t id)
{
	uint64_t kv[RUBY_IVARS_MAX][2];
	int n = id ? ruby__ivars(pid, info, klass, kv, RUBY_IVARS_MAX) : 0;

	for (int i = 0; i < n; i++)
		if (kv[i][0] == id)
			return kv[i][1];
	return 0;
}

/* The class of the method a frame runs, as "Path#" or "Path." (a
 * singleton method: the class it is attached to) into out, from what the
 * method's environment held (me: a method entry, or an svar holding one).
 * The entry must be an iseq method's whose iseq is the frame's own or its
 * local one (a block's method), so a reused address never names a frame
 * with another's class. 0, or -1: no class. */
static int class_prefix(const struct ruby_info *info, pid_t pid, uint64_t me, uint64_t iseq,
			uint64_t local, char *out)
{
	uint64_t h[3], def[2], klass, flags, path;
	const char *sep = "#";

	if (!me || !info->classpath_id || interp__read(pid, me, h, sizeof(h)))
		return -1;
	if (imemo(h[0], IMEMO_SVAR) && (!h[1] || interp__read(pid, h[1], h, sizeof(h))))
		return -1; /* (its cref_or_me) */
	/* rb_callable_method_entry_t: flags, defined_class, def; the
	 * definition: its type in 4 bits, then body.iseq.iseqptr */
	if (!imemo(h[0], IMEMO_MENT) || interp__read(pid, h[2], def, sizeof(def)) ||
	    (def[0] & 0xf) != METHOD_TYPE_ISEQ || (def[1] != iseq && def[1] != local))
		return -1;
	klass = h[1];
	if (interp__read_u64(pid, klass, &flags))
		return -1;
	if ((flags & T_MASK) == T_ICLASS && /* a module's, through its iclass */
	    (interp__read_u64(pid, klass + 8, &klass) || interp__read_u64(pid, klass, &flags)))
		return -1;
	if ((flags & T_MASK) == T_CLASS && (flags & FL_SINGLETON)) {
		klass = ivar(info, pid, klass, info->attached_id);
		sep = ".";
		if (!klass || interp__read_u64(pid, klass, &flags))
			return -1;
	}
	if ((flags & T_MASK) != T_CLASS && (flags & T_MASK) != T_MODULE)
		return -1;
	path = ivar(info, pid, klass, info->classpath_id);
	if (!path || read_string(pid, path, out))
		return -1;
	strcat(out, sep);
	return 0;
}

/* Qualifies the label in sc->name with the method's class, as Ruby's
 * own profiler API does (rb_profile_frame_full_label): "block in five"
 * becomes "block in Shares#five". Left as it is when there is no class. */
static void qualify(const struct ruby_info *info, pid_t pid, const uint8_t *b, uint64_t me,
		    uint64_t iseq, struct code_scratch *sc)
{
	char base[CODE_NAME_MAX + 1], prefix[CODE_NAME_MAX + 2], full[sizeof(sc->name)];
	size_t len = strlen(sc->name), base_len;

	if (class_prefix(info, pid, me, iseq, bytes__u64(b, info->body_local_iseq), prefix) ||
	    read_string(pid, bytes__u64(b, info->body_base_label), base))
		return;
	base_len = strlen(base);
	if (base_len > len || strcmp(sc->name + len - base_len, base) != 0)
		return;
	snprintf(full, sizeof(full), "%.*s%s%s", (int)(len - base_len), sc->name, prefix, base);
	memcpy(sc->name, full, sizeof(full));
}

static struct code_entry *read_iseq(const void *facts, pid_t pid, uint64_t iseq, uint64_t me,
				    struct code_scratch *sc, struct code_names_stats *st,
				    enum code_names_failure *why)
{
	const struct ruby_info *info = facts;
	const struct kiln_rb_offsets *o = &info->bpf.o;
	uint8_t b[BODY_READ];
	uint64_t head[3], first;
	uint32_t type, size, lines_len;
	struct code_entry *e;

	if (interp__read(pid, iseq, head, sizeof(head)) ||
	    interp__read(pid, head[o->iseq_body / 8], b, sizeof(b))) {
		*why = CODE_NAMES_UNREADABLE;
		return NULL;
	}
	if ((head[0] & T_MASK) != T_IMEMO || (head[0] >> 12 & 0xf) != IMEMO_ISEQ) {
		*why = CODE_NAMES_NOT_CODE;
		return NULL;
	}
	*why = CODE_NAMES_BAD_STRING;
	if (read_string(pid, bytes__u64(b, info->body_label), sc->name) ||
	    read_path(pid, bytes__u64(b, info->body_path), sc->file))
		return NULL;
	qualify(info, pid, b, me, iseq, sc);
	lines_len = read_lines(info, pid, b, sc, st);
	memcpy(&type, b + o->body_type, 4);
	memcpy(&size, b + o->body_size, 4);
	first = bytes__u64(b, o->body_first_lineno);
	e = code_names__entry(sc, lines_len,
			      ((uint32_t)first ^ size << 8 ^ type << 20) & KILN_INTERP_CHECK_MASK,
			      (int32_t)((int64_t)first >> 1)); /* a Fixnum */
	if (!e)
		*why = CODE_NAMES_UNREADABLE;
	return e;
}

static uint32_t iseq_line(const struct code_entry *e, uint32_t pos)
{
	return pos == KILN_INTERP_NO_INSTR ? 0 : rb_lines__line(e->data, e->lines_len, pos);
}

const struct code_lang rb_names_lang = { read_iseq, iseq_line };
