/* SPDX-License-Identifier: BSD-2-Clause */
/* The label pairs of one set -> canonical struct labels: sorted by name,
 * values valid UTF-8 (invalid bytes become '?') of at most VALUE_MAX_BYTES,
 * cut at a character boundary, at most MAX_LABELS pairs (the rest counted
 * as dropped). Pairs are borrowed until emit copies them. */
#include <errno.h>
#include <string.h>

#include "metadata/metadata_priv.h"

/* Length of the valid UTF-8 sequence at s[0..n), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, beyond U+10FFFF. */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool label_builder__utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0, l; i < n; i += l)
		if (!(l = utf8_len((const unsigned char *)s + i, n - i)))
			return false;
	return true;
}

void label_builder__add(struct label_builder *b, const char *name, const char *value)
{
	if (!value || !*value)
		return;
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->pairs[i].name, name) == 0)
			return;
	if (b->n == MAX_LABELS) {
		b->dropped++;
		return;
	}
	b->pairs[b->n++] = (struct label_pair){ name, value };
}

/* Appends value as valid UTF-8 of at most VALUE_MAX_BYTES. true when it
 * had to be changed. */
static bool append_value(struct labels *l, const char *v)
{
	size_t n = strlen(v), out = 0;
	bool changed = false;

	for (size_t i = 0; i < n;) {
		size_t cl = utf8_len((const unsigned char *)v + i, n - i);

		if (out + (cl ? cl : 1) > VALUE_MAX_BYTES) {
			changed = true;
			break;
		}
		if (cl) {
			memcpy(l->buf + l->len + out, v + i, cl);
			i += cl;
			out += cl;
		} else {
			l->buf[l->len + out++] = '?';
			i++;
			changed = true;
		}
	}
	l->buf[l->len + out] = '\0';
	l->len += out + 1;
	return changed;
}

int label_builder__emit(struct label_builder *b, struct labels *out, struct metadata_stats *st)
{
	size_t need = 0;

	/* Insertion sort: a handful of pairs. */
	for (size_t i = 1; i < b->n; i++) {
		struct label_pair p = b->pairs[i];
		size_t j = i;

		for (; j > 0 && strcmp(b->pairs[j - 1].name, p.name) > 0; j--)
			b->pairs[j] = b->pairs[j - 1];
		b->pairs[j] = p;
	}
	for (size_t i = 0; i < b->n; i++) {
		size_t vl = strlen(b->pairs[i].value);

		need += strlen(b->pairs[i].name) + 2 + (vl < VALUE_MAX_BYTES ? vl : VALUE_MAX_BYTES);
	}
	out->len = 0;
	out->n = 0;
	if (labels__reserve(out, need))
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		size_t nl = strlen(b->pairs[i].name) + 1;

		memcpy(out->buf + out->len, b->pairs[i].name, nl);
		out->len += nl;
		if (append_value(out, b->pairs[i].value))
			st->label_values_truncated++;
		out->n++;
	}
	st->labels_dropped += b->dropped;
	return 0;
}
