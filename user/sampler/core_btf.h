/* SPDX-License-Identifier: BSD-2-Clause */
/* The kernel's types that the BPF object's CO-RE relocations can match,
 * cut out of the kernel's BTF (several MB, over 100 000 types: about 12 ms
 * for libbpf to read and check at every start, and more to search) into a
 * small BTF file kept in the cache directory, which libbpf then reads
 * instead (its btf_custom_path). */
#ifndef KILN_SAMPLER_CORE_BTF_H
#define KILN_SAMPLER_CORE_BTF_H

#include <stddef.h>
#include <stdint.h>

#define CORE_BTF_NAME "kernel.btf"
#define CORE_BTF_MAX_BYTES (8u << 20)   /* a larger file is not kiln's */

enum core_btf_result {
	CORE_BTF_OFF,           /* no cache directory */
	CORE_BTF_HIT,           /* this boot's and this object's, read back */
	CORE_BTF_BUILT,         /* cut from the kernel's BTF and written */
	CORE_BTF_REFUSED,       /* the file there was not kiln's, or corrupt: rebuilt */
	CORE_BTF_FAILED,        /* could not be built or written: the kernel's BTF used */
};

/* Loads of the BPF object by where its relocations read the kernel's
 * types: a kept cut, a cut made now, all of the kernel's BTF (no cache
 * directory, no cut, or one libbpf or the kernel refused: fallbacks). */
struct core_btf_stats {
	uint64_t hits, built, whole;
	uint64_t refused;       /* files there not kiln's own or corrupt */
	uint64_t fallbacks;
	uint64_t types;         /* in the cut used; 0: none */
};

/* Makes dirfd/CORE_BTF_NAME hold the kernel types that the object (ELF
 * bytes obj, its .BTF) can relocate against, for this boot and this
 * object: read back when its key matches, else cut from
 * /sys/kernel/btf/vmlinux and written. On success, path (for libbpf, valid
 * while dirfd stays open) names it. Returns the result; path is set for
 * CORE_BTF_HIT, CORE_BTF_BUILT and CORE_BTF_REFUSED. */
enum core_btf_result core_btf__prepare(int dirfd, const void *obj, size_t obj_len, char *path,
				       size_t path_len, uint64_t *types);

#endif
