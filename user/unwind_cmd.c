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
 * or "pc 0x... none" where no row does. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/elf.h"
#include "core/safe_open.h"
#include "unwind/unwind_table.h"
#include "unwind_cmd.h"

static void print_header(const char *file, const struct unwind_table *t)
{
	struct unwind_table_info in;

	unwind_table__info(t, &in);
	printf("# %s: base 0x%" PRIx64 ", %zu rows, %zu rules, %zu bytes, %.1f ms\n", file,
	       in.base, in.rows, in.rules, in.bytes, (double)in.build_ns / 1e6);
	printf("# FDEs: %zu .eh_frame, %zu .debug_frame (%s); %" PRIu64 " CFI bytes\n",
	       in.fdes_eh, in.fdes_debug, in.debug_source, in.cfi_bytes);
	printf("# rows: %zu STOP, %zu PLT, %zu SIGNAL, %zu INVALID\n", in.stop_rows,
	       in.plt_rows, in.signal_rows, in.invalid_rows);
	printf("# unsupported rows:");
	for (int i = 0; i < UNWIND_UNSUP_COUNT; i++)
		printf(" %s=%" PRIu64, unwind_unsupported_names[i], in.unsupported[i]);
	printf("\n");
}

int unwind_table_main(int argc, char **argv)
{
	const struct kiln_unwind_row *rows, *r;
	struct unwind_table *t;
	struct unwind_table_info in;
	char buf[64];
	size_t n;
	int fd;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: kiln unwind-table FILE [PC...]\n");
		return 2;
	}
	fd = safe_open__in("", argv[1], ELF_FILE_MAX, NULL);
	if (fd < 0) {
		fprintf(stderr, "kiln: %s: %s\n", argv[1], strerror(-fd));
		return 1;
	}
	t = unwind_table__build(fd, "", argv[1], NULL);
	close(fd);
	if (!t) {
		fprintf(stderr, "kiln: %s: no unwind table: %s\n", argv[1], strerror(errno));
		return 1;
	}
	unwind_table__info(t, &in);
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
