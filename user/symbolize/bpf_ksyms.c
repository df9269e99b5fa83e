// SPDX-License-Identifier: BSD-2-Clause
/* BPF program names through bpf() (bpf_ksyms.h).
 *
 * DESIGN: BPF_PROG_GET_NEXT_ID walks the loaded programs; for each, one
 * BPF_OBJ_GET_INFO_BY_FD says how many functions it has and a second one
 * fills their jited addresses and lengths (the kernel leaves the
 * addresses zero for a reader kptr_restrict hides them from). The name is
 * kallsyms' for the program's main function, bpf_prog_<tag>_<name>; its
 * other functions (subprograms, bpf_loop callbacks), which kallsyms names
 * from the program's BTF, get the same name with ".<i>": their own names
 * would take loading each program's BTF. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "symbolize/bpf_ksyms.h"

struct bpf_func {
	uint64_t start, end;
	char name[64];
};

struct bpf_ksyms {
	struct bpf_func *funcs;
	size_t n, cap;
	size_t skipped;
};

static int push(struct bpf_ksyms *b, uint64_t start, uint32_t len, const char *prefix,
		unsigned idx)
{
	struct bpf_func *f;

	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;

		f = realloc(b->funcs, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		b->funcs = f;
		b->cap = cap;
	}
	f = &b->funcs[b->n++];
	f->start = start;
	f->end = start + len;
	if (idx)
		snprintf(f->name, sizeof(f->name), "%s.%u", prefix, idx);
	else
		snprintf(f->name, sizeof(f->name), "%s", prefix);
	return 0;
}

/* The functions of the program behind fd; 0 when it has none to name
 * (not jited, or its addresses hidden), -ENOMEM. */
static int add_prog(struct bpf_ksyms *b, int fd)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info), n;
	uint64_t addrs[BPF_KSYMS_FUNCS_MAX];
	uint32_t lens[BPF_KSYMS_FUNCS_MAX];
	char prefix[sizeof(((struct bpf_func *)0)->name) - 8];
	int at;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.nr_jited_ksyms ||
	    info.nr_jited_ksyms != info.nr_jited_func_lens)
		return 0;
	n = info.nr_jited_ksyms < BPF_KSYMS_FUNCS_MAX ? info.nr_jited_ksyms : BPF_KSYMS_FUNCS_MAX;
	at = snprintf(prefix, sizeof(prefix), "bpf_prog_");
	for (size_t i = 0; i < sizeof(info.tag); i++)
		at += snprintf(prefix + at, sizeof(prefix) - (size_t)at, "%02x", info.tag[i]);
	if (info.name[0])
		snprintf(prefix + at, sizeof(prefix) - (size_t)at, "_%.*s", (int)sizeof(info.name),
			 info.name);
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = n;
	info.jited_ksyms = (uint64_t)(uintptr_t)addrs;
	info.nr_jited_func_lens = n;
	info.jited_func_lens = (uint64_t)(uintptr_t)lens;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (!addrs[i] || !lens[i])
			return 0;
	for (uint32_t i = 0; i < n; i++) {
		int err = push(b, addrs[i], lens[i], prefix, i);

		if (err)
			return err;
	}
	return 0;
}

static int cmp_start(const void *x, const void *y)
{
	const struct bpf_func *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

struct bpf_ksyms *bpf_ksyms__load(void)
{
	struct bpf_ksyms *b = calloc(1, sizeof(*b));
	uint32_t id = 0;
	size_t progs = 0;
	int err;

	if (!b)
		return NULL;
	while ((err = bpf_prog_get_next_id(id, &id)) == 0) {
		int fd;

		if (progs >= BPF_KSYMS_PROGS_MAX) {
			b->skipped++;
			continue;
		}
		progs++;
		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;       /* unloaded since */
		err = add_prog(b, fd);
		close(fd);
		if (err)
			break;
	}
	if (err == -ENOENT)     /* the walk's end */
		err = b->n ? 0 : -ENOENT;
	if (err) {
		bpf_ksyms__free(b);
		errno = -err;
		return NULL;
	}
	qsort(b->funcs, b->n, sizeof(*b->funcs), cmp_start);
	return b;
}

bool bpf_ksyms__lookup(const struct bpf_ksyms *b, uint64_t addr, struct ksym *out)
{
	size_t lo = 0, hi = b ? b->n : 0;

	/* The last function starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->funcs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= b->funcs[lo - 1].end)
		return false;
	out->addr = b->funcs[lo - 1].start;
	out->name = b->funcs[lo - 1].name;
	out->module = "bpf";
	return true;
}

size_t bpf_ksyms__count(const struct bpf_ksyms *b)
{
	return b ? b->n : 0;
}

size_t bpf_ksyms__skipped(const struct bpf_ksyms *b)
{
	return b ? b->skipped : 0;
}

void bpf_ksyms__free(struct bpf_ksyms *b)
{
	if (!b)
		return;
	free(b->funcs);
	free(b);
}
