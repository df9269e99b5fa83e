/* SPDX-License-Identifier: BSD-2-Clause */
/* What the two JIT symbol file targets check on every input (included by
 * perf_map.c and jitdump.c, which differ in their reader and corpus): the
 * input is written to a memfd, as the readers take a file, and read into
 * a builder with a small bound;
 * - the reader returns 0 (or -ENOMEM), whatever the input;
 * - every entry kept has a name of 1 to JIT_NAME_MAX - 1 bytes, and a
 *   range that does not wrap;
 * - the table stays within the builder's bound;
 * - the table agrees with the plain reading of the entries, in file order
 *   the last one covering an address names it, at and around every
 *   entry's first and last byte. */
#ifndef KILN_TESTS_FUZZ_JIT_CHECK_H
#define KILN_TESTS_FUZZ_JIT_CHECK_H

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbolize/jit_table.h"

#define JIT_FUZZ_MAX_BYTES (256u << 10)
/* Entries checked against the plain reading (quadratic). */
#define JIT_FUZZ_CHECKED 512

typedef int (*jit_reader_fn)(struct jit_builder *b, int fd, uint64_t size);

/* The plain reading: the name of the last entry covering addr, or NULL. */
static const char *jit_plain_lookup(const struct jit_entry *e, size_t n, const char *names,
				    uint64_t addr)
{
	for (size_t i = n; i-- > 0;)
		if (addr >= e[i].start && addr - e[i].start < e[i].size)
			return names + e[i].name;
	return NULL;
}

static void jit_check_addr(const struct jit_table *t, const struct jit_entry *e, size_t n,
			   const char *names, uint64_t addr)
{
	const char *want = jit_plain_lookup(e, n, names, addr);
	const char *got = jit_table__lookup(t, addr);

	FUZZ_CHECK(!want == !got);
	FUZZ_CHECK(!want || strcmp(want, got) == 0);
}

static inline int jit_fuzz_one(const uint8_t *data, size_t size, jit_reader_fn read_file)
{
	struct jit_builder b;
	struct jit_entry *entries = NULL;
	struct jit_table *t;
	char *names = NULL;
	size_t n, off = 0;
	int fd = memfd_create("jit-fuzz", MFD_CLOEXEC), err;

	FUZZ_CHECK(fd >= 0);
	while (off < size) {
		ssize_t w = write(fd, data + off, size - off);

		FUZZ_CHECK(w > 0);
		off += (size_t)w;
	}
	jit_builder__init(&b, "fuzz", JIT_FUZZ_MAX_BYTES);
	err = read_file(&b, fd, size);
	close(fd);
	FUZZ_CHECK(err == 0 || err == -ENOMEM);
	n = b.n;
	FUZZ_CHECK(!b.refused[JIT_REFUSED_TABLE] == !b.full);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(b.names + b.entries[i].name);

		FUZZ_CHECK(len > 0 && len < JIT_NAME_MAX);
		FUZZ_CHECK(b.entries[i].size > 0);
		FUZZ_CHECK(b.entries[i].start + b.entries[i].size > b.entries[i].start);
	}
	if (n && n <= JIT_FUZZ_CHECKED) {
		entries = malloc(n * sizeof(*entries));
		names = malloc(b.names_len);
		FUZZ_CHECK(entries && names);
		memcpy(entries, b.entries, n * sizeof(*entries));
		memcpy(names, b.names, b.names_len);
	}
	t = jit_builder__finish(&b);
	if (!t) {
		free(entries);
		free(names);
		return 0;
	}
	FUZZ_CHECK(jit_table__bytes(t) <= JIT_FUZZ_MAX_BYTES + 64);
	FUZZ_CHECK(jit_table__count(t) <= 2 * n);
	FUZZ_CHECK(n || jit_table__count(t) == 0);
	for (size_t i = 0; entries && i < n; i++) {
		uint64_t first = entries[i].start, last = first + entries[i].size - 1;

		jit_check_addr(t, entries, n, names, first);
		jit_check_addr(t, entries, n, names, last);
		jit_check_addr(t, entries, n, names, first - 1);
		jit_check_addr(t, entries, n, names, last + 1);
	}
	if (!n)
		FUZZ_CHECK(!jit_table__lookup(t, 0));
	jit_table__free(t);
	free(entries);
	free(names);
	return 0;
}

#endif
