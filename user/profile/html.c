// SPDX-License-Identifier: BSD-2-Clause
/* The HTML page: html/page.html with its {{markers}} filled in by the
 * style (html/flame.css), the script (html/flame.js), both compiled in by
 * the Makefile, and the profile as JSON. The JSON is the flame tree depth
 * first: per node its depth, function and count(s), with the functions'
 * names and modules interned in one string table, so the page grows
 * linearly with the tree. The script draws on a canvas. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile/flame.h"

/* Generated from user/profile/html by xxd -i. */
extern const unsigned char page_html[], flame_css[], flame_js[];
extern const unsigned int page_html_len, flame_css_len, flame_js_len;

/* A JSON string; '<' escaped too, so no "</script>" can end the block. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
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
		fprintf(f, "%s%" PRIu64, i ? "," : "", field(fl, i, what));
	fputc(']', f);
}

static void write_data(FILE *f, const struct flame *fl,
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
	fputs("}\n", f);
}

/* Copies page.html to f, each {{marker}} replaced by what it names. */
static int write_page(FILE *f, const struct flame *fl,
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
			write_data(f, fl, meta, diff);
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
	struct flame fl;
	int err;

	if (!cur || !f)
		return -EINVAL;
	err = flame__init(&fl);
	if (!err)
		err = flame__add(&fl, cur, FLAME_NEW);
	if (!err && base)
		err = flame__add(&fl, base, FLAME_BASE);
	if (!err)
		err = flame__order(&fl);
	if (!err)
		err = write_page(f, &fl, meta ? meta : &none, base != NULL);
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
