// SPDX-License-Identifier: BSD-2-Clause
/* Folded stacks (FlameGraph's collapsed format). A line is a stack of frame
 * texts, so stacks that differ only in addresses or mappings must merge:
 * the profile's tree is re-keyed by frame text into a second stack tree,
 * whose counted nodes become the lines, sorted so output is stable. On
 * request a stack's label set is a first frame "{name=value,...}"
 * (folded_read.c reads it back). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "core/array.h"
#include "profile/profile_priv.h"

#define KERNEL_SUFFIX "_[k]"

struct folded_line {
	const char *text;
	uint64_t count;
};

/* The merged tree and what it takes to build it; released as one. */
struct folder {
	struct strtab texts;    /* distinct frame texts */
	uint32_t *loc_text;     /* location index -> text id */
	struct stack_tree tree; /* keys are text ids */
	char *scratch;
	size_t scratch_cap;
};

static void folder_release(struct folder *fo)
{
	strtab__release(&fo->texts);
	free(fo->loc_text);
	stack_tree__release(&fo->tree);
	free(fo->scratch);
}

/* A location's frame text: the name with ';' (the separator) turned into
 * ':' and control characters (line breaks, tabs) into spaces, so every
 * line stays parseable, and bytes not valid UTF-8 (a process names its
 * files and symbols as it likes) into '?', as pprof's; kernel frames get
 * FlameGraph's "_[k]". */
static int frame_text(struct folder *fo, const struct profile *p,
		      const struct location *l, uint32_t *id)
{
	const char *name = strtab__get(&p->strings, l->name);
	char *fixed = utf8__valid(name) ? NULL : utf8__sanitized(name);
	size_t i, n;
	int err;

	if (fixed)
		name = fixed;
	n = strlen(name);
	err = array_reserve(fo->scratch, fo->scratch_cap,
			    n + sizeof(KERNEL_SUFFIX));
	if (err) {
		free(fixed);
		return err;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = name[i];

		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = ' ';
		fo->scratch[i] = c;
	}
	fo->scratch[n] = '\0';
	free(fixed);
	if (l->kind == FRAME_KERNEL)
		strcat(fo->scratch, KERNEL_SUFFIX);
	return strtab__intern(&fo->texts, fo->scratch, id);
}

/* The bytes a label name or value cannot hold as they are: the prefix's
 * own punctuation, the frame separator, and control characters. */
static bool label_escaped(unsigned char c)
{
	return c < 0x20 || c == 0x7f || strchr("\\,={};", c);
}

/* A FRAME_LABELS location's text (core/labels.h's text form, every
 * string followed by LABELS_TEXT_SEP) as the prefix frame
 * "{name=value,name=value}", each byte label_escaped() names written as
 * "\xHH"; *id is STACK_TREE_SKIP for a stack without labels. */
static int labels_text(struct folder *fo, const char *text, uint32_t *id)
{
	size_t n = strlen(text), at = 0, strings = 0;
	int err;

	if (!n) {
		*id = STACK_TREE_SKIP;
		return 0;
	}
	err = array_reserve(fo->scratch, fo->scratch_cap, 4 * n + 3);
	if (err)
		return err;
	fo->scratch[at++] = '{';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = text[i];

		if (c == LABELS_TEXT_SEP) {
			/* after a name '=', after a value ',' (none after the last) */
			if (i + 1 < n || !(strings % 2))
				fo->scratch[at++] = strings++ % 2 ? ',' : '=';
		} else if (label_escaped(c)) {
			at += (size_t)sprintf(fo->scratch + at, "\\x%02x", c);
		} else {
			fo->scratch[at++] = (char)c;
		}
	}
	fo->scratch[at++] = '}';
	fo->scratch[at] = '\0';
	return strtab__intern(&fo->texts, fo->scratch, id);
}

static int folder_build(struct folder *fo, const struct profile *p, bool labels)
{
	const struct stack_node *nodes = p->tree.nodes;
	uint32_t *fold_of;      /* profile node -> merged node */
	size_t i;
	int err;

	err = strtab__init(&fo->texts);
	if (!err)
		err = stack_tree__init(&fo->tree);
	if (err)
		return err;
	fo->loc_text = calloc(p->nlocs ? p->nlocs : 1, sizeof(*fo->loc_text));
	if (!fo->loc_text)
		return -ENOMEM;
	for (i = 0; i < p->nlocs; i++) {
		/* labels are no frame of the stack, unless asked for */
		if (p->locs[i].kind == FRAME_LABELS) {
			fo->loc_text[i] = STACK_TREE_SKIP;
			if (labels) {
				err = labels_text(fo, strtab__get(&p->strings, p->locs[i].name),
						  &fo->loc_text[i]);
				if (err)
					return err;
			}
			continue;
		}
		err = frame_text(fo, p, &p->locs[i], &fo->loc_text[i]);
		if (err)
			return err;
	}
	fold_of = calloc(p->tree.len, sizeof(*fold_of));
	if (!fold_of)
		return -ENOMEM;
	err = stack_tree__graft(&fo->tree, &p->tree, fo->loc_text, fold_of, STACK_TREE_ROOT);
	for (i = 1; !err && i < p->tree.len; i++)
		if (nodes[i].self)
			stack_tree__count(&fo->tree, fold_of[i], nodes[i].self);
	free(fold_of);
	return err;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

/* Writes the merged tree's counted nodes as sorted lines. */
static int folder_write(const struct folder *fo, FILE *f)
{
	const struct stack_node *nodes = fo->tree.nodes;
	struct folded_line *lines = NULL;
	size_t *path_len = NULL;        /* text length of root..node */
	size_t i, nlines = 0, arena_len = 0, pos = 0;
	char *arena = NULL;
	uint32_t n;
	int err = -ENOMEM;

	path_len = calloc(fo->tree.len, sizeof(*path_len));
	if (!path_len)
		goto cleanup;
	for (i = 1; i < fo->tree.len; i++) {
		uint32_t parent = nodes[i].parent;

		path_len[i] = strlen(strtab__get(&fo->texts, nodes[i].key)) +
			      (parent == STACK_TREE_ROOT ? 0 : path_len[parent] + 1);
		if (nodes[i].self) {
			nlines++;
			arena_len += path_len[i] + 1;
		}
	}
	arena = malloc(arena_len ? arena_len : 1);
	lines = calloc(nlines ? nlines : 1, sizeof(*lines));
	if (!arena || !lines)
		goto cleanup;
	nlines = 0;
	for (i = 1; i < fo->tree.len; i++) {
		char *end;

		if (!nodes[i].self)
			continue;
		/* fill the line from its end: leaf text first, root last */
		end = arena + pos + path_len[i];
		*end = '\0';
		for (n = i; n != STACK_TREE_ROOT; n = nodes[n].parent) {
			const char *t = strtab__get(&fo->texts, nodes[n].key);
			size_t tl = strlen(t);

			end -= tl;
			memcpy(end, t, tl);
			if (nodes[n].parent != STACK_TREE_ROOT)
				*--end = ';';
		}
		lines[nlines++] = (struct folded_line){ arena + pos, nodes[i].self };
		pos += path_len[i] + 1;
	}
	qsort(lines, nlines, sizeof(*lines), line_cmp);
	err = 0;
	for (i = 0; i < nlines && !err; i++)
		if (fprintf(f, "%s %" PRIu64 "\n", lines[i].text, lines[i].count) < 0)
			err = -EIO;
	if (!err && ferror(f))
		err = -EIO;
cleanup:
	free(path_len);
	free(arena);
	free(lines);
	return err;
}

int folded__write(const struct profile *p, bool labels, FILE *f)
{
	struct folder fo = { 0 };
	int err;

	if (!p || !f)
		return -EINVAL;
	err = folder_build(&fo, p, labels);
	if (!err)
		err = folder_write(&fo, f);
	folder_release(&fo);
	return err;
}
