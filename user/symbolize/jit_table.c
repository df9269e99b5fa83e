// SPDX-License-Identifier: BSD-2-Clause
/* JIT symbol tables (see jit_table.h).
 *
 * DESIGN: the builder keeps the entries in file order with their names in
 * one buffer. Finishing sorts them by start and sweeps the addresses once
 * with a heap of the entries covering the current address, largest file
 * order on top: every stretch between two boundaries (a start or an end)
 * belongs to the latest entry covering it. The result is a sorted array of
 * disjoint ranges, at most two per entry, looked up by binary search; only
 * the names some range still uses are kept. A builder counts each entry at
 * its worst case (two ranges and its name), so the finished table never
 * exceeds the builder's bound. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/safe_open.h"
#include "symbolize/jit_table.h"

const char *const jit_refusal_names[JIT_REFUSAL_COUNT] = {
	[JIT_REFUSED_OWNER] = "owner",
	[JIT_REFUSED_BAD_LINE] = "bad_line",
	[JIT_REFUSED_BAD_HEADER] = "bad_header",
	[JIT_REFUSED_BAD_RECORD] = "bad_record",
	[JIT_REFUSED_NAME_LONG] = "name_too_long",
	[JIT_REFUSED_TABLE] = "table_too_large",
};

struct jit_range {
	uint64_t start;
	uint32_t len;
	uint32_t name; /* entry index while sweeping, then name offset */
};

struct jit_table {
	struct jit_range *ranges;
	size_t n;
	char *names;
	size_t names_len;
};

/* What an entry may cost the finished table: two ranges, and its name. */
#define ENTRY_RANGES (2 * sizeof(struct jit_range))

void jit_builder__init(struct jit_builder *b, const char *file, size_t max_bytes)
{
	*b = (struct jit_builder){ .file = file, .max_bytes = max_bytes };
	/* Names and entries are indexed by 32 bits. */
	if (b->max_bytes > UINT32_MAX)
		b->max_bytes = UINT32_MAX;
}

void jit_builder__refuse(struct jit_builder *b, enum jit_refusal r, const char *detail)
{
	b->refused[r]++;
	safe_open__log_refusal(b->file, jit_refusal_names[r], detail);
}

void jit_builder__release(struct jit_builder *b)
{
	free(b->entries);
	free(b->names);
	b->entries = NULL;
	b->names = NULL;
	b->n = b->cap = b->names_len = b->names_cap = 0;
}

int jit_builder__add(struct jit_builder *b, uint64_t start, uint64_t size, const char *name,
		     size_t name_len)
{
	const char *nul = memchr(name, '\0', name_len);
	size_t len = nul ? (size_t)(nul - name) : name_len, used;

	if (size == 0)
		return 0;
	if (size > UINT32_MAX || start > UINT64_MAX - size || len == 0)
		return -EINVAL;
	if (b->full)
		return -E2BIG;
	if (len >= JIT_NAME_MAX) {
		len = JIT_NAME_MAX - 1;
		jit_builder__refuse(b, JIT_REFUSED_NAME_LONG,
				    "a symbol name longer than 1 KiB cut");
	}
	used = b->n * ENTRY_RANGES + b->names_len;
	if (used + ENTRY_RANGES + len + 1 > b->max_bytes) {
		b->full = true;
		jit_builder__refuse(
			b, JIT_REFUSED_TABLE,
			"more symbols than a quarter of --jit-memory holds: the rest of the file skipped");
		return -E2BIG;
	}
	if (array_reserve(b->entries, b->cap, b->n + 1) ||
	    array_reserve(b->names, b->names_cap, b->names_len + len + 1))
		return -ENOMEM;
	b->entries[b->n] = (struct jit_entry){ .start = start,
					       .size = (uint32_t)size,
					       .name = (uint32_t)b->names_len,
					       .seq = (uint32_t)b->n };
	memcpy(b->names + b->names_len, name, len);
	b->names[b->names_len + len] = '\0';
	b->names_len += len + 1;
	b->n++;
	return 0;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct jit_entry *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static uint64_t entry_end(const struct jit_entry *e)
{
	return e->start + e->size;
}

/* A max-heap of entry indices by file order. */
static void heap_push(uint32_t *h, size_t *n, const struct jit_entry *e, uint32_t idx)
{
	size_t i = (*n)++;

	while (i) {
		size_t parent = (i - 1) / 2;

		if (e[h[parent]].seq >= e[idx].seq)
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = idx;
}

static void heap_pop(uint32_t *h, size_t *n, const struct jit_entry *e)
{
	uint32_t last = h[--*n];
	size_t i = 0;

	if (!*n)
		return;
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && e[h[c + 1]].seq > e[h[c]].seq)
			c++;
		if (e[h[c]].seq <= e[last].seq)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
}

/* The sweep: ranges (room for 2n) of the sorted entries, range.name the
 * winning entry's index. Returns the number of ranges. */
static size_t sweep(const struct jit_entry *e, size_t n, uint32_t *heap, struct jit_range *out)
{
	size_t i = 0, hn = 0, nr = 0;
	uint64_t pos = 0;

	while (i < n || hn) {
		uint64_t next;
		uint32_t top;

		if (!hn)
			pos = e[i].start;
		while (i < n && e[i].start <= pos)
			heap_push(heap, &hn, e, (uint32_t)i++);
		while (hn && entry_end(&e[heap[0]]) <= pos)
			heap_pop(heap, &hn, e);
		if (!hn)
			continue;
		top = heap[0];
		next = entry_end(&e[top]);
		if (i < n && e[i].start < next)
			next = e[i].start;
		if (nr && out[nr - 1].name == top && out[nr - 1].start + out[nr - 1].len == pos)
			out[nr - 1].len += (uint32_t)(next - pos);
		else
			out[nr++] = (struct jit_range){ pos, (uint32_t)(next - pos), top };
		pos = next;
	}
	return nr;
}

/* Keeps only the names the ranges use; range.name becomes an offset. */
static int compact_names(struct jit_table *t, const struct jit_builder *b)
{
	uint32_t *moved = malloc(b->n * sizeof(*moved));
	size_t len = 0;

	t->names = malloc(b->names_len ? b->names_len : 1);
	if (!moved || !t->names) {
		free(moved);
		return -ENOMEM;
	}
	memset(moved, 0xff, b->n * sizeof(*moved));
	for (size_t r = 0; r < t->n; r++) {
		uint32_t idx = t->ranges[r].name;

		if (moved[idx] == UINT32_MAX) {
			const char *name = b->names + b->entries[idx].name;
			size_t nl = strlen(name) + 1;

			memcpy(t->names + len, name, nl);
			moved[idx] = (uint32_t)len;
			len += nl;
		}
		t->ranges[r].name = moved[idx];
	}
	free(moved);
	t->names_len = len;
	if (len < b->names_len) {
		char *shrunk = realloc(t->names, len ? len : 1);

		if (shrunk)
			t->names = shrunk;
	}
	return 0;
}

struct jit_table *jit_builder__finish(struct jit_builder *b)
{
	struct jit_table *t = calloc(1, sizeof(*t));
	uint32_t *heap = NULL;

	if (!t)
		goto nomem;
	if (b->n) {
		qsort(b->entries, b->n, sizeof(*b->entries), entry_cmp);
		heap = malloc(b->n * sizeof(*heap));
		t->ranges = malloc(2 * b->n * sizeof(*t->ranges));
		if (!heap || !t->ranges)
			goto nomem;
		t->n = sweep(b->entries, b->n, heap, t->ranges);
		free(heap);
		heap = NULL;
		if (t->n < 2 * b->n) {
			struct jit_range *shrunk = realloc(t->ranges, t->n * sizeof(*t->ranges));

			if (shrunk)
				t->ranges = shrunk;
		}
		if (compact_names(t, b))
			goto nomem;
	}
	jit_builder__release(b);
	return t;
nomem:
	free(heap);
	jit_table__free(t);
	jit_builder__release(b);
	errno = ENOMEM;
	return NULL;
}

const char *jit_table__lookup(const struct jit_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	/* The last range starting at or before addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - t->ranges[lo - 1].start >= t->ranges[lo - 1].len)
		return NULL;
	return t->names + t->ranges[lo - 1].name;
}

size_t jit_table__count(const struct jit_table *t)
{
	return t->n;
}

size_t jit_table__bytes(const struct jit_table *t)
{
	return sizeof(*t) + t->n * sizeof(*t->ranges) + t->names_len;
}

void jit_table__free(struct jit_table *t)
{
	if (!t)
		return;
	free(t->ranges);
	free(t->names);
	free(t);
}
