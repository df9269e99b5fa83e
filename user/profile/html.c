// SPDX-License-Identifier: BSD-2-Clause
/* The HTML page: html/page.html with its {{markers}} filled in by the
 * style (html/flame.css), the script (html/flame.js), both compiled in by
 * the Makefile, and the profile as JSON. The JSON is the flame tree depth
 * first: per node its depth, function and count(s), with the functions'
 * names and modules interned in one string table, so the page grows
 * linearly with the tree. A profile with labels adds its label sets and,
 * per set, the nodes it has samples at, so the page can filter by label
 * and compare two values. The script draws on a canvas. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "profile/flame.h"

/* Generated from user/profile/html by xxd -i. */
extern const unsigned char page_html[], flame_css[], flame_js[];
extern const unsigned int page_html_len, flame_css_len, flame_js_len;

/* A JSON string; '<' escaped too, so no "</script>" can end the block.
 * Runs of plain characters go out whole: a page holds every function's
 * name, and the stream's lock and checks per character were most of
 * writing them. */
static void json_string(FILE *f, const char *s)
{
	putc_unlocked('"', f);
	while (*s) {
		size_t n = 0;
		unsigned char c;

		while ((c = (unsigned char)s[n]) && c != '"' && c != '\\' && c >= 0x20 &&
		       c != '<' && c != 0x7f)
			n++;
		fwrite_unlocked(s, 1, n, f);
		s += n;
		if (!c)
			break;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else
			fprintf(f, "\\u%04x", c);
		s++;
	}
	putc_unlocked('"', f);
}

/* v in decimal, after a comma unless first: a page holds a few numbers
 * per node of its tree, and fprintf's parsing of its format for each was
 * most of writing them. */
static void json_number(FILE *f, bool first, uint64_t v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do
		buf[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (!first)
		buf[--i] = ',';
	fwrite_unlocked(buf + i, 1, sizeof(buf) - i, f);
}

/* Text for an HTML element: the five special characters escaped. */
static void html_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

enum field { NODE_DEPTH, NODE_FUNC, NODE_SELF, NODE_BASE, FUNC_NAME, FUNC_MODULE, FUNC_FILE,
	     FUNC_CLASS };

/* Field what of node i in depth-first order, or of function i. */
static uint64_t field(const struct flame *fl, size_t i, enum field what)
{
	switch (what) {
	case NODE_DEPTH: return fl->depth[i];
	case NODE_FUNC: return fl->tree.nodes[fl->order[i]].key;
	case NODE_SELF: return fl->self[FLAME_NEW][fl->order[i]];
	case NODE_BASE: return fl->self[FLAME_BASE][fl->order[i]];
	case FUNC_NAME: return fl->funcs[i].name;
	case FUNC_MODULE: return fl->funcs[i].module;
	case FUNC_FILE: return fl->funcs[i].file;
	case FUNC_CLASS: return fl->funcs[i].cls;
	}
	return 0;
}

/* ,"name":[v,v,...] of one field over n nodes or functions. */
static void json_array(FILE *f, const char *name, const struct flame *fl,
		       size_t n, enum field what)
{
	fprintf(f, ",\n\"%s\":[", name);
	for (size_t i = 0; i < n; i++)
		json_number(f, i == 0, field(fl, i, what));
	fputc(']', f);
}

/* The label sets as the page gets them (none unless a stack has labels):
 * each set's names and values interned in the flame's strings, and its
 * samples as (node, self) pairs, nodes by position in the page's order,
 * one pair per node, so a set costs what it has samples at. */
struct page_labels {
	size_t nsets;
	uint32_t *pairs;        /* string ids: name, value, name, value, ... */
	size_t *pair_start;     /* set s: pairs[pair_start[s] .. pair_start[s + 1]) */
	struct flame_label_count *counts;       /* by set, then node; node = position */
	size_t *count_start;    /* set s: counts[count_start[s] .. count_start[s + 1]) */
};

static void page_labels_release(struct page_labels *pl)
{
	free(pl->pairs);
	free(pl->pair_start);
	free(pl->counts);
	free(pl->count_start);
	*pl = (struct page_labels){ 0 };
}

static int count_cmp(const void *a, const void *b)
{
	const struct flame_label_count *x = a, *y = b;

	if (x->set != y->set)
		return x->set < y->set ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int page_labels_build(struct flame *fl, struct page_labels *pl)
{
	size_t nsets = fl->sets.len, npairs = 0, cap = 0, n = 0, i;
	uint32_t *pos_of = NULL;
	struct labels set = { 0 };
	int err = 0;

	*pl = (struct page_labels){ 0 };
	if (!fl->keep_labels || nsets < 2)
		return 0;       /* only set 0: no stack has labels */
	pl->pair_start = calloc(nsets + 1, sizeof(*pl->pair_start));
	pl->count_start = calloc(nsets + 1, sizeof(*pl->count_start));
	pl->counts = malloc((fl->nlcounts ? fl->nlcounts : 1) * sizeof(*pl->counts));
	pos_of = malloc(fl->tree.len * sizeof(*pos_of));
	if (!pl->pair_start || !pl->count_start || !pl->counts || !pos_of)
		err = -ENOMEM;
	for (i = 0; i < nsets && !err; i++) {
		const char *name, *value;
		size_t at = 0;

		pl->pair_start[i] = npairs;
		/* a text that is no label set (none kiln made) shows as none */
		if (labels__from_text(&set, strtab__get(&fl->sets, (uint32_t)i)))
			set.len = set.n = 0;
		while (!err && labels__next(&set, &at, &name, &value)) {
			err = array_reserve(pl->pairs, cap, npairs + 2);
			if (!err)
				err = strtab__intern(&fl->strings, name, &pl->pairs[npairs]);
			if (!err)
				err = strtab__intern(&fl->strings, value, &pl->pairs[npairs + 1]);
			npairs += 2;
		}
	}
	if (!err) {
		pl->pair_start[nsets] = npairs;
		for (i = 0; i < fl->tree.len; i++)
			pos_of[fl->order[i]] = (uint32_t)i;
		for (i = 0; i < fl->nlcounts; i++) {
			pl->counts[i] = fl->lcounts[i];
			pl->counts[i].node = pos_of[fl->lcounts[i].node];
		}
		qsort(pl->counts, fl->nlcounts, sizeof(*pl->counts), count_cmp);
		/* one pair per (set, node): locations of one function merge */
		for (i = 0; i < fl->nlcounts; i++) {
			if (n && pl->counts[n - 1].set == pl->counts[i].set &&
			    pl->counts[n - 1].node == pl->counts[i].node)
				pl->counts[n - 1].self += pl->counts[i].self;
			else
				pl->counts[n++] = pl->counts[i];
		}
		for (i = 0; i < n; i++)
			pl->count_start[pl->counts[i].set + 1]++;
		for (i = 0; i < nsets; i++)
			pl->count_start[i + 1] += pl->count_start[i];
		pl->nsets = nsets;
	}
	free(pos_of);
	labels__release(&set);
	if (err)
		page_labels_release(pl);
	return err;
}

/* ,"labels":{...}: per set its pairs of string ids, where its samples
 * start in node and self, and per sample the node (its position, less the
 * set's previous one: small numbers) and the count. */
static void write_labels(FILE *f, const struct page_labels *pl)
{
	size_t s, i;

	if (!pl->nsets)
		return;
	fputs(",\n\"labels\":{\"sets\":[", f);
	for (s = 0; s < pl->nsets; s++) {
		fputs(s ? ",[" : "[", f);
		for (i = pl->pair_start[s]; i < pl->pair_start[s + 1]; i++)
			json_number(f, i == pl->pair_start[s], pl->pairs[i]);
		fputc(']', f);
	}
	fputs("],\n\"start\":[", f);
	for (s = 0; s <= pl->nsets; s++)
		json_number(f, s == 0, pl->count_start[s]);
	fputs("],\n\"node\":[", f);
	for (s = 0; s < pl->nsets; s++)
		for (i = pl->count_start[s]; i < pl->count_start[s + 1]; i++)
			json_number(f, i == 0, pl->counts[i].node -
				    (i > pl->count_start[s] ? pl->counts[i - 1].node : 0));
	fputs("],\n\"self\":[", f);
	for (i = 0; i < pl->count_start[pl->nsets]; i++)
		json_number(f, i == 0, pl->counts[i].self);
	fputs("]}", f);
}

static void write_data(FILE *f, const struct flame *fl, const struct page_labels *pl,
		       const struct html_meta *meta, bool diff)
{
	size_t i;

	fputs("{\"title\":", f);
	json_string(f, meta->title ? meta->title : "kiln");
	fputs(",\"unit\":", f);
	json_string(f, meta->unit ? meta->unit : "samples");
	fprintf(f, ",\"time\":%" PRId64 ",\"duration\":%" PRId64 ",\"diff\":%s",
		meta->time_nanos, meta->duration_nanos, diff ? "true" : "false");
	fputs(",\n\"classes\":[", f);
	for (i = 0; i < CLASS_COUNT; i++) {
		if (i)
			fputc(',', f);
		json_string(f, func_class_names[i]);
	}
	fputs("],\n\"strings\":[", f);
	for (i = 0; i < fl->strings.len; i++) {
		if (i)
			fputc(',', f);
		json_string(f, flame__str(fl, i));
	}
	fputc(']', f);
	json_array(f, "fname", fl, fl->nfuncs, FUNC_NAME);
	json_array(f, "fmod", fl, fl->nfuncs, FUNC_MODULE);
	json_array(f, "ffile", fl, fl->nfuncs, FUNC_FILE);
	json_array(f, "fcls", fl, fl->nfuncs, FUNC_CLASS);
	json_array(f, "depth", fl, fl->tree.len, NODE_DEPTH);
	json_array(f, "func", fl, fl->tree.len, NODE_FUNC);
	json_array(f, "self", fl, fl->tree.len, NODE_SELF);
	if (diff)
		json_array(f, "base", fl, fl->tree.len, NODE_BASE);
	write_labels(f, pl);
	fputs("}\n", f);
}

/* Copies page.html to f, each {{marker}} replaced by what it names. */
static int write_page(FILE *f, const struct flame *fl, const struct page_labels *pl,
		      const struct html_meta *meta, bool diff)
{
	const char *t = (const char *)page_html, *end = t + page_html_len;

	while (t < end) {
		const char *open = memmem(t, end - t, "{{", 2), *close;
		size_t len;

		if (!open) {
			fwrite(t, 1, end - t, f);
			break;
		}
		fwrite(t, 1, open - t, f);
		close = memmem(open, end - open, "}}", 2);
		if (!close)
			return -EINVAL;
		len = close - open - 2;
		if (len == 5 && !memcmp(open + 2, "title", 5))
			html_text(f, meta->title ? meta->title : "kiln");
		else if (len == 5 && !memcmp(open + 2, "style", 5))
			fwrite(flame_css, 1, flame_css_len, f);
		else if (len == 6 && !memcmp(open + 2, "script", 6))
			fwrite(flame_js, 1, flame_js_len, f);
		else if (len == 4 && !memcmp(open + 2, "data", 4))
			write_data(f, fl, pl, meta, diff);
		else
			return -EINVAL;
		t = close + 2;
	}
	return ferror(f) ? -EIO : 0;
}

static int write_flame(const struct profile *base, const struct profile *cur,
		       const struct html_meta *meta, FILE *f)
{
	static const struct html_meta none;
	struct page_labels pl = { 0 };
	struct flame fl;
	int err;

	if (!cur || !f)
		return -EINVAL;
	err = flame__init(&fl);
	fl.keep_labels = !base;         /* a diff page has no label panel */
	if (!err)
		err = flame__add(&fl, cur, FLAME_NEW);
	if (!err && base)
		err = flame__add(&fl, base, FLAME_BASE);
	if (!err)
		err = flame__order(&fl);
	if (!err)
		err = page_labels_build(&fl, &pl);
	if (!err)
		err = write_page(f, &fl, &pl, meta ? meta : &none, base != NULL);
	page_labels_release(&pl);
	flame__release(&fl);
	return err;
}

int html__write(const struct profile *p, const struct html_meta *meta, FILE *f)
{
	return write_flame(NULL, p, meta, f);
}

int html__write_diff(const struct profile *base, const struct profile *cur,
		     const struct html_meta *meta, FILE *f)
{
	return base ? write_flame(base, cur, meta, f) : -EINVAL;
}
