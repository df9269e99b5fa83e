// SPDX-License-Identifier: BSD-2-Clause
/* ELF symbol tables of real binaries built at test time with cc/g++ and
 * binutils: the programs print the file offsets of their own functions
 * (from /proc/self/maps, as the agent computes them) and the tests resolve
 * those offsets and compare with the names and addresses nm reports. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/elf.h"
#include "symbolize/elf_symtab.h"
#include "symbolize/sym_names.h"

static char dir[64];

/* Prints "<tag> <file offset>" for each address through /proc/self/maps. */
#define SHOW_FN \
	"static void show(const char *tag, const void *p)\n" \
	"{\n" \
	"	unsigned long a = (unsigned long)p, s, e, off;\n" \
	"	char line[512];\n" \
	"	FILE *f = fopen(\"/proc/self/maps\", \"r\");\n" \
	"	while (f && fgets(line, sizeof(line), f))\n" \
	"		if (sscanf(line, \"%lx-%lx %*s %lx\", &s, &e, &off) == 3 && a >= s && a < e)\n" \
	"			printf(\"%s %lx\\n\", tag, a - s + off);\n" \
	"	if (f)\n" \
	"		fclose(f);\n" \
	"}\n"

static const char prog_c[] =
	"#include <stdio.h>\n"
	SHOW_FN
	"__attribute__((noinline)) int kiln_exported(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline)) static int kiln_hidden(int x) { return x ^ 0x55; }\n"
	"int (*volatile kiln_keep)(int) = kiln_hidden;\n"
	"int main(void)\n"
	"{\n"
	"	show(\"exported\", (const void *)kiln_exported);\n"
	"	show(\"hidden\", (const void *)kiln_hidden);\n"
	"	return kiln_keep(1) + kiln_exported(2) == 0;\n"
	"}\n";

static const char lib_c[] =
	"__attribute__((noinline)) int kiln_lib_exported(int x) { return x + 7; }\n"
	"__attribute__((noinline)) static int kiln_lib_hidden(int x) { return x - 7; }\n"
	"const void *kiln_lib_exported_addr(void) { return (const void *)kiln_lib_exported; }\n"
	"const void *kiln_lib_hidden_addr(void) { return (const void *)kiln_lib_hidden; }\n";

static const char libmain_c[] =
	"#include <stdio.h>\n"
	SHOW_FN
	"const void *kiln_lib_exported_addr(void);\n"
	"const void *kiln_lib_hidden_addr(void);\n"
	"int main(void)\n"
	"{\n"
	"	show(\"exported\", kiln_lib_exported_addr());\n"
	"	show(\"hidden\", kiln_lib_hidden_addr());\n"
	"	return 0;\n"
	"}\n";

static const char cxx_cc[] =
	"#include <cstdio>\n"
	"namespace kiln {\n"
	"__attribute__((noinline)) long area(int w, long h) { return w * h; }\n"
	"template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }\n"
	"}\n"
	"static void show(const char *tag, const void *p)\n"
	"{\n"
	"	unsigned long a = (unsigned long)p, s, e, off;\n"
	"	char line[512];\n"
	"	FILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"	while (f && fgets(line, sizeof(line), f))\n"
	"		if (sscanf(line, \"%lx-%lx %*s %lx\", &s, &e, &off) == 3 && a >= s && a < e)\n"
	"			printf(\"%s %lx\\n\", tag, a - s + off);\n"
	"	if (f)\n"
	"		fclose(f);\n"
	"}\n"
	"int main()\n"
	"{\n"
	"	show(\"area\", reinterpret_cast<const void *>(&kiln::area));\n"
	"	show(\"twice\", reinterpret_cast<const void *>(&kiln::twice<double>));\n"
	"	return kiln::area(2, 3) + (int)kiln::twice(1.0) == 0;\n"
	"}\n";

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = snprintf(cmd, sizeof(cmd), "cd %s && ", dir);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	rc = system(cmd);
	cr_assert_eq(rc, 0, "command failed (%d): %s", rc, cmd);
}

/* dir/name in a buffer of the caller's. */
static char *in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	f = fopen(in_dir(path, sizeof(path), name), "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void setup(void)
{
	strcpy(dir, "/tmp/kiln-elf-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	write_file("prog.c", prog_c);
	write_file("lib.c", lib_c);
	write_file("libmain.c", libmain_c);
	write_file("cxx.cc", cxx_cc);
}

static void teardown(void)
{
	if (dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* File offset the program `cmd` (run in dir) printed for tag. */
static uint64_t printed_offset(const char *cmd, const char *tag)
{
	char line[256], full[512], t[64];
	unsigned long off;
	FILE *p;

	snprintf(full, sizeof(full), "cd %s && %s", dir, cmd);
	p = popen(full, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%63s %lx", t, &off) == 2 && strcmp(t, tag) == 0) {
			pclose(p);
			return off;
		}
	}
	pclose(p);
	cr_assert_fail("%s printed no offset for %s", cmd, tag);
	return 0;
}

/* Address of a symbol as nm reports it. */
static uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[512], line[512], type[8], sym[256];
	unsigned long long addr;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s/%s", dir, file);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %7s %255s", &addr, type, sym) == 3 &&
		    strcmp(sym, name) == 0) {
			pclose(p);
			return addr;
		}
	}
	pclose(p);
	cr_assert_fail("nm %s: no %s", file, name);
	return 0;
}

static struct symtab *load(const char *file, const char *root, const char *path)
{
	char full[256];
	struct symtab *st;
	int fd;

	in_dir(full, sizeof(full), file);
	fd = open(full, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", full, strerror(errno));
	st = symtab__load_fd(fd, root, path ? path : full);
	close(fd);
	cr_assert_not_null(st, "%s: %s", full, strerror(errno));
	return st;
}

/* file's bytes through symtab__load_mem (the vDSO's path). */
static struct symtab *load_image(const char *file)
{
	char full[256];
	struct symtab *st;
	struct stat sb;
	void *image;
	int fd;

	in_dir(full, sizeof(full), file);
	fd = open(full, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && fstat(fd, &sb) == 0, "%s: %s", full, strerror(errno));
	image = malloc((size_t)sb.st_size);
	cr_assert(image && read(fd, image, (size_t)sb.st_size) == sb.st_size, "%s", full);
	close(fd);
	st = symtab__load_mem(image, (size_t)sb.st_size);
	free(image);
	cr_assert_not_null(st, "%s: %s", full, strerror(errno));
	return st;
}

/* Resolving off + 1 (inside the function) must give name, starting at the
 * address nm reports for nm_name in nm_file. */
static void expect_fn(const struct symtab *st, uint64_t off, const char *name,
		      const char *nm_file, const char *nm_name)
{
	uint64_t vaddr = 0;
	const struct sym *s = symtab__lookup(st, off + 1, &vaddr, &(struct sym){ 0 });

	cr_assert_not_null(s, "offset %#llx: no symbol, want %s", (unsigned long long)off, name);
	cr_assert_str_eq(s->name, name);
	cr_assert_eq(vaddr, s->start + 1, "%s: vaddr %#llx, start %#llx", name,
		     (unsigned long long)vaddr, (unsigned long long)s->start);
	if (nm_file)
		cr_assert_eq(s->start, nm_addr(nm_file, nm_name ? nm_name : name),
			     "%s: start differs from nm", name);
}

static void expect_not_fn(const struct symtab *st, uint64_t off, const char *name)
{
	const struct sym *s = symtab__lookup(st, off + 1, NULL, &(struct sym){ 0 });

	cr_assert(!s || strcmp(s->name, name) != 0, "%s resolved from %s", name,
		  symtab__source(st));
}

TestSuite(elf_symtab, .init = setup, .fini = teardown, .timeout = 60);

static void check_exe(const char *cflags)
{
	struct symtab *st;
	uint64_t exp, hid;

	sh("cc -O1 -g %s -Wl,--build-id=sha1 -o prog prog.c", cflags);
	exp = printed_offset("./prog", "exported");
	hid = printed_offset("./prog", "hidden");
	st = load("prog", "", NULL);
	cr_assert_str_eq(symtab__source(st), "symtab");
	cr_assert_gt(symtab__count(st), 2);
	cr_assert_eq(strlen(symtab__build_id(st)), 40);
	expect_fn(st, exp, "kiln_exported", "prog", NULL);
	expect_fn(st, hid, "kiln_hidden", "prog", NULL);
	/* Offset 0 is the ELF header: no function there. */
	cr_assert_null(symtab__lookup(st, 0, NULL, &(struct sym){ 0 }));
	cr_assert_null(symtab__lookup(st, UINT64_MAX, NULL, &(struct sym){ 0 }));
	cr_assert_gt(symtab__bytes(st), symtab__count(st) * 2 * sizeof(uint64_t));
	symtab__free(st);
}

Test(elf_symtab, non_pie)
{
	check_exe("-no-pie -fno-pie");
}

Test(elf_symtab, pie)
{
	check_exe("-fPIE -pie");
}

static void build_lib(void)
{
	sh("cc -O1 -g -shared -fPIC -Wl,--build-id=sha1 -o libkt.so lib.c");
	sh("cc -O1 -g -o libmain libmain.c -L. -lkt -Wl,-rpath,%s", dir);
}

Test(elf_symtab, shared_library)
{
	struct symtab *st;
	uint64_t exp, hid;

	build_lib();
	exp = printed_offset("./libmain", "exported");
	hid = printed_offset("./libmain", "hidden");
	st = load("libkt.so", "", NULL);
	cr_assert_str_eq(symtab__source(st), "symtab");
	expect_fn(st, exp, "kiln_lib_exported", "libkt.so", NULL);
	expect_fn(st, hid, "kiln_lib_hidden", "libkt.so", NULL);
	symtab__free(st);
}

Test(elf_symtab, stripped_uses_dynsym)
{
	struct symtab *st;
	uint64_t exp, hid;

	build_lib();
	exp = printed_offset("./libmain", "exported");
	hid = printed_offset("./libmain", "hidden");
	sh("strip -o libkt.stripped.so libkt.so");
	st = load("libkt.stripped.so", "", NULL);
	cr_assert_str_eq(symtab__source(st), "dynsym");
	expect_fn(st, exp, "kiln_lib_exported", "libkt.so", NULL);
	expect_not_fn(st, hid, "kiln_lib_hidden");
	symtab__free(st);
}

/* A PLT stub is named after the function it jumps to, as perf names it:
 * the stub's file offset from objdump's label and readelf's .plt row. */
Test(elf_symtab, plt_stubs_named_after_their_target)
{
	static const char stub[] =
		"a=$(objdump -d -j .plt libmain | awk '/<kiln_lib_exported_addr@plt>:/ { print $1 }'); "
		"set -- $(readelf -SW libmain | awk '$2 == \".plt\" { print $4, $5 }'); "
		"printf 'stub %x\\n' $((0x$a - 0x$1 + 0x$2))";
	struct symtab *st;
	uint64_t off;

	build_lib();
	off = printed_offset(stub, "stub");
	st = load("libmain", "", NULL);
	expect_fn(st, off, "kiln_lib_exported_addr@plt", NULL, NULL);
	symtab__free(st);
	/* its .symtab names it, so the stub's symbol and name are read
	 * alone: from the file above, from the image here */
	st = load_image("libmain");
	expect_fn(st, off, "kiln_lib_exported_addr@plt", NULL, NULL);
	symtab__free(st);
	sh("strip -o libmain.stripped libmain");
	st = load("libmain.stripped", "", NULL);
	cr_assert_str_eq(symtab__source(st), "dynsym");
	expect_fn(st, off, "kiln_lib_exported_addr@plt", NULL, NULL);
	symtab__free(st);
}

/* A stripped PIE with its debug file; hidden functions only come from it. */
static void build_split(void)
{
	sh("cc -O1 -g -fPIE -pie -Wl,--build-id=sha1 -o prog prog.c");
	sh("objcopy --only-keep-debug prog prog.debug");
	sh("strip -o prog.nolink prog");
}

Test(elf_symtab, debuglink_next_to_file)
{
	struct symtab *st;
	uint64_t hid;

	build_split();
	hid = printed_offset("./prog", "hidden");
	sh("mkdir a && cp prog.debug a/ && cp prog.nolink a/prog && "
	   "objcopy --add-gnu-debuglink=a/prog.debug a/prog");
	st = load("a/prog", "", NULL);
	cr_assert_str_eq(symtab__source(st), "debug-file");
	expect_fn(st, hid, "kiln_hidden", "prog", NULL);
	symtab__free(st);
}

Test(elf_symtab, debuglink_dot_debug_and_root)
{
	char root[128], path[128];
	struct symtab *st;
	uint64_t hid;

	build_split();
	hid = printed_offset("./prog", "hidden");
	/* The process sees its file as /opt/app/prog under its root. */
	sh("mkdir -p r/opt/app/.debug && cp prog.debug r/opt/app/.debug/ && "
	   "cp prog.nolink r/opt/app/prog && "
	   "objcopy --add-gnu-debuglink=prog.debug r/opt/app/prog");
	snprintf(root, sizeof(root), "%s/r", dir);
	st = load("r/opt/app/prog", root, "/opt/app/prog");
	cr_assert_str_eq(symtab__source(st), "debug-file");
	expect_fn(st, hid, "kiln_hidden", "prog", NULL);
	symtab__free(st);

	/* Under /usr/lib/debug/<dir>/ of the root. */
	sh("mkdir -p r/usr/lib/debug/opt/app && mv r/opt/app/.debug/prog.debug "
	   "r/usr/lib/debug/opt/app/");
	st = load("r/opt/app/prog", root, "/opt/app/prog");
	cr_assert_str_eq(symtab__source(st), "debug-file");
	expect_fn(st, hid, "kiln_hidden", "prog", NULL);
	symtab__free(st);

	/* Seen from the wrong root, it is not found. */
	snprintf(path, sizeof(path), "%s/empty", dir);
	sh("mkdir empty");
	st = load("r/opt/app/prog", path, "/opt/app/prog");
	cr_assert_str_neq(symtab__source(st), "debug-file");
	expect_not_fn(st, hid, "kiln_hidden");
	symtab__free(st);
}

Test(elf_symtab, debuglink_crc_mismatch)
{
	struct symtab *st;
	uint64_t hid;

	build_split();
	hid = printed_offset("./prog", "hidden");
	sh("mkdir a && cp prog.debug a/ && cp prog.nolink a/prog && "
	   "objcopy --add-gnu-debuglink=a/prog.debug a/prog && echo x >> a/prog.debug");
	st = load("a/prog", "", NULL);
	cr_assert_str_neq(symtab__source(st), "debug-file");
	expect_not_fn(st, hid, "kiln_hidden");
	symtab__free(st);
}

Test(elf_symtab, build_id_under_root)
{
	char root[128], id[129], cmd[512];
	struct symtab *st;
	uint64_t hid, exp;

	build_split();
	hid = printed_offset("./prog", "hidden");
	exp = printed_offset("./prog", "exported");
	st = load("prog.nolink", "", NULL);
	/* nothing of its own: its PLT stubs only */
	cr_assert_str_eq(symtab__source(st), "dynsym");
	expect_not_fn(st, hid, "kiln_hidden");
	expect_not_fn(st, exp, "kiln_exported");
	snprintf(id, sizeof(id), "%s", symtab__build_id(st));
	symtab__free(st);
	cr_assert_eq(strlen(id), 40);
	/* The build id must be the one readelf shows. */
	snprintf(cmd, sizeof(cmd), "readelf -n prog.nolink | grep -q 'Build ID: %s$'", id);
	sh("%s", cmd);

	sh("mkdir -p r/usr/lib/debug/.build-id/%.2s && cp prog.debug "
	   "r/usr/lib/debug/.build-id/%.2s/%s.debug", id, id, id + 2);
	snprintf(root, sizeof(root), "%s/r", dir);
	st = load("prog.nolink", root, "/usr/bin/prog");
	cr_assert_str_eq(symtab__source(st), "debug-file");
	cr_assert_str_eq(symtab__build_id(st), id);
	expect_fn(st, hid, "kiln_hidden", "prog", NULL);
	expect_fn(st, exp, "kiln_exported", "prog", NULL);
	symtab__free(st);

	/* A file under the right name but with another build id is refused. */
	sh("cc -O2 -g -Wl,--build-id=sha1 -o other prog.c && "
	   "cp other r/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	st = load("prog.nolink", root, "/usr/bin/prog");
	cr_assert_str_eq(symtab__source(st), "dynsym");
	expect_not_fn(st, hid, "kiln_hidden");
	symtab__free(st);
}

Test(elf_symtab, minidebuginfo)
{
	struct symtab *st;
	uint64_t exp, hid;

	build_lib();
	exp = printed_offset("./libmain", "exported");
	hid = printed_offset("./libmain", "hidden");
	/* The Fedora recipe: local function symbols only, xz, as a section. */
	sh("objcopy --only-keep-debug libkt.so full.debug && "
	   "objcopy -S --remove-section .gdb_index --remove-section .comment "
	   "--keep-symbol=kiln_lib_hidden full.debug mini && xz mini && "
	   "strip --strip-all -R .comment -o libkt.mini.so libkt.so && "
	   "objcopy --add-section .gnu_debugdata=mini.xz libkt.mini.so");
	st = load("libkt.mini.so", "", NULL);
	cr_assert_str_eq(symtab__source(st), "minidebuginfo");
	expect_fn(st, hid, "kiln_lib_hidden", "libkt.so", NULL);
	expect_fn(st, exp, "kiln_lib_exported", "libkt.so", NULL);
	symtab__free(st);

	/* A corrupt .gnu_debugdata falls back to .dynsym. */
	sh("head -c 200 /dev/zero > bad.xz && "
	   "strip --strip-all -o libkt.bad.so libkt.so && "
	   "objcopy --add-section .gnu_debugdata=bad.xz libkt.bad.so");
	st = load("libkt.bad.so", "", NULL);
	cr_assert_str_eq(symtab__source(st), "dynsym");
	expect_fn(st, exp, "kiln_lib_exported", "libkt.so", NULL);
	expect_not_fn(st, hid, "kiln_lib_hidden");
	symtab__free(st);
}

Test(elf_symtab, cxx_demangled)
{
	struct symtab *st;

	sh("g++ -O1 -g -o cxx cxx.cc");
	st = load("cxx", "", NULL);
	expect_fn(st, printed_offset("./cxx", "area"), "kiln::area(int, long)",
		  "cxx", "_ZN4kiln4areaEil");
	expect_fn(st, printed_offset("./cxx", "twice"), "double kiln::twice<double>(double)",
		  "cxx", "_ZN4kiln5twiceIdEET_S1_");
	symtab__free(st);
}

static void *vdso_image(size_t *size)
{
	unsigned long s, e;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &s, &e) == 2) {
			fclose(f);
			*size = e - s;
			return (void *)s;
		}
	}
	fclose(f);
	return NULL;
}

Test(elf_symtab, vdso_from_memory)
{
	char id[129], path[256];
	struct symtab *st, *st2;
	uint64_t addr;
	size_t size;
	void *img = vdso_image(&size);
	FILE *f;

	if (!img)
		cr_skip_test("no vDSO");
	st = symtab__load_mem(img, size);
	cr_assert_not_null(st, "%s", strerror(errno));
	cr_assert_str_eq(symtab__source(st), "dynsym");
	cr_assert_geq(symtab__count(st), 4);

	/* nm reads a copy of the image; its vDSO maps at file offset 0. */
	f = fopen(in_dir(path, sizeof(path), "vdso.so"), "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(img, 1, size, f), size);
	fclose(f);
	sh("nm -D --defined-only vdso.so | grep -q ' T __vdso_clock_gettime@'");
	sh("nm -D --defined-only vdso.so | grep ' T __vdso_clock_gettime@' | "
	   "cut -d' ' -f1 > addr");
	f = fopen(in_dir(path, sizeof(path), "addr"), "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%" SCNx64, &addr), 1);
	fclose(f);
	/* clock_gettime (weak) shares the address: the global name wins. */
	expect_fn(st, addr, "__vdso_clock_gettime", NULL, NULL);

	st2 = load("vdso.so", "", NULL);
	cr_assert_eq(symtab__count(st2), symtab__count(st));
	cr_assert_str_eq(symtab__build_id(st2), symtab__build_id(st));
	if (symtab__build_id(st)[0]) {
		int fd = open(in_dir(path, sizeof(path), "vdso.so"), O_RDONLY);

		cr_assert_eq(elf__build_id(fd, id, sizeof(id)), 0);
		cr_assert_str_eq(id, symtab__build_id(st));
		close(fd);
	}
	symtab__free(st2);
	symtab__free(st);
}

static int open_in_dir(const char *name)
{
	char path[256];
	int fd;

	fd = open(in_dir(path, sizeof(path), name), O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	return fd;
}

static void expect_invalid(const char *name)
{
	int fd = open_in_dir(name);
	char id[129];

	errno = 0;
	cr_assert_null(symtab__load_fd(fd, "", name), "%s loaded", name);
	cr_assert_eq(errno, EINVAL, "%s: errno %d", name, errno);
	cr_assert_eq(elf__build_id(fd, id, sizeof(id)), -EINVAL, "%s", name);
	close(fd);
}

Test(elf_symtab, malformed_files)
{
	sh("cc -O1 -g -o prog prog.c");
	sh(": > empty && head -c 100 prog > trunc100 && head -c 16 prog > trunc16 && "
	   "head -c 65536 /dev/urandom > garbage && "
	   "(printf '\\177ELF\\002\\001\\001'; head -c 4000 /dev/zero | tr '\\0' '\\377') "
	   "> elfish");
	expect_invalid("empty");
	expect_invalid("trunc100");
	expect_invalid("trunc16");
	expect_invalid("garbage");
	expect_invalid("elfish");
	cr_assert_null(symtab__load_fd(-1, "", NULL));
	cr_assert_null(symtab__load_mem(NULL, 10));
	cr_assert_null(symtab__load_mem("\177ELF", 4));
	cr_assert_null(symtab__lookup(NULL, 0, NULL, &(struct sym){ 0 }));
	cr_assert_eq(symtab__count(NULL), 0);
	symtab__free(NULL);
}

Test(elf_symtab, build_id_errors)
{
	char id[129], small[8];
	int fd;

	sh("cc -O1 -Wl,--build-id=none -o noid prog.c && "
	   "cc -O1 -Wl,--build-id=sha1 -o withid prog.c");
	fd = open_in_dir("noid");
	cr_assert_eq(elf__build_id(fd, id, sizeof(id)), -ENOENT);
	close(fd);
	fd = open_in_dir("withid");
	cr_assert_eq(elf__build_id(fd, small, sizeof(small)), -ERANGE);
	cr_assert_eq(elf__build_id(fd, id, sizeof(id)), 0);
	cr_assert_eq(strlen(id), 40);
	close(fd);
	sh("readelf -n withid | grep -q 'Build ID: %s$'", id);
}

/* Random corruption of a real binary: NULL or a table, never a crash (the
 * sanitizer build checks for out-of-bounds reads). */
Test(elf_symtab, mutations_never_crash)
{
	unsigned char *img, *mut;
	struct stat sb;
	size_t size;
	int fd, loaded = 0;

	sh("cc -O1 -g -o prog prog.c");
	fd = open_in_dir("prog");
	cr_assert_eq(fstat(fd, &sb), 0);
	size = (size_t)sb.st_size;
	img = malloc(size);
	mut = malloc(size);
	cr_assert(img && mut);
	cr_assert_eq(pread(fd, img, size, 0), (ssize_t)size);
	close(fd);
	srand(7);
	for (int round = 0; round < 3000; round++) {
		struct symtab *st;
		size_t n = 1 + (size_t)rand() % 8, len = size;

		memcpy(mut, img, size);
		for (size_t i = 0; i < n; i++) {
			/* Headers at either end of the file are the interesting part. */
			size_t at = (size_t)rand() % 512;

			if (rand() % 2)
				at = size - 1 - (size_t)rand() % 4096 % size;
			mut[at] = (unsigned char)rand();
		}
		if (round % 10 == 0)
			len = (size_t)rand() % size + 1;
		st = symtab__load_mem(mut, len);
		if (st) {
			loaded++;
			for (int i = 0; i < 50; i++)
				symtab__lookup(st, (uint64_t)rand() % (size + 4096), NULL,
					       &(struct sym){ 0 });
		}
		symtab__free(st);
	}
	cr_assert_gt(loaded, 0);
	free(img);
	free(mut);
}

/* Hand-written entry points are untyped, sizeless labels (ld.so's _start):
 * they name the code up to the next symbol, while a label inside a sized
 * function does not split it and compiler-local .L labels never show. */
Test(elf_symtab, code_labels)
{
	struct symtab *st;
	const struct sym *s;

	write_file("labels.s",
		   "	.text\n"
		   "	.globl kiln_entry\n"
		   "kiln_entry:\n"
		   "	nop\n	nop\n	nop\n	nop\n"
		   "	.globl kiln_sized\n"
		   "	.type kiln_sized, @function\n"
		   "kiln_sized:\n"
		   "	nop\n	nop\n"
		   "	.globl kiln_inner\n"
		   "kiln_inner:\n"
		   "	nop\n	nop\n"
		   ".Llocal:\n"
		   "	ret\n"
		   "	.size kiln_sized, .-kiln_sized\n"
		   "	.data\n"
		   "	.globl kiln_data_label\n"
		   "kiln_data_label:\n"
		   "	.quad 0\n");
	sh("cc -shared -nostdlib -Wl,--build-id=sha1 -o liblabels.so labels.s");
	st = load("liblabels.so", "", NULL);
	/* In a shared object built this way file offsets equal addresses. */
	expect_fn(st, nm_addr("liblabels.so", "kiln_entry"), "kiln_entry", "liblabels.so", NULL);
	s = symtab__lookup(st, nm_addr("liblabels.so", "kiln_inner") + 1, NULL, &(struct sym){ 0 });
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, "kiln_sized", "a label split the function: %s", s->name);
	/* kiln_entry, kiln_sized, and nothing from .data or .L labels. */
	cr_assert_eq(symtab__count(st), 2, "%zu symbols", symtab__count(st));
	symtab__free(st);
}

/* ---- cache files (symtab__encode / symtab__decode) ---- */

#define KEY "f:1:2:3:4.000000005 b: d:-"

/* st's cache file, decoded again under max bytes: the error, *out. */
static int round_trip(const struct symtab *st, const char *key, size_t max, struct symtab **out,
		      uint8_t **buf, size_t *len)
{
	cr_assert_eq(symtab__encode(st, KEY, buf, len), 0);
	return symtab__decode(*buf, *len, key, max, out);
}

Test(elf_symtab, cache_file_round_trip)
{
	struct symtab *st, *back;
	uint64_t exp, hid;
	uint8_t *buf;
	size_t len;

	build_lib();
	exp = printed_offset("./libmain", "exported");
	hid = printed_offset("./libmain", "hidden");
	st = load("libkt.so", "", NULL);
	cr_assert_eq(round_trip(st, KEY, SYMTAB_DEFAULT_MAX_BYTES, &back, &buf, &len), 0);
	cr_assert_str_eq(symtab__source(back), "symtab");
	cr_assert_str_eq(symtab__build_id(back), symtab__build_id(st));
	cr_assert_eq(symtab__count(back), symtab__count(st));
	cr_assert_eq(symtab__bytes(back), symtab__bytes(st));
	expect_fn(back, exp, "kiln_lib_exported", "libkt.so", NULL);
	expect_fn(back, hid, "kiln_lib_hidden", "libkt.so", NULL);
	symtab__free(back);
	/* another key (a hash collision of two files' names), a smaller bound */
	cr_assert_eq(symtab__decode(buf, len, "f:1:2:3:4.000000005 b: d:9", SYMTAB_DEFAULT_MAX_BYTES,
				    &back), -ENOENT);
	cr_assert_eq(symtab__decode(buf, len, KEY, symtab__bytes(st) - 1, &back), -EFBIG);
	cr_assert_null(back);
	free(buf);
	symtab__free(st);
}

/* A cache file's header (elf_symtab.c's struct cache_header). */
#define OFF_FORMAT 8
#define OFF_COUNT 24
#define OFF_NAMES_LEN 32
#define OFF_NSEGS 40
#define OFF_DEFLATED 48
#define HEADER_BYTES 192

/* buf with width bytes of value written at off and its CRC-32 made
 * right, so the checks behind the CRC are reached: decoded, want err. */
static void expect_refused(const uint8_t *buf, size_t len, size_t off, uint64_t value,
			   size_t width, int err)
{
	struct symtab *back = NULL;
	uint8_t *bad = malloc(len);
	uint32_t crc;

	cr_assert_not_null(bad);
	memcpy(bad, buf, len);
	memcpy(bad + off, &value, width);
	crc = (uint32_t)crc32_z(crc32_z(0, NULL, 0), bad, len - 4);
	memcpy(bad + len - 4, &crc, 4);
	cr_assert_eq(symtab__decode(bad, len, KEY, SYMTAB_DEFAULT_MAX_BYTES, &back), err,
		     "%llx written at %zu", (unsigned long long)value, off);
	cr_assert_null(back);
	free(bad);
}

Test(elf_symtab, cache_file_refused_when_wrong)
{
	struct symtab *st, *back = NULL;
	size_t len, syms, blocks, refs, names;
	uint64_t start;
	uint32_t nsegs, raw;
	uint8_t *buf;

	build_lib();
	st = load("libkt.so", "", NULL);
	cr_assert_gt(symtab__count(st), 1);
	cr_assert_eq(symtab__encode(st, KEY, &buf, &len), 0);
	memcpy(&nsegs, buf + OFF_NSEGS, 4);
	syms = HEADER_BYTES + strlen(KEY) + nsegs * 24;
	blocks = syms + symtab__count(st) * 16;
	refs = blocks + ((symtab__count(st) + 15) / 16 + 1) * 8;
	names = refs + symtab__count(st) * 4;

	/* cut short anywhere, or one byte changed (the CRC): refused */
	for (size_t cut = 0; cut < len; cut += len / 13 + 1)
		cr_assert_eq(symtab__decode(buf, cut, KEY, SYMTAB_DEFAULT_MAX_BYTES, &back), -EBADMSG);
	buf[names + 1] ^= 1;
	cr_assert_eq(symtab__decode(buf, len, KEY, SYMTAB_DEFAULT_MAX_BYTES, &back), -EBADMSG);
	buf[names + 1] ^= 1;

	/* with a right CRC: another format is stale, not corrupt; counts
	 * that lie are refused before any allocation; a block outside the
	 * names or of another length, a name starting where another did,
	 * names not ending in NUL, two symbols at one start */
	expect_refused(buf, len, OFF_FORMAT, 99, 4, -ESTALE);
	expect_refused(buf, len, OFF_COUNT, UINT64_MAX / 2, 8, -EFBIG);
	expect_refused(buf, len, OFF_COUNT, symtab__count(st) + 1, 8, -EBADMSG);
	expect_refused(buf, len, OFF_NAMES_LEN, 0, 8, -EBADMSG);
	expect_refused(buf, len, blocks, 1, 4, -EBADMSG);
	memcpy(&raw, buf + blocks + 4, 4);
	expect_refused(buf, len, blocks + 4, raw + 1, 4, -EBADMSG);
	expect_refused(buf, len, blocks + 4, raw - 1, 4, -EBADMSG);
	expect_refused(buf, len, len - 5, 'x', 1, -EBADMSG);
	expect_refused(buf, len, refs + 4, 0, 4, -EBADMSG);
	expect_refused(buf, len, OFF_DEFLATED, 2, 4, -EBADMSG);
	memcpy(&start, buf + syms, 8);
	expect_refused(buf, len, syms + 16, start, 8, -EBADMSG);
	free(buf);
	symtab__free(st);
}

/* The key follows the debug file symtab__load would find: none, then the
 * one placed under the root's build-id directory, then its replacement. */
Test(elf_symtab, cache_key_follows_the_debug_file)
{
	char root[128], full[256], none[128], first[128], second[128];
	struct symtab *st;
	const char *id;
	int fd;

	build_split();
	st = load("prog.nolink", "", NULL);
	id = symtab__build_id(st);
	snprintf(root, sizeof(root), "%s/r", dir);
	fd = open(in_dir(full, sizeof(full), "prog.nolink"), O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(symtab__debug_file_id(fd, root, "/usr/bin/prog", none, sizeof(none)), 0);
	cr_assert_str_eq(none, "-");
	sh("mkdir -p r/usr/lib/debug/.build-id/%.2s && cp prog.debug "
	   "r/usr/lib/debug/.build-id/%.2s/%s.debug", id, id, id + 2);
	cr_assert_eq(symtab__debug_file_id(fd, root, "/usr/bin/prog", first, sizeof(first)), 0);
	cr_assert_str_neq(first, "-");
	sh("cp r/usr/lib/debug/.build-id/%.2s/%s.debug new.debug && "
	   "mv new.debug r/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2, id, id + 2);
	cr_assert_eq(symtab__debug_file_id(fd, root, "/usr/bin/prog", second, sizeof(second)), 0);
	cr_assert_str_neq(second, first);
	close(fd);
	symtab__free(st);
}

/* ---- a large table: names deflated (sym_names.h) ---- */

struct nm_fn {
	uint64_t addr, off;
	char *name;
};

static int cmp_nm_fn(const void *a, const void *b)
{
	const struct nm_fn *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Each function's file offset, through path's PT_LOAD segments. */
static void file_offsets(const char *path, struct nm_fn *fns, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t nph = 0;
	Elf *elf;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert(elf && elf_getphdrnum(elf, &nph) == 0);
	for (size_t k = 0; k < n; k++) {
		fns[k].off = UINT64_MAX;
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    fns[k].addr - ph.p_vaddr < ph.p_filesz)
				fns[k].off = fns[k].addr - ph.p_vaddr + ph.p_offset;
		}
		cr_assert_neq(fns[k].off, UINT64_MAX, "%s in no segment", fns[k].name);
	}
	elf_end(elf);
	close(fd);
}

/* nm names fns[i]'s address also with name (fns sorted by address). */
static bool nm_alias(const struct nm_fn *fns, size_t n, size_t i, const char *name)
{
	size_t j = i;

	while (j && fns[j - 1].addr == fns[i].addr)
		j--;
	for (; j < n && fns[j].addr == fns[i].addr; j++)
		if (strcmp(fns[j].name, name) == 0)
			return true;
	return false;
}

/* Every function of a real C++ library (libstdc++: 500 KB of demangled
 * names, past the bound that deflates them) reads back as binutils' nm
 * demangles it, in address order and in strides that hop between blocks,
 * from the table as built and from its cache file. */
Test(elf_symtab, cxx_library_names_deflated_read_as_nm_demangles)
{
	char path[512], cmd[640], line[2048], type;
	struct symtab *st, *back = NULL;
	struct nm_fn *fns = NULL;
	size_t n = 0, cap = 0, names = 0, len, checked = 0;
	unsigned long long addr;
	uint8_t *buf;
	FILE *p;
	int fd, used;

	p = popen("gcc -print-file-name=libstdc++.so.6", "r");
	cr_assert(p && fgets(path, sizeof(path), p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only -C --without-symbol-versions '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx %c %n", &addr, &type, &used) != 2 || !strchr("TtWi", type) ||
		    strlen(line + used) >= SYMTAB_NAME_MAX - 1)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			fns = realloc(fns, cap * sizeof(*fns));
			cr_assert_not_null(fns);
		}
		fns[n++] = (struct nm_fn){ .addr = addr, .name = strdup(line + used) };
		names += strlen(line + used) + 1;
	}
	pclose(p);
	cr_assert_gt(names, SYM_NAMES_DEFLATE_FROM, "%s: %zu bytes of names", path, names);
	qsort(fns, n, sizeof(*fns), cmp_nm_fn);
	file_offsets(path, fns, n);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	st = symtab__load_fd(fd, "", path);
	close(fd);
	cr_assert_not_null(st);
	cr_assert_lt(symtab__bytes(st), names / 2, "%zu bytes held for %zu of names",
		     symtab__bytes(st), names);
	cr_assert_eq(symtab__encode(st, KEY, &buf, &len), 0);
	cr_assert_eq(symtab__decode(buf, len, KEY, SYMTAB_DEFAULT_MAX_BYTES, &back), 0);
	free(buf);
	for (int t = 0; t < 2; t++)
		for (size_t stride = 1; stride < 50; stride += 48)
			for (size_t k = 0; k < n; k++) {
				size_t i = k * stride % n;
				const struct sym *s;
				uint64_t va = 0;

				s = symtab__lookup(t ? back : st, fns[i].off, &va, &(struct sym){ 0 });
				cr_assert_not_null(s, "%s at %#llx: not found", fns[i].name,
						   (unsigned long long)fns[i].addr);
				cr_assert_eq(s->start, fns[i].addr, "%s", fns[i].name);
				/* kiln keeps one of the names at an address */
				cr_assert(nm_alias(fns, n, i, s->name), "%#llx: kiln says %s, nm %s",
					  (unsigned long long)fns[i].addr, s->name, fns[i].name);
				checked++;
			}
	cr_assert_gt(checked, 1000);
	for (size_t k = 0; k < n; k++)
		free(fns[k].name);
	free(fns);
	symtab__free(back);
	symtab__free(st);
}
