// SPDX-License-Identifier: BSD-2-Clause
/* BPF programs' names through bpf() (symbolize/bpf_ksyms.h), against the
 * kernel's own /proc/kallsyms: a program loaded here (two instructions, a
 * socket filter) is found at its jited address under the name kallsyms
 * gives it, bpf_prog_<tag>_<name>, and nowhere past its end. Needs root
 * (CAP_SYS_ADMIN, and kptr_restrict letting root see addresses). */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "symbolize/bpf_ksyms.h"

/* The name /proc/kallsyms gives addr, or "" */
static void kallsyms_name(uint64_t addr, char *out, size_t len)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];

	out[0] = '\0';
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && a == addr) {
			snprintf(out, len, "%s", name);
			break;
		}
	}
	fclose(f);
}

Test(bpf_ksyms, a_loaded_program_has_its_kallsyms_name)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);
	uint64_t addr = 0;
	uint32_t flen = 0;
	struct bpf_ksyms *b;
	struct ksym k;
	char want[256];
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root");
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "kiln_ksym_test", "GPL", insns, 2, NULL);
	cr_assert_geq(fd, 0, "bpf_prog_load: %s", strerror(errno));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uint64_t)(uintptr_t)&addr;
	info.nr_jited_func_lens = 1;
	info.jited_func_lens = (uint64_t)(uintptr_t)&flen;
	len = sizeof(info);
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	if (!addr)
		cr_skip_test("the kernel hides BPF addresses (kptr_restrict)");
	kallsyms_name(addr, want, sizeof(want));
	cr_assert_neq(want[0], '\0', "0x%" PRIx64 " not in /proc/kallsyms", addr);

	b = bpf_ksyms__load();
	cr_assert_not_null(b, "bpf_ksyms__load: %s", strerror(errno));
	cr_assert_geq(bpf_ksyms__count(b), 1);
	cr_assert_eq(bpf_ksyms__skipped(b), 0);
	cr_assert(bpf_ksyms__lookup(b, addr, &k));
	cr_assert_eq(k.addr, addr);
	cr_assert_str_eq(k.name, want);
	cr_assert_str_eq(k.module, "bpf");
	cr_assert(bpf_ksyms__lookup(b, addr + flen - 1, &k));
	cr_assert_str_eq(k.name, want);
	/* Past its end: another program's, or nothing; never this one. */
	cr_assert(!bpf_ksyms__lookup(b, addr + flen, &k) || strcmp(k.name, want) != 0);
	cr_assert(!bpf_ksyms__lookup(b, 0x1000, &k));
	cr_assert(!bpf_ksyms__lookup(NULL, addr, &k));
	bpf_ksyms__free(b);
	close(fd);
}
