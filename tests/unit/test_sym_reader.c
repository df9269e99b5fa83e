// SPDX-License-Identifier: BSD-2-Clause
/* sym_reader against libelf on a library cc builds: 3 000 functions whose
 * names span many windows, and one of 5 000 bytes; every symbol and name
 * as libelf reads them, in order and from the end back; a name with no
 * NUL before the section's end refused as libelf refuses it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/sym_reader.h"

static char dir[64], lib[128];

static void setup(void)
{
	char src[128], cmd[512];
	FILE *f;

	strcpy(dir, "/tmp/kiln-symreader-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/lib.c", dir);
	snprintf(lib, sizeof(lib), "%s/lib.so", dir);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 3000; i++)
		fprintf(f, "int fn_%d_%0*d(int x) { return x + %d; }\n", i, i % 300 + 1, 0, i);
	fputs("int ", f);
	for (int i = 0; i < 5000; i++)
		fputc('L', f);
	fputs("(int x) { return x; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -shared -fPIC -O0 -o %s %s", lib, src);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	elf_version(EV_CURRENT);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(sym_reader, .init = setup, .fini = teardown, .timeout = 60);

struct opened {
	int fd;
	Elf *elf;
	Elf_Data *data;
	GElf_Shdr sh, strsh;
	size_t n;
};

static void open_symtab(struct opened *o, const char *path)
{
	Elf_Scn *scn = NULL;

	o->fd = open(path, O_RDONLY);
	cr_assert_geq(o->fd, 0, "%s: %s", path, strerror(errno));
	o->elf = elf_begin(o->fd, ELF_C_READ, NULL);
	cr_assert_not_null(o->elf);
	while ((scn = elf_nextscn(o->elf, scn)))
		if (gelf_getshdr(scn, &o->sh) && o->sh.sh_type == SHT_SYMTAB)
			break;
	cr_assert_not_null(scn, "no .symtab");
	cr_assert(gelf_getshdr(elf_getscn(o->elf, o->sh.sh_link), &o->strsh));
	o->data = elf_getdata(scn, NULL);
	cr_assert_not_null(o->data);
	o->n = o->sh.sh_size / o->sh.sh_entsize;
	cr_assert_gt(o->n, 3000);
}

static void close_symtab(struct opened *o)
{
	elf_end(o->elf);
	close(o->fd);
}

/* Symbol i through r as libelf has it; how many names are longer than a
 * window (given cut) into *long_names. false: a name neither reads. */
static bool same_symbol(struct sym_reader *r, struct opened *o, size_t i, int *long_names)
{
	const char *ours, *theirs;
	GElf_Sym a, b;

	cr_assert_eq(sym_reader__sym(r, i, &a), 0, "symbol %zu", i);
	cr_assert(gelf_getsym(o->data, (int)i, &b));
	cr_assert(memcmp(&a, &b, sizeof(a)) == 0, "symbol %zu differs", i);
	ours = sym_reader__name(r, a.st_name);
	theirs = elf_strptr(o->elf, o->sh.sh_link, b.st_name);
	cr_assert_eq(!ours, !theirs, "symbol %zu: name %s", i, ours ? ours : "(none)");
	if (!theirs)
		return !a.st_name;
	if (strlen(theirs) < SYM_READER_WINDOW) {
		cr_assert_str_eq(ours, theirs, "symbol %zu", i);
	} else {
		cr_assert_eq(strlen(ours), SYM_READER_NAME_MAX);
		cr_assert(strncmp(ours, theirs, SYM_READER_NAME_MAX) == 0);
		(*long_names)++;
	}
	return true;
}

Test(sym_reader, reads_what_libelf_reads_in_any_order)
{
	struct sym_reader r;
	struct opened o;
	int long_names = 0;

	open_symtab(&o, lib);
	cr_assert(sym_reader__usable(o.elf, o.fd, &o.sh, &o.strsh));
	cr_assert_eq(sym_reader__open(&r, o.elf, o.fd, &o.sh, &o.strsh), 0);
	for (size_t i = 0; i < o.n; i++)
		same_symbol(&r, &o, i, &long_names);
	for (size_t i = o.n; i-- > 0;)
		same_symbol(&r, &o, i, &long_names);
	/* scattered: a stride that hops windows and chunks */
	for (size_t i = 0, k = 0; k < o.n; k++, i = (i + 977) % o.n)
		same_symbol(&r, &o, i, &long_names);
	cr_assert_eq(long_names, 3, "the 5 000-byte name, once each pass");
	cr_assert_eq(sym_reader__sym(&r, o.n, &(GElf_Sym){ 0 }), -EINVAL);
	cr_assert_null(sym_reader__name(&r, o.strsh.sh_size));
	sym_reader__close(&r);
	close_symtab(&o);
}

Test(sym_reader, no_nul_before_the_end_refused_as_libelf_does)
{
	char copy[160], cmd[400];
	struct sym_reader r;
	struct opened o;
	int fd, long_names = 0, refused = 0;

	snprintf(copy, sizeof(copy), "%s/cut.so", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", lib, copy);
	cr_assert_eq(system(cmd), 0);
	open_symtab(&o, copy);
	fd = open(copy, O_WRONLY);
	cr_assert(fd >= 0 && pwrite(fd, "x", 1, (off_t)(o.strsh.sh_offset + o.strsh.sh_size - 1)) == 1);
	close(fd);
	close_symtab(&o);
	open_symtab(&o, copy);
	cr_assert_eq(sym_reader__open(&r, o.elf, o.fd, &o.sh, &o.strsh), 0);
	for (size_t i = o.n; i-- > 0;)
		refused += !same_symbol(&r, &o, i, &long_names);
	cr_assert_eq(refused, 1, "the last name, and only it: %d", refused);
	sym_reader__close(&r);
	close_symtab(&o);
}
