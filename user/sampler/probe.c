// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: before the BPF object is opened, each kernel feature the sampler
 * uses is probed, oldest first, with a tiny program or map the kernel either
 * accepts or not (libbpf's probes), never from the kernel's version string
 * (distributions backport). The first one missing ends the start-up with
 * one line naming the feature and the Linux release that added it; nothing
 * has been loaded or attached by then. The kernel versions are those of the
 * upstream commits that introduced each feature. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/log.h"
#include "sampler/sampler.h"

/* The BTF header's magic (include/uapi/linux/btf.h), and the header's
 * fixed part: magic, version, flags, hdr_len, then four u32 offsets and
 * lengths, of which type_len (the fourth u32 after hdr_len) must be > 0. */
#define BTF_MAGIC_LE 0xeB9F

struct btf_hdr_raw {
	uint16_t magic;
	uint8_t version;
	uint8_t flags;
	uint32_t hdr_len;
	uint32_t type_off;
	uint32_t type_len;
	uint32_t str_off;
	uint32_t str_len;
};

/* 1 when path holds BTF with types, 0 when not, -errno when unreadable. */
static int btf_usable(const char *path)
{
	struct btf_hdr_raw h;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, &h, sizeof(h));
	if (n < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	return n == (ssize_t)sizeof(h) && h.magic == BTF_MAGIC_LE && h.type_len > 0;
}

/* 1 when the kernel loads insns (a few instructions ending in r0 = 0;
 * exit) as a program of type, 0 when the verifier refuses them, -EPERM. */
static int probe_insns(enum bpf_prog_type type, const struct bpf_insn *insns, size_t n,
		       const struct bpf_prog_load_opts *opts)
{
	int fd = bpf_prog_load(type, NULL, "GPL", insns, n, opts);

	if (fd < 0)
		return errno == EPERM ? -EPERM : 0;
	close(fd);
	return 1;
}

enum probe_kind { PROBE_PROG, PROBE_MAP, PROBE_HELPER };

struct feature {
	enum probe_kind kind;
	int type;                       /* prog or map type */
	int helper;                     /* enum bpf_func_id, PROBE_HELPER */
	const char *what;
	const char *since;              /* first Linux release with it */
};

/* Oldest first: on an old kernel the first line names the oldest gap. */
static const struct feature features[] = {
	{ PROBE_PROG, BPF_PROG_TYPE_PERF_EVENT, 0, "BPF programs on perf events", "4.9" },
	{ PROBE_MAP, BPF_MAP_TYPE_PROG_ARRAY, 0, "BPF program arrays (tail calls)", "4.2" },
	{ PROBE_HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_stack,
	  "the bpf_get_stack helper in perf event programs", "4.18" },
	{ PROBE_HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_probe_read_user,
	  "the bpf_probe_read_user helper in perf event programs", "5.5" },
	{ PROBE_MAP, BPF_MAP_TYPE_LRU_HASH, 0, "LRU hash maps", "4.10" },
	{ PROBE_PROG, BPF_PROG_TYPE_RAW_TRACEPOINT, 0, "raw tracepoint programs", "4.17" },
	{ PROBE_HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_cgroup_id,
	  "the bpf_get_current_cgroup_id helper", "4.18" },
	{ PROBE_MAP, BPF_MAP_TYPE_RINGBUF, 0, "the BPF ring buffer", "5.8" },
};

static int probe_one(const struct feature *f)
{
	switch (f->kind) {
	case PROBE_PROG:
		return libbpf_probe_bpf_prog_type(f->type, NULL);
	case PROBE_MAP:
		return libbpf_probe_bpf_map_type(f->type, NULL);
	case PROBE_HELPER:
		return libbpf_probe_bpf_helper(f->type, f->helper, NULL);
	}
	return -EINVAL;
}

/* A perf event program using a hash map that is not preallocated (Linux
 * 6.1: its elements come from the BPF memory allocator, safe where the
 * program interrupts). */
static int probe_lazy_hash(void)
{
	int map = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, 4, 8, 1,
				 &(struct bpf_map_create_opts){ .sz = sizeof(struct bpf_map_create_opts),
								.map_flags = BPF_F_NO_PREALLOC });
	int r;

	if (map < 0)
		return -errno;
	const struct bpf_insn insns[] = {
		{ .code = 0x62, .dst_reg = 10, .off = -4, .imm = 0 },   /* *(u32 *)(r10 - 4) = 0 */
		{ .code = 0x18, .dst_reg = 1, .src_reg = 1, .imm = map }, /* r1 = map (ld_imm64) */
		{ 0 },
		{ .code = 0xbf, .dst_reg = 2, .src_reg = 10 },          /* r2 = r10 */
		{ .code = 0x07, .dst_reg = 2, .imm = -4 },              /* r2 += -4 */
		{ .code = 0x85, .imm = BPF_FUNC_map_lookup_elem },      /* call */
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },               /* r0 = 0 */
		{ .code = 0x95 },                                       /* exit */
	};
	r = probe_insns(BPF_PROG_TYPE_PERF_EVENT, insns, sizeof(insns) / sizeof(insns[0]), NULL);
	close(map);
	return r;
}

bool sampler__lazy_hash_maps(void)
{
	if (probe_lazy_hash() == 1)
		return true;
	pr_debug("sampler: perf event programs need preallocated hash maps (before Linux 6.1)");
	return false;
}

bool sampler__kprobes(void)
{
	return access("/sys/bus/event_source/devices/kprobe/type", F_OK) == 0;
}

int sampler__probe(void)
{
	/* The kernel's own BTF: the source of the CO-RE relocations' types
	 * (core_btf.h), and what the kernel checks bpf_get_current_task_btf's
	 * pointer against. */
	const char *path = "/sys/kernel/btf/vmlinux";
	int ok = btf_usable(path);

	if (ok <= 0) {
		pr_error("kiln cannot start: this kernel has no BTF (%s is %s; kernel BTF came with Linux 5.4, built with CONFIG_DEBUG_INFO_BTF=y): kiln needs Linux " KILN_MIN_KERNEL " or newer with BTF",
			 path, ok < 0 ? "missing" : "empty or not BTF");
		return -1;
	}
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		int r = probe_one(&features[i]);

		if (r == 1)
			continue;
		if (r == 0)
			pr_error("kiln cannot start: this kernel lacks %s (Linux %s): kiln needs Linux " KILN_MIN_KERNEL " or newer with BTF",
				 features[i].what, features[i].since);
		else
			pr_error("kiln cannot start: cannot probe the kernel for %s (Linux %s): %s",
				 features[i].what, features[i].since, strerror(-r));
		return -1;
	}
	return 0;
}
