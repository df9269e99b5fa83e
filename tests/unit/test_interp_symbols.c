// SPDX-License-Identifier: BSD-2-Clause
/* interp__symbols on this test program's own file: the runtime address of
 * a function and a TLS variable's offset, from the file read once, then
 * from what is kept of it for a second mapping of the same file at
 * another address (another process's load bias). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/interp_procs.h"

__attribute__((noinline, used)) int interp_symbols_marker(int x)
{
	return x * 3 + 1;
}

__thread int interp_symbols_tls __attribute__((used)) = 7;

static const char *const names[] = { "interp_symbols_marker", "interp_symbols_tls",
				     "interp_symbols_absent" };

/* This program's executable mapping holding interp_symbols_marker, as
 * the process table would give it. */
static void own_mapping(struct proc_mapping *m, struct binary *bin)
{
	uint64_t a = (uint64_t)(uintptr_t)&interp_symbols_marker, s, e, off;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	struct stat sb;

	cr_assert(f);
	memset(m, 0, sizeof(*m));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %lx", &s, &e, &off) == 3 && a >= s && a < e)
			*m = (struct proc_mapping){ s, e, off, NULL, bin };
	fclose(f);
	cr_assert(m->bin, "no mapping of the marker");
	memset(bin, 0, sizeof(*bin));
	bin->path = "/proc/self/exe";
	bin->fd = open(bin->path, O_RDONLY | O_CLOEXEC);
	cr_assert(bin->fd >= 0);
	cr_assert(fstat(bin->fd, &sb) == 0);
	binary__key(&sb, bin->key, sizeof(bin->key));
	m->name = "unit_tests";
}

Test(interp_symbols, own_file_then_kept_at_another_bias)
{
	struct proc_mapping m, moved;
	struct binary bin;
	uint64_t addr[3] = { 0 }, size[3] = { 0 }, bias = 0, addr2[3] = { 0 }, size2[3] = { 0 },
		 bias2 = 0, delta = 0x40000000;

	own_mapping(&m, &bin);
	cr_assert_eq(interp__symbols(&m, names, 3, addr, size, &bias), 0);
	cr_expect_eq(addr[0], (uint64_t)(uintptr_t)&interp_symbols_marker);
	cr_expect_gt(size[0], 0);
	cr_expect_neq(addr[1], 0, "the TLS variable's offset + 1");
	cr_expect_eq(size[1], sizeof(int));
	cr_expect_eq(addr[2], 0, "absent");

	/* the same file mapped delta higher: the kept symbols, the new bias;
	 * the file's fd closed, so nothing is read again */
	moved = m;
	moved.start += delta;
	moved.end += delta;
	close(bin.fd);
	bin.fd = -1;
	cr_assert_eq(interp__symbols(&moved, names, 3, addr2, size2, &bias2), 0);
	cr_expect_eq(bias2, bias + delta);
	cr_expect_eq(addr2[0], addr[0] + delta);
	cr_expect_eq(addr2[1], addr[1], "a TLS offset does not move");
	cr_expect_eq(size2[0], size[0]);

	/* an offset in no executable segment of the file */
	moved.pgoff = UINT64_MAX & ~4095ull;
	memset(addr2, 0, sizeof(addr2));
	cr_expect_eq(interp__symbols(&moved, names, 3, addr2, size2, NULL), -ENOENT);

	/* another file under the same key is not this one: not kept, read
	 * (and here, unreadable) */
	snprintf(bin.key, sizeof(bin.key), "f:0:0:0:0");
	cr_expect_eq(interp__symbols(&m, names, 3, addr2, size2, NULL), -EINVAL);
}
