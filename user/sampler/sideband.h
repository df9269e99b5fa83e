/* SPDX-License-Identifier: BSD-2-Clause */
/* The kernel's side-band records of every process, as perf record keeps
 * them: each executable mapping as it is made (PERF_RECORD_MMAP2), each
 * exec (PERF_RECORD_COMM with the exec flag) and each exit. A process that
 * lives a few milliseconds may be gone before /proc/PID/maps can be read;
 * these records still tell where its code was. One dummy software event
 * per online CPU, each with a ring read through libbpf's perf_buffer. */
#ifndef KILN_SAMPLER_SIDEBAND_H
#define KILN_SAMPLER_SIDEBAND_H

#include <stddef.h>
#include <stdint.h>

enum sideband_type {
	SIDEBAND_MMAP = 1,
	SIDEBAND_EXEC,
	SIDEBAND_EXIT,
	SIDEBAND_LOST, /* the kernel dropped records (a full ring): whose, unknown */
};

struct sideband_record {
	enum sideband_type type;
	uint32_t pid; /* the process (tgid) */
	uint64_t time_ns; /* CLOCK_MONOTONIC, as the BPF events' */
	/* SIDEBAND_MMAP: the mapping [start, end) of the file at pgoff
	 * bytes, the file's device (makedev) and inode as the kernel knows
	 * them, and its path as the mapping process saw it (valid during the
	 * call only). */
	uint64_t start, end, pgoff, dev, ino;
	const char *name;
};

struct sideband_stats {
	uint64_t records; /* handed on */
	uint64_t lost; /* dropped by the kernel: a ring was full */
	uint64_t malformed; /* records too short for their type */
	uint64_t unsorted; /* handed on in ring order: more than a read sorts */
};

typedef void (*sideband_fn)(const struct sideband_record *r, void *ctx);

struct sideband;

/* Decodes one perf record of size bytes (its header's size): 1 with *r
 * filled (r->name points into rec, name_len bytes, not NUL-terminated;
 * a LOST record sets *lost, the records it says were dropped), 0 for a
 * record that tells nothing here (a rename, a thread's exit, a fork),
 * -EINVAL when it is too short for its type or its size is not size. */
int sideband__decode(const void *rec, size_t size, struct sideband_record *r, size_t *name_len,
		     uint64_t *lost);

/* Opens the events on the ncpus CPUs of cpus, each with a ring of pages
 * pages (a power of two); fn gets the records. NULL + errno when the
 * kernel refuses (the caller goes on without them). */
struct sideband *sideband__open(const unsigned *cpus, unsigned ncpus, unsigned pages,
				sideband_fn fn, void *ctx);
/* Becomes readable when a ring is half full. */
int sideband__epoll_fd(const struct sideband *sb);
/* Reads every ring and hands its records to fn in time order. The number
 * of records, or -errno. */
int sideband__consume(struct sideband *sb);
void sideband__stats(const struct sideband *sb, struct sideband_stats *out);
/* Bytes of the rings (kernel memory, locked). */
uint64_t sideband__bytes(const struct sideband *sb);
void sideband__free(struct sideband *sb);

#endif
