/* SPDX-License-Identifier: BSD-2-Clause */
/* kiln unwind-table FILE [PC...]: builds FILE's unwind table as the agent
 * would (opened with the safe opener on the host, its debug file looked up
 * the same way) and prints it as text:
 *
 *   # comment lines: base vaddr, counts, bytes, build time, INVALID reasons
 *   rule N cfa=rsp+16 fp=c-16          one line per rule of the rule table
 *   0x0001a2b0 cfa=rsp+8 fp=u          one line per row: pc_off, its rule
 *
 * With PCs (ELF virtual addresses, hex), only the row that applies at each:
 *   pc 0x41f020 off 0x1f020 row 0x1f020 PLT/11
 * or "pc 0x... none" where no row does.
 *
 * kiln unwind-table --summary FILE: one line of key=value figures instead,
 * for the benchmarks (tests/bench/unwind_cost.py): the table's size and the
 * cost of building it, CPU from getrusage around the build, peak RSS of
 * the whole process:
 *   rows=58511 rules=333 bytes=472284 fdes=... cfi_bytes=... build_ms=25.1
 *   cpu_ms=24.0 max_rss_kb=9120 file=/usr/bin/python3.11
 *
 * --cache DIR: the table is looked up in the on-disk cache at DIR first
 * and stored there when built (unwind/table_cache.h), as the unwinder
 * does; --summary then says cached=1 when it was loaded from there. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/elf.h"
#include "core/safe_open.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_table.h"
#include "unwind_cmd.h"

static void print_header(const char *file, const struct unwind_table *t)
{
	struct unwind_table_info in;

	unwind_table__info(t, &in);
	printf("# %s: base 0x%" PRIx64 ", %zu rows, %zu rules, %zu bytes, %.1f ms\n", file, in.base,
	       in.rows, in.rules, in.bytes, (double)in.build_ns / 1e6);
	printf("# FDEs: %zu .eh_frame, %zu .debug_frame (%s); %" PRIu64 " CFI bytes\n", in.fdes_eh,
	       in.fdes_debug, in.debug_source, in.cfi_bytes);
	if (in.go_source)
		printf("# Go function table (%s): %zu functions\n", in.go_source, in.go_funcs);
	printf("# rows: %zu STOP, %zu PLT, %zu SIGNAL, %zu INVALID\n", in.stop_rows, in.plt_rows,
	       in.signal_rows, in.invalid_rows);
	printf("# unsupported rows:");
	for (int i = 0; i < UNWIND_UNSUP_COUNT; i++)
		printf(" %s=%" PRIu64, unwind_unsupported_names[i], in.unsupported[i]);
	printf("\n");
}

static double cpu_ms(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* The --summary line; ru0 and ru1: getrusage just before and after the
 * build. ru_maxrss is the process's peak, in KiB. */
static void print_summary(const char *file, const struct unwind_table_info *in,
			  const struct rusage *ru0, const struct rusage *ru1, int cached)
{
	printf("rows=%zu rules=%zu bytes=%zu fdes=%zu go_funcs=%zu cfi_bytes=%" PRIu64
	       " invalid_rows=%zu build_ms=%.1f cpu_ms=%.1f max_rss_kb=%ld",
	       in->rows, in->rules, in->bytes, in->fdes_eh + in->fdes_debug, in->go_funcs,
	       in->cfi_bytes,
	       in->invalid_rows, (double)in->build_ns / 1e6, cpu_ms(ru1) - cpu_ms(ru0),
	       ru1->ru_maxrss);
	if (cached >= 0)
		printf(" cached=%d", cached);
	printf(" file=%s\n", file);
}

int unwind_table_main(int argc, char **argv)
{
	const struct kiln_unwind_row *rows, *r;
	struct unwind_table *t;
	struct unwind_table_info in;
	struct rusage ru0, ru1;
	struct table_cache *cache = NULL;
	const char *cache_dir = NULL;
	bool summary = false;
	char buf[64];
	int cached = -1;
	size_t n;
	int fd;

	while (argc > 1 && argv[1][0] == '-') {
		if (strcmp(argv[1], "--summary") == 0) {
			summary = true;
		} else if (strcmp(argv[1], "--cache") == 0 && argc > 2) {
			cache_dir = argv[2];
			argc--;
			argv++;
		} else {
			break;
		}
		argc--;
		argv++;
	}
	if (argc < 2 || argv[1][0] == '-' || (summary && argc > 2)) {
		fprintf(stderr, "usage: kiln unwind-table [--cache DIR] FILE [PC...]\n"
				"       kiln unwind-table [--cache DIR] --summary FILE\n");
		return 2;
	}
	if (cache_dir) {
		cache = table_cache__open(cache_dir, TABLE_CACHE_BYTES_DEFAULT, false, false);
		if (!cache || !table_cache__dir(cache)) {
			fprintf(stderr, "kiln: %s: cannot be used as an unwind table cache\n",
				cache_dir);
			table_cache__close(cache);
			return 1;
		}
	}
	getrusage(RUSAGE_SELF, &ru0);
	fd = safe_open__in("", argv[1], ELF_FILE_MAX, NULL);
	if (fd < 0) {
		fprintf(stderr, "kiln: %s: %s\n", argv[1], strerror(-fd));
		return 1;
	}
	t = table_cache__get(cache, fd, "", argv[1], NULL);
	if (cache)
		cached = t != NULL;
	if (!t) {
		t = unwind_table__build(fd, "", argv[1], NULL);
		table_cache__put(cache, fd, t);
	}
	close(fd);
	table_cache__close(cache);
	getrusage(RUSAGE_SELF, &ru1);
	if (!t) {
		fprintf(stderr, "kiln: %s: no unwind table: %s\n", argv[1], strerror(errno));
		return 1;
	}
	unwind_table__info(t, &in);
	if (summary) {
		print_summary(argv[1], &in, &ru0, &ru1, cached);
		unwind_table__free(t);
		return 0;
	}
	if (argc > 2) {
		for (int i = 2; i < argc; i++) {
			char *end;
			uint64_t pc = strtoull(argv[i], &end, 16);

			if (*end || end == argv[i]) {
				fprintf(stderr, "kiln: '%s' is not a hex address\n", argv[i]);
				unwind_table__free(t);
				return 2;
			}
			r = unwind_table__lookup(t, pc);
			if (!r)
				printf("pc 0x%" PRIx64 " none\n", pc);
			else
				printf("pc 0x%" PRIx64 " off 0x%" PRIx64 " row 0x%" PRIx32 " %s\n",
				       pc, pc - in.base, r->pc_off,
				       unwind_table__describe(t, r, buf, sizeof(buf)));
		}
		unwind_table__free(t);
		return 0;
	}
	print_header(argv[1], t);
	unwind_table__rules(t, &n);
	for (size_t i = 0; i < n; i++) {
		struct kiln_unwind_row fake = { .rule = (uint16_t)i };

		printf("rule %zu %s\n", i, unwind_table__describe(t, &fake, buf, sizeof(buf)));
	}
	rows = unwind_table__rows(t, &n);
	for (size_t i = 0; i < n; i++)
		printf("0x%08" PRIx32 " %s\n", rows[i].pc_off,
		       unwind_table__describe(t, &rows[i], buf, sizeof(buf)));
	unwind_table__free(t);
	return 0;
}
