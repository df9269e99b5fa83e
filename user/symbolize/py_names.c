// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: a code object is read in one bounded read (every field used lies
 * in its first CODE_READ bytes), its type checked, then its qualified name
 * and file (compact str objects) and its PEP 626 line table. */
#include <string.h>

#include "core/bytes.h"
#include "symbolize/py_lines.h"
#include "symbolize/py_names.h"

#define CODE_READ 160 /* bytes of a code object read: every field used is below */
#define STR_HEAD 80 /* bytes of a str object's header read */

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
		code_names__put_utf8(cp, out, &o, out_len);
	}
	out[o] = 0;
	return o;
}

/* The str object at addr as UTF-8 into out (at most CODE_NAME_MAX
 * characters). 0 or -1. */
static int read_str(const struct python_info *info, pid_t pid, uint64_t addr, char *out,
		    size_t out_len)
{
	uint8_t head[STR_HEAD], data[CODE_NAME_MAX * 4];
	int64_t len;
	uint32_t state;
	unsigned kind;
	size_t at;

	if (interp__read(pid, addr, head, sizeof(head)))
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
	if (len > CODE_NAME_MAX)
		len = CODE_NAME_MAX;
	if (len && interp__read(pid, addr + at, data, (size_t)len * kind))
		return -1;
	py_names__utf8(data, (size_t)len, kind, out, out_len);
	return 0;
}

static struct code_entry *read_code(const void *facts, pid_t pid, uint64_t code, uint64_t aux,
				    struct code_scratch *sc, struct code_names_stats *st,
				    enum code_names_failure *why)
{
	const struct python_info *info = facts;
	const struct kiln_py_offsets *o = &info->bpf.o;
	uint8_t c[CODE_READ];
	uint64_t name_addr, lt, lt_len = 0;
	struct code_entry *e;

	(void)aux; /* Python frames have none */
	if (interp__read(pid, code, c, sizeof(c))) {
		*why = CODE_NAMES_UNREADABLE;
		return NULL;
	}
	if (bytes__u64(c, 8) != info->bpf.code_type) {
		*why = CODE_NAMES_NOT_CODE;
		return NULL;
	}
	name_addr = bytes__u64(c, info->co_qualname ? info->co_qualname : info->co_name);
	*why = CODE_NAMES_BAD_STRING;
	if (read_str(info, pid, name_addr, sc->name, sizeof(sc->name)) ||
	    read_str(info, pid, bytes__u64(c, info->co_filename), sc->file, sizeof(sc->file)))
		return NULL;
	lt = bytes__u64(c, info->co_linetable);
	if (lt && interp__read(pid, lt + 16, &lt_len, 8) == 0) {
		if (lt_len > CODE_LINES_MAX) {
			st->no_lines++;
			lt_len = 0;
		} else if (lt_len && interp__read(pid, lt + 32, sc->lines, lt_len)) {
			lt_len = 0;
		}
	} else {
		lt_len = 0;
	}
	e = code_names__entry(sc, (uint32_t)lt_len,
			      (bytes__u32(c, o->code_firstlineno) ^
			       bytes__u32(c, o->code_argcount) << 16 ^
			       bytes__u32(c, o->code_flags) << 8) &
				      KILN_INTERP_CHECK_MASK,
			      (int32_t)bytes__u32(c, o->code_firstlineno));
	if (!e)
		*why = CODE_NAMES_UNREADABLE;
	return e;
}

static uint32_t code_line(const struct code_entry *e, uint32_t index)
{
	return index == KILN_INTERP_NO_INSTR ?
		       0 :
		       py_lines__line(e->data, e->lines_len, e->firstlineno, index);
}

const struct code_lang py_names_lang = { read_code, code_line };
