// SPDX-License-Identifier: BSD-2-Clause
/* Rust names through libiberty's rust_demangle_callback.
 *
 * DESIGN: the demangler prints through a callback; the sink keeps what
 * fits in the caller's buffer and counts the rest. Past max_total bytes it
 * leaves the demangler with a longjmp, as elf_symtab.c does with
 * libstdc++'s demangler, but only at a piece of pure ASCII: libiberty's
 * one allocation while it prints is the buffer of a decoded (punycode)
 * identifier, freed right after that one print, and only that piece can
 * hold bytes above 0x7f (every other piece is the input, which a v0 name
 * keeps to [_0-9A-Za-z], a literal or a number). So no jump leaves memory
 * behind; a bomb still ends at its next separator ("::", ", ", "<"). */
#include <setjmp.h>
#include <stdbool.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "symbolize/demangle.h"

struct sink {
	char *buf;
	size_t cap, len, total, max;
	jmp_buf bail;
};

static bool all_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] > 0x7f)
			return false;
	return true;
}

static void sink_write(const char *s, size_t n, void *opaque)
{
	struct sink *k = opaque;
	size_t room = k->cap - 1 - k->len;
	size_t take = n < room ? n : room;

	/* libiberty prints an empty identifier as (NULL, 0). */
	if (take)
		memcpy(k->buf + k->len, s, take);
	k->len += take;
	k->total += n;
	if (k->total > k->max && all_ascii(s, n))
		longjmp(k->bail, 1);
}

/* 1, 0 (not Rust) or -1 (left at the bound). */
static int run(const char *input, struct sink *k)
{
	if (setjmp(k->bail))
		return -1;
	return rust_demangle_callback(input, 0, sink_write, k) ? 1 : 0;
}

int demangle__rust(const char *name, char *out, size_t cap, size_t max_total, size_t *total)
{
	struct sink k = { .buf = out, .cap = cap, .max = max_total };
	int r;

	out[0] = '\0';
	*total = 0;
	/* Legacy names start _ZN, v0 names _R; anything else is not Rust. */
	if (name[0] != '_' || (name[1] != 'R' && (name[1] != 'Z' || name[2] != 'N')))
		return 0;
	r = run(name, &k);
	out[r > 0 ? k.len : 0] = '\0';
	if (r > 0)
		*total = k.total;
	return r;
}
