/* SPDX-License-Identifier: BSD-2-Clause */
/* Unaligned host-order loads from a byte buffer (what another process's
 * memory, read with process_vm_readv, holds). The caller bounds off. */
#ifndef KILN_CORE_BYTES_H
#define KILN_CORE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t bytes__u32(const uint8_t *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint64_t bytes__u64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

#endif
