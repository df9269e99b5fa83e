/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of the BPF programs loaded now, as /proc/kallsyms would give them
 * (bpf_prog_<tag>_<name>), read through the bpf() syscall: a kernel stack
 * that passes through a BPF program (a tracepoint's, a cgroup filter's)
 * is named without having the kernel format all of /proc/kallsyms, which
 * costs a run ~0.1 s of system time and 6 MB. */
#ifndef KILN_SYMBOLIZE_BPF_KSYMS_H
#define KILN_SYMBOLIZE_BPF_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/kallsyms.h"

#define BPF_KSYMS_PROGS_MAX 4096u       /* programs read; more are skipped, counted */
#define BPF_KSYMS_FUNCS_MAX 256u        /* functions of one program (the verifier's bound) */

struct bpf_ksyms;

/* Reads every loaded program's functions (jited addresses and lengths).
 * NULL + errno: EPERM without CAP_SYS_ADMIN, ENOENT when the kernel hides
 * the addresses (kptr_restrict) or no program is loaded, ENOMEM. */
struct bpf_ksyms *bpf_ksyms__load(void);
/* The program function holding addr: true and *out (valid until free). */
bool bpf_ksyms__lookup(const struct bpf_ksyms *b, uint64_t addr, struct ksym *out);
size_t bpf_ksyms__count(const struct bpf_ksyms *b);
/* Programs left out of the last load (over BPF_KSYMS_PROGS_MAX). */
size_t bpf_ksyms__skipped(const struct bpf_ksyms *b);
void bpf_ksyms__free(struct bpf_ksyms *b);

#endif
