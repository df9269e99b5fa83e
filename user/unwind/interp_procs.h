/* SPDX-License-Identifier: BSD-2-Clause */
/* The processes of one interpreter language (unwind/python.c,
 * unwind/ruby.c) kiln walks interpreter frames of: per process instance,
 * whether it is being detected (pending, with a few tries), checked and
 * written to the walker's BPF map, or refused; refusals logged once per
 * binary and counted by reason. Also what both languages read with:
 * process_vm_readv, and the symbols of the interpreter's binary. */
#ifndef KILN_UNWIND_INTERP_PROCS_H
#define KILN_UNWIND_INTERP_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/proc.h"

#define INTERP_REFUSALS_MAX 8
#define INTERP_ATTEMPTS_MAX 4 /* the first read and the re-reads at ~50 ms, 250 ms, 1 s */

struct interp_stats {
	uint64_t processes; /* processes walked now */
	uint64_t detected; /* since start */
	uint64_t refused[INTERP_REFUSALS_MAX];
};

/* A language: its name in logs, its refusal reasons (label values), the
 * size of its facts (the first bpf_size bytes of which are its BPF map's
 * value, beginning with the u32 instance). */
struct interp_kind {
	const char *name;
	const char *const *refusal_names;
	unsigned nrefusals, full; /* full: the reason "its map is full" */
	size_t facts_size, bpf_size;
};

struct interp_proc {
	uint32_t instance;
	pid_t pid;
	int state; /* INTERP_PENDING, INTERP_OK, INTERP_REFUSED */
	int attempts;
	void *facts;
};
enum { INTERP_PENDING = 0, INTERP_OK, INTERP_REFUSED };

struct interp_procs;

/* map_fd: the walker's map (pid -> facts); max: its entries. NULL + errno. */
struct interp_procs *interp_procs__new(const struct interp_kind *kind, int map_fd, uint32_t max);
/* The pending entry of s's instance (created), or NULL: s ended, it was
 * decided already, or out of memory. */
struct interp_proc *interp_procs__pending(struct interp_procs *p, const struct proc_snapshot *s);
/* Another try later: false (and the process refused without a log, or
 * with reason not_ready >= 0) once INTERP_ATTEMPTS_MAX were made. */
bool interp_procs__retry(struct interp_procs *p, struct interp_proc *e, int not_ready,
			 const struct binary *bin);
void interp_procs__refuse(struct interp_procs *p, struct interp_proc *e, unsigned why,
			  const struct binary *bin);
/* e's facts are checked: written to the map (refused "full" when it is). */
int interp_procs__accept(struct interp_procs *p, struct interp_proc *e, const struct binary *bin);
void interp_procs__ended(struct interp_procs *p, const struct proc_snapshot *s);
/* The facts of instance, or NULL (not this language, refused, or not yet). */
const void *interp_procs__get(const struct interp_procs *p, uint32_t instance);
void interp_procs__stats(const struct interp_procs *p, struct interp_stats *out);
void interp_procs__free(struct interp_procs *p);

/* Reads len bytes of pid's memory at addr (process_vm_readv). 0 or -errno
 * (-EFAULT for a short read or a NULL address). */
int interp__read(pid_t pid, uint64_t addr, void *buf, size_t len);
int interp__read_u64(pid_t pid, uint64_t addr, uint64_t *v);

/* The symbols names[0..n) of the file of executable mapping m (.dynsym and
 * .symtab), at their runtime addresses: addr[k] (0: absent), size[k]; for a
 * TLS symbol its offset in the file's TLS block plus one. *bias (may be
 * NULL): the file's load bias. 0 or -errno. */
int interp__symbols(const struct proc_mapping *m, const char *const *names, size_t n,
		    uint64_t *addr, uint64_t *size, uint64_t *bias);

/* The base name of path starts with one of prefixes (NULL-terminated). */
bool interp__named(const char *path, const char *const *prefixes);

#endif
