/* SPDX-License-Identifier: BSD-2-Clause */
/* Unwind tables of real binaries kiln's authors did not write (Debian's
 * python3.11, libc, xz, ld.so) and of a gcc -O2 -fomit-frame-pointer
 * library built here, checked against binutils: for 2000 random pcs in
 * .text, the CFA rule (register, offset) and where rbp is saved must be
 * what `readelf --debug-dump=frames-interp` says wherever both have a
 * rule; STOP at the entry point and at clone, PLT rows in .plt, SIGNAL at
 * libc's rt_sigreturn trampoline. */
#include <criterion/criterion.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/elf.h"
#include "core/safe_open.h"
#include "unit_helpers.h"
#include "unwind/unwind_table.h"

#define PYTHON "/usr/bin/python3.11"
#define LIBC   "/lib/x86_64-linux-gnu/libc.so.6"
#define XZ     "/usr/bin/xz"
#define LDSO   "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
#define SAMPLES 2000

static struct unwind_table *build(const char *path)
{
	int fd = safe_open__in("", path, ELF_FILE_MAX, NULL);
	struct unwind_table *t;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(-fd));
	t = unwind_table__build(fd, "", path, NULL);
	cr_assert_not_null(t, "%s: no table: %s", path, strerror(errno));
	close(fd);
	return t;
}

/* One readelf row: [pc, end) with its CFA, frame pointer (rbp / x29) and
 * return address columns as text. */
struct ref_row {
	uint64_t pc, end;
	char cfa[24], fp[24], ra[24];
	bool signal;
};

struct ref {
	struct ref_row *rows;
	size_t n, cap;
};

static void ref_push(struct ref *r, const struct ref_row *row)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 4096;
		r->rows = realloc(r->rows, r->cap * sizeof(*r->rows));
		cr_assert_not_null(r->rows);
	}
	r->rows[r->n++] = *row;
}

/* The column named col of a row line, given the header's columns. */
static void column(char cols[][16], int ncols, char vals[][24], const char *col, char *out)
{
	strcpy(out, "u");       /* a column readelf does not print: not saved */
	for (int i = 0; i < ncols; i++)
		if (strcmp(cols[i], col) == 0)
			strcpy(out, vals[i]);
}

/* Ends an FDE: one without rows of its own takes its CIE's initial row;
 * each row ends at the next one, the last at the FDE's end. */
static void close_fde(struct ref *r, bool had_rows, const struct ref_row *init, bool signal,
		      uint64_t lo, uint64_t hi, size_t first)
{
	if (!had_rows && init) {
		struct ref_row row = *init;

		row.pc = lo;
		row.signal = signal;
		ref_push(r, &row);
	}
	for (size_t i = first; i < r->n; i++)
		r->rows[i].end = i + 1 < r->n ? r->rows[i + 1].pc : hi;
}

/* Parses readelf --debug-dump=frames-interp of path (.eh_frame only).
 * Each FDE's rows end at the next row or the FDE's end; an FDE without
 * rows takes its CIE's initial row. */
static void readelf_rows(const char *path, const char *fp_col, struct ref *r)
{
	char cmd[512], line[1024], cols[32][16], vals[32][24];
	struct { uint64_t off; struct ref_row init; bool signal; } cies[256];
	int ncies = 0, ncols = 0, cur_cie = -1;
	bool in_fde = false, in_eh = false, fde_rows = false;
	uint64_t fde_lo = 0, fde_hi = 0;
	size_t fde_first = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp %s 2>/dev/null", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, c, cie, lo, hi;
		char aug[32];

		if (strncmp(line, "Contents of the ", 16) == 0) {
			in_eh = strncmp(line + 16, ".eh_frame ", 10) == 0;
			continue;
		}
		if (!in_eh)
			continue;
		if (sscanf(line, "%llx %llx %llx CIE \"%31[^\"]\"", &a, &b, &c, aug) == 4) {
			if (in_fde)
				close_fde(r, fde_rows, cur_cie >= 0 ? &cies[cur_cie].init : NULL,
					  cur_cie >= 0 && cies[cur_cie].signal, fde_lo, fde_hi, fde_first);
			in_fde = false;
			cr_assert_lt(ncies, 256);
			cur_cie = ncies++;
			cies[cur_cie].off = a;
			cies[cur_cie].signal = strchr(aug, 'S') != NULL;
			memset(&cies[cur_cie].init, 0, sizeof(cies[cur_cie].init));
			continue;
		}
		if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &a, &b, &c, &cie, &lo,
			   &hi) == 6) {
			if (in_fde)
				close_fde(r, fde_rows, cur_cie >= 0 ? &cies[cur_cie].init : NULL,
					  cur_cie >= 0 && cies[cur_cie].signal, fde_lo, fde_hi, fde_first);
			cur_cie = -1;
			for (int i = 0; i < ncies; i++)
				if (cies[i].off == cie)
					cur_cie = i;
			in_fde = true;
			fde_rows = false;
			fde_lo = lo;
			fde_hi = hi;
			fde_first = r->n;
			continue;
		}
		if (strstr(line, "   LOC ")) {
			char *save, *tok = strtok_r(line, " \n", &save);

			ncols = 0;
			while ((tok = strtok_r(NULL, " \n", &save)) && ncols < 32)
				snprintf(cols[ncols++], sizeof(cols[0]), "%s", tok);
			continue;
		}
		if (strlen(line) > 17 && line[16] == ' ' && sscanf(line, "%llx", &a) == 1) {
			char *save, *tok = strtok_r(line, " \n", &save);
			struct ref_row row = { .pc = a };
			int nv = 0;

			while ((tok = strtok_r(NULL, " \n", &save)) && nv < 32)
				snprintf(vals[nv++], sizeof(vals[0]), "%s", tok);
			column(cols, ncols, vals, "CFA", row.cfa);
			column(cols, ncols, vals, fp_col, row.fp);
			column(cols, ncols, vals, "ra", row.ra);
			if (!in_fde) {
				if (cur_cie >= 0)
					cies[cur_cie].init = row;
				continue;
			}
			row.signal = cur_cie >= 0 && cies[cur_cie].signal;
			fde_rows = true;
			/* rows at the same pc: the last one holds */
			if (r->n > fde_first && r->rows[r->n - 1].pc == row.pc)
				r->rows[r->n - 1] = row;
			else
				ref_push(r, &row);
		}
	}
	if (in_fde)
		close_fde(r, fde_rows, cur_cie >= 0 ? &cies[cur_cie].init : NULL,
			  cur_cie >= 0 && cies[cur_cie].signal, fde_lo, fde_hi, fde_first);
	/* readelf's status is 1 after a warning about a section it skips:
	 * what counts is that it printed the rows. */
	pclose(f);
	cr_assert_gt(r->n, 10, "%s: readelf gave %zu rows", path, r->n);
}

static const struct ref_row *ref_at(const struct ref *r, uint64_t pc)
{
	/* FDEs are not sorted in .eh_frame: linear is fine for the tests'
	 * sizes only with a sorted copy, made once by the caller. */
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= r->rows[lo - 1].end)
		return NULL;
	return &r->rows[lo - 1];
}

static int cmp_ref(const void *a, const void *b)
{
	const struct ref_row *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* A section's [start, end) vaddr by name; false when absent. */
static bool section_range(const char *path, const char *want, uint64_t *start, uint64_t *end)
{
	int fd = safe_open__in("", path, ELF_FILE_MAX, NULL);
	Elf *elf = fd >= 0 ? elf__begin_fd(fd, path) : NULL;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	bool found = false;

	cr_assert_not_null(elf);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, want) == 0) {
			*start = sh.sh_addr;
			*end = sh.sh_addr + sh.sh_size;
			found = true;
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

struct agreement {
	size_t compared, rule_rows, commands, mismatches, skipped_exp, uncovered;
};

/* readelf's "rsp+16" / "rbp+16" (arm64: "sp+16" / "x29+16"): true and
 * the parts, or false (exp). */
static bool parse_cfa(const char *s, unsigned *reg, int *off)
{
	static const struct { const char *name; unsigned reg; } regs[] = {
		{ "rsp", KILN_REG_SP }, { "rbp", KILN_REG_FP },
		{ "sp", KILN_REG_SP }, { "x29", KILN_REG_FP },
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		size_t n = strlen(regs[i].name);

		if (strncmp(s, regs[i].name, n) == 0 && (s[n] == '+' || s[n] == '-')) {
			*reg = regs[i].reg;
			*off = atoi(s + n);
			return true;
		}
	}
	return false;
}

/* readelf's return address column as kiln's rule: saved at the CFA ("c-8")
 * or, arm64, not saved ("u": still in x30). false for anything else. */
static bool parse_ra(const char *s, bool arm64, unsigned *rule, int *off)
{
	*off = 0;
	if (arm64 && strcmp(s, "u") == 0) {
		*rule = KILN_RA_IN_LR;
		return true;
	}
	if (s[0] != 'c' || (s[1] != '-' && s[1] != '+'))
		return false;
	*rule = KILN_RA_AT_CFA;
	*off = atoi(s + 1);
	return !arm64 ? *off == -8 : true;
}

/* Compares SAMPLES random .text pcs of path with readelf. */
static struct agreement compare_with_readelf(const char *path, const struct unwind_table *t)
{
	struct ref ref = { 0 };
	struct agreement a = { 0 };
	uint64_t lo, hi;
	size_t nrules;
	const struct kiln_unwind_rule *rules = unwind_table__rules(t, &nrules);
	struct unwind_table_info in;
	unsigned seed = 14;
	bool arm64;

	unwind_table__info(t, &in);
	arm64 = in.machine == EM_AARCH64;
	readelf_rows(path, arm64 ? "x29" : "rbp", &ref);
	qsort(ref.rows, ref.n, sizeof(*ref.rows), cmp_ref);
	cr_assert(section_range(path, ".text", &lo, &hi), "%s: no .text", path);
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t pc = lo + ((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) %
				   (hi - lo);
		const struct ref_row *rr = ref_at(&ref, pc);
		const struct kiln_unwind_row *row = unwind_table__lookup(t, pc);
		const struct kiln_unwind_rule *u;
		unsigned reg, ra_rule;
		int off, ra_off;
		char buf[64];

		if (!rr) {
			a.uncovered++;
			continue;
		}
		a.compared++;
		cr_assert_not_null(row, "%s: pc 0x%" PRIx64 " has CFI but no row", path, pc);
		if (row->rule & KILN_UNWIND_CMD) {
			unsigned cmd = row->rule & ~KILN_UNWIND_CMD;

			a.commands++;
			/* A command must have its reason in the CFI (STOP also
			 * covers the entry point's FDE, checked elsewhere). */
			if (cmd == KILN_CMD_SIGNAL)
				cr_expect(rr->signal, "%s: SIGNAL at 0x%" PRIx64 " without 'S'", path, pc);
			if (cmd == KILN_CMD_INVALID && parse_cfa(rr->cfa, &reg, &off) &&
			    parse_ra(rr->ra, arm64, &ra_rule, &ra_off) &&
			    (strcmp(rr->fp, "u") == 0 || strncmp(rr->fp, "c-", 2) == 0)) {
				a.mismatches++;
				cr_log_warn("%s: 0x%" PRIx64 ": INVALID, readelf %s fp %s ra %s", path,
					    pc, rr->cfa, rr->fp, rr->ra);
			}
			continue;
		}
		if (!parse_cfa(rr->cfa, &reg, &off)) {
			a.skipped_exp++;        /* readelf prints "exp": nothing to compare */
			continue;
		}
		cr_assert_lt(row->rule, nrules);
		u = &rules[row->rule];
		a.rule_rows++;
		if (u->cfa_reg != reg || u->cfa_off != off || (u->flags & KILN_RULE_CFA_DEREF)) {
			a.mismatches++;
			cr_log_warn("%s: 0x%" PRIx64 ": %s, readelf %s", path, pc,
				    unwind_table__describe(t, row, buf, sizeof(buf)), rr->cfa);
			continue;
		}
		if (strcmp(rr->fp, "u") == 0 || strcmp(rr->fp, "s") == 0) {
			if (u->fp_rule != KILN_FP_UNCHANGED)
				a.mismatches++;
		} else if (strncmp(rr->fp, "c", 1) == 0) {
			if (u->fp_rule != KILN_FP_AT_CFA || u->fp_off != atoi(rr->fp + 1))
				a.mismatches++;
		}
		if (!parse_ra(rr->ra, arm64, &ra_rule, &ra_off) || u->ra_rule != ra_rule ||
		    (ra_rule == KILN_RA_AT_CFA && u->ra_off != ra_off)) {
			a.mismatches++;
			cr_log_warn("%s: 0x%" PRIx64 ": %s, readelf ra %s", path, pc,
				    unwind_table__describe(t, row, buf, sizeof(buf)), rr->ra);
		}
	}
	free(ref.rows);
	cr_log_info("%s: %zu pcs compared (%zu rules, %zu commands, %zu exp), %zu mismatches, "
		    "%zu outside CFI", path, a.compared, a.rule_rows, a.commands, a.skipped_exp,
		    a.mismatches, a.uncovered);
	return a;
}

static void check_sorted(const struct unwind_table *t)
{
	size_t n, nrules;
	const struct kiln_unwind_row *rows = unwind_table__rows(t, &n);

	unwind_table__rules(t, &nrules);
	cr_assert_gt(n, 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			cr_assert_gt(rows[i].pc_off, rows[i - 1].pc_off, "row %zu not sorted", i);
		if (i && !(rows[i].flags || rows[i - 1].flags))
			cr_assert(rows[i].rule != rows[i - 1].rule, "row %zu not merged", i);
		if (!(rows[i].rule & KILN_UNWIND_CMD))
			cr_assert_lt(rows[i].rule, nrules);
	}
	cr_assert_eq(rows[n - 1].rule, KILN_UNWIND_CMD | KILN_CMD_INVALID, "no end row");
}

static bool is_cmd(const struct kiln_unwind_row *r, unsigned cmd)
{
	return r && r->rule == (KILN_UNWIND_CMD | cmd);
}

static uint64_t entry_of(const char *path)
{
	int fd = safe_open__in("", path, ELF_FILE_MAX, NULL);
	Elf *elf = fd >= 0 ? elf__begin_fd(fd, path) : NULL;
	GElf_Ehdr eh;

	cr_assert_not_null(elf);
	cr_assert_not_null(gelf_getehdr(elf, &eh));
	elf_end(elf);
	close(fd);
	return eh.e_entry;
}

static void check_binary(const char *path, size_t min_rows, size_t max_rows)
{
	struct unwind_table *t = build(path);
	struct unwind_table_info in;
	struct agreement a;
	uint64_t lo, hi;

	unwind_table__info(t, &in);
	cr_log_info("%s: %zu rows, %zu rules, %zu bytes, %.1f ms", path, in.rows, in.rules,
		    in.bytes, (double)in.build_ns / 1e6);
	cr_assert_geq(in.rows, min_rows, "%s: %zu rows", path, in.rows);
	cr_assert_leq(in.rows, max_rows, "%s: %zu rows", path, in.rows);
	cr_assert_gt(in.rules, 20);
	cr_assert_lt(in.rules, 1000);
	cr_assert_geq(in.bytes, in.rows * sizeof(struct kiln_unwind_row) +
					in.rules * sizeof(struct kiln_unwind_rule));
	check_sorted(t);
	a = compare_with_readelf(path, t);
	cr_assert_geq(a.compared, SAMPLES * 9 / 10, "%s: only %zu pcs compared", path,
		      a.compared);
	cr_assert_eq(a.mismatches, 0, "%s: %zu mismatches with readelf", path, a.mismatches);
	cr_assert_gt(a.rule_rows, a.compared / 2);
	/* The entry point ends the walk; PLT rows in .plt. */
	if (strcmp(path, LIBC) != 0)
		cr_assert(is_cmd(unwind_table__lookup(t, entry_of(path)), KILN_CMD_STOP),
			  "%s: no STOP at the entry point", path);
	if (section_range(path, ".plt", &lo, &hi) && hi - lo > 32) {
		const struct kiln_unwind_row *r = unwind_table__lookup(t, lo + 16 + 11);

		cr_assert(is_cmd(r, KILN_CMD_PLT), "%s: .plt+27 is not PLT", path);
		cr_assert(r->flags & KILN_ROW_PLT_THRESHOLD);
		cr_assert(is_cmd(unwind_table__lookup(t, hi - 1), KILN_CMD_PLT));
	}
	unwind_table__free(t);
}

Test(unwind, python3_11)
{
	check_binary(PYTHON, 50000, 70000);
}

Test(unwind, libc)
{
	check_binary(LIBC, 20000, 30000);
}

Test(unwind, xz)
{
	check_binary(XZ, 1000, 20000);
}

Test(unwind, ld_so)
{
	check_binary(LDSO, 1000, 20000);
}

/* The bytes at vaddr of path, through the PT_LOAD segments. */
static void read_at(const char *path, uint64_t vaddr, unsigned char *out, size_t n)
{
	int fd = safe_open__in("", path, ELF_FILE_MAX, NULL);
	Elf *elf = fd >= 0 ? elf__begin_fd(fd, path) : NULL;
	size_t phnum;
	bool done = false;

	cr_assert_not_null(elf);
	cr_assert_eq(elf_getphdrnum(elf, &phnum), 0);
	for (size_t i = 0; i < phnum && !done; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr + n <= ph.p_vaddr + ph.p_filesz) {
			cr_assert_eq(pread(fd, out, n, (off_t)(ph.p_offset + vaddr - ph.p_vaddr)),
				     (ssize_t)n);
			done = true;
		}
	}
	cr_assert(done);
	elf_end(elf);
	close(fd);
}

Test(unwind, libc_signal_trampoline_and_clone_roots)
{
	/* mov $0xf,%rax; syscall: rt_sigreturn, what __restore_rt is. */
	static const unsigned char sigreturn[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	struct unwind_table *t = build(LIBC);
	struct unwind_table_info in;
	const struct kiln_unwind_row *rows;
	size_t n, signals = 0, stops = 0;

	unwind_table__info(t, &in);
	rows = unwind_table__rows(t, &n);
	for (size_t i = 0; i + 1 < n; i++) {
		uint64_t pc = in.base + rows[i].pc_off;
		unsigned char code[sizeof(sigreturn)];

		if (is_cmd(&rows[i], KILN_CMD_SIGNAL)) {
			/* The FDE starts one byte early (a nop), for pc - 1. */
			read_at(LIBC, pc + 1, code, sizeof(code));
			cr_assert_arr_eq(code, sigreturn, sizeof(code),
					 "SIGNAL row at 0x%" PRIx64 " is not rt_sigreturn", pc);
			signals++;
		}
		stops += is_cmd(&rows[i], KILN_CMD_STOP);
	}
	cr_assert_eq(signals, 1);
	/* clone and clone3 mark their child's RA undefined; the entry point. */
	cr_assert_geq(stops, 3, "%zu STOP rows", stops);
	cr_assert_eq(in.signal_rows, 1);
	unwind_table__free(t);
}

/* Debian 12's arm64 C library (tests/fixtures/arm64/), unpacked to a
 * temporary file: readelf agrees on every sampled pc (the return address
 * at the CFA or, in leaves and prologues, still in x30), clone and clone3
 * are roots, and .plt entries keep the return address in x30 (the first
 * entry pushes 16 bytes with its first instruction). */
Test(unwind, arm64_libc)
{
	char path[] = "/tmp/kiln-unwind-arm64-XXXXXX";
	struct unwind_table *t;
	struct unwind_table_info in;
	const struct kiln_unwind_row *rows;
	const struct kiln_unwind_rule *rules;
	struct agreement a;
	size_t n, nrules, stops = 0, in_lr = 0;
	uint64_t lo, hi;
	char cmd[256];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "xz -dc tests/fixtures/arm64/libc.so.6.xz > %s", path);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	t = build(path);
	unwind_table__info(t, &in);
	cr_assert_eq(in.machine, EM_AARCH64);
	check_sorted(t);
	a = compare_with_readelf(path, t);
	cr_expect_geq(a.compared, SAMPLES * 9 / 10, "only %zu pcs compared", a.compared);
	cr_expect_eq(a.mismatches, 0, "%zu mismatches with readelf", a.mismatches);
	cr_expect_gt(a.rule_rows, a.compared / 2);
	rows = unwind_table__rows(t, &n);
	rules = unwind_table__rules(t, &nrules);
	for (size_t i = 0; i < n; i++) {
		stops += is_cmd(&rows[i], KILN_CMD_STOP);
		in_lr += !(rows[i].rule & KILN_UNWIND_CMD) &&
			 rules[rows[i].rule].ra_rule == KILN_RA_IN_LR;
	}
	cr_expect_eq(stops, 2, "%zu STOP rows (clone, clone3)", stops);
	cr_expect_gt(in_lr, 1000, "%zu rows with the return address in x30", in_lr);
	cr_assert(section_range(path, ".plt", &lo, &hi) && hi - lo > 48);
	for (uint64_t pc = lo; pc < hi; pc += 4) {
		const struct kiln_unwind_row *r = unwind_table__lookup(t, pc);
		const struct kiln_unwind_rule *u;

		cr_assert(r && !(r->rule & KILN_UNWIND_CMD) && r->rule < nrules,
			  ".plt+%" PRIu64 " has no rule", pc - lo);
		u = &rules[r->rule];
		cr_expect(u->cfa_reg == KILN_REG_SP && u->ra_rule == KILN_RA_IN_LR &&
				  u->cfa_off == (pc > lo && pc < lo + 32 ? 16 : 0),
			  ".plt+%" PRIu64 ": cfa sp%+d ra rule %u", pc - lo, u->cfa_off,
			  u->ra_rule);
	}
	unwind_table__free(t);
	unlink(path);
}

/* A library built here without frame pointers: its rows agree with
 * readelf, and the stack-realigning function gets the deref rule. */
Test(unwind, omit_frame_pointer_library)
{
	static const char src[] =
		"#include <string.h>\n"
		"#include <alloca.h>\n"
		"__attribute__((noinline)) long leaf(long x) { return x * 7 + 3; }\n"
		"__attribute__((noinline)) long vla(int n) { char *p = alloca(n); memset(p, n, n);\n"
		"  long s = 0; for (int i = 0; i < n; i++) s += p[i] + leaf(i); return s; }\n"
		"struct big { double d[8]; } __attribute__((aligned(64)));\n"
		"__attribute__((noinline)) void use(struct big *b) { b->d[0] += 1; }\n"
		"__attribute__((noinline)) long realign(int n) { struct big b; char *p = alloca(n);\n"
		"  memset(p, n, n); memset(&b, p[0], sizeof b);\n"
		"  use(&b); return (long)b.d[0] + vla(n); }\n"
		"long api(long a, long b, long c) { long r = 0; for (long i = 0; i < a; i++)\n"
		"  r += leaf(i * b) ^ realign((int)c); return r; }\n";
	char d[128], c[256], so[256], cmd[1024];
	struct unwind_table *t;
	struct unwind_table_info in;
	struct agreement a;
	const struct kiln_unwind_rule *rules;
	size_t nrules;
	bool deref = false, rbp_cfa = false;
	FILE *f;

	temp_dir(d, sizeof(d), "unwind");
	snprintf(c, sizeof(c), "%s/lib.c", d);
	snprintf(so, sizeof(so), "%s/libomit.so", d);
	f = fopen(c, "w");
	cr_assert_not_null(f);
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -O2 -fomit-frame-pointer -shared -fPIC -o %s %s", so, c);
	cr_assert_eq(system(cmd), 0);
	t = build(so);
	unwind_table__info(t, &in);
	check_sorted(t);
	a = compare_with_readelf(so, t);
	cr_assert_eq(a.mismatches, 0);
	cr_assert_gt(a.rule_rows, 0);
	rules = unwind_table__rules(t, &nrules);
	for (size_t i = 0; i < nrules; i++) {
		deref |= (rules[i].flags & KILN_RULE_CFA_DEREF) && rules[i].fp_rule == KILN_FP_AT_FP;
		rbp_cfa |= rules[i].cfa_reg == KILN_REG_FP;
	}
	cr_assert(deref, "no CFA = *(rbp - 8) rule for the realigning function");
	cr_assert(rbp_cfa, "no rbp-based CFA for the alloca function");
	/* Its prologue keeps the CFA in r10 (DRAP): unsupported, counted. */
	cr_assert_gt(in.unsupported[UNWIND_UNSUP_CFA_REG], 0);
	unwind_table__free(t);
	remove_dir(d);
}

Test(unwind, bounds_refuse_and_count)
{
	struct unwind_limits lim = unwind_default_limits;
	struct unwind_stats before, after;
	int fd = safe_open__in("", PYTHON, ELF_FILE_MAX, NULL);
	struct unwind_table *t;

	cr_assert_geq(fd, 0);
	unwind_table__stats(&before);
	lim.max_rows = 1000;
	t = unwind_table__build(fd, "", PYTHON, &lim);
	cr_assert_null(t);
	cr_assert_eq(errno, E2BIG);
	lim = unwind_default_limits;
	lim.max_rules = 10;
	cr_assert_null(unwind_table__build(fd, "", PYTHON, &lim));
	lim = unwind_default_limits;
	lim.max_fdes = 100;
	cr_assert_null(unwind_table__build(fd, "", PYTHON, &lim));
	lim = unwind_default_limits;
	lim.max_cfi_bytes = 4096;
	cr_assert_null(unwind_table__build(fd, "", PYTHON, &lim));
	lim = unwind_default_limits;
	lim.max_work = 100000;
	cr_assert_null(unwind_table__build(fd, "", PYTHON, &lim));
	unwind_table__stats(&after);
	cr_assert_eq(after.refused[UNWIND_REFUSED_ROWS], before.refused[UNWIND_REFUSED_ROWS] + 1);
	cr_assert_eq(after.refused[UNWIND_REFUSED_RULES], before.refused[UNWIND_REFUSED_RULES] + 1);
	cr_assert_eq(after.refused[UNWIND_REFUSED_FDES], before.refused[UNWIND_REFUSED_FDES] + 1);
	cr_assert_eq(after.refused[UNWIND_REFUSED_CFI_BYTES],
		     before.refused[UNWIND_REFUSED_CFI_BYTES] + 1);
	cr_assert_eq(after.refused[UNWIND_REFUSED_WORK], before.refused[UNWIND_REFUSED_WORK] + 1);
	/* With the defaults it builds, and is counted. */
	t = unwind_table__build(fd, "", PYTHON, NULL);
	cr_assert_not_null(t);
	unwind_table__stats(&after);
	cr_assert_eq(after.built, before.built + 1);
	cr_assert_geq(after.rows, before.rows + 50000);
	unwind_table__free(t);
	close(fd);
}

Test(unwind, not_elf_and_other_machines)
{
	static const char junk[] = "not an ELF file at all, just text";

	cr_assert_null(unwind_table__build_mem(junk, sizeof(junk), "junk", NULL));
	cr_assert_null(unwind_table__lookup(NULL, 0x1000));
}
