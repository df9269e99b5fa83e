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

#include "kiln/unwind.h"
#include "proc/proc.h"

struct sampler;

#define INTERP_REFUSALS_MAX 8
#define INTERP_ATTEMPTS_MAX 4 /* the first read and the re-reads at ~50 ms, 250 ms, 1 s */

struct interp_stats {
	uint64_t processes; /* processes walked now */
	uint64_t detected; /* since start */
	uint64_t refused[INTERP_REFUSALS_MAX];
};

#define INTERP_BINARY_MAX 256 /* bytes of a language's facts about a binary */

/* A language: its name in logs, its refusal reasons (label values), the
 * size of its facts (the first bpf_size bytes of which are its BPF map's
 * value, beginning with the u32 instance), and how it recognizes its
 * interpreter (interp_procs__mapped). */
struct interp_kind {
	const char *name;
	const char *const *refusal_names;
	unsigned nrefusals, full; /* full: the reason "its map is full" */
	unsigned walker; /* the reason "the kernel did not load its walker" */
	unsigned prog; /* its walker: KILN_PROG_PY, KILN_PROG_RB */
	unsigned not_ready; /* the reason "not initialized within the tries" */
	/* Reasons from first_runtime on come from the process's memory, which
	 * changes while it starts (the dynamic linker maps a library's data
	 * after its code, the interpreter builds its state): tried again while
	 * tries remain, the last try's reason counted. Those before it come
	 * from the file, and stand. */
	unsigned first_runtime;
	size_t facts_size, bpf_size;
	const char *const *prefixes; /* base names of the files it may be in */
	size_t binary_size; /* <= INTERP_BINARY_MAX */
	/* Reads the file of mapping o into binary (zeroed): true when the
	 * interpreter is in it. */
	bool (*binary)(const struct proc_mapping *o, void *binary);
	/* Checks pid's interpreter in binary into facts (zeroed): 0, -EAGAIN
	 * (try again at the next re-read), or a refusal + 1. */
	int (*detect)(pid_t pid, const void *binary, void *facts);
	void (*detected)(pid_t pid, const void *facts); /* says so (debug log) */
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

/* s: the sampler that loads the language's walker, before the first
 * process's entry is written (sampler__load_walker); map_fd: the walker's
 * map (pid -> facts); max: its entries. NULL + errno. */
struct interp_procs *interp_procs__new(const struct interp_kind *kind, struct sampler *s,
				       int map_fd, uint32_t max);
/* s's mappings were (re)read: a process mapping the language's
 * interpreter is recognized and checked, and its entry written, once; one
 * not initialized yet, or refused for what its memory held, is tried again
 * at its next re-reads (at most INTERP_ATTEMPTS_MAX tries). */
void interp_procs__mapped(struct interp_procs *p, const struct proc_snapshot *s);
void interp_procs__ended(struct interp_procs *p, const struct proc_snapshot *s);
/* Whether a process was tried and is to be tried again (its interpreter
 * not ready yet): its re-reads are due within tens of milliseconds. */
bool interp_procs__pending(const struct interp_procs *p);
/* Whether s maps a file named as the language's interpreter, which it
 * may run (the walker looks for its facts only then). */
bool interp_procs__candidate(const struct interp_procs *p, const struct proc_snapshot *s);
/* The facts of instance, or NULL (not this language, refused, or not yet). */
const void *interp_procs__get(const struct interp_procs *p, uint32_t instance);
void interp_procs__stats(const struct interp_procs *p, struct interp_stats *out);
void interp_procs__free(struct interp_procs *p);

/* Reads len bytes of pid's memory at addr (process_vm_readv). 0 or -errno
 * (-EFAULT for a short read or a NULL address). */
int interp__read(pid_t pid, uint64_t addr, void *buf, size_t len);
int interp__read_u64(pid_t pid, uint64_t addr, uint64_t *v);
/* What a failed read during detection means, as a detect result: an
 * address that cannot be read (not mapped yet, no CAP_SYS_PTRACE, the
 * process gone) unreadable + 1, anything else other + 1. */
int interp__read_failed(int err, unsigned unreadable, unsigned other);

/* The symbols names[0..n) of the file of executable mapping m (.dynsym and
 * .symtab), at their runtime addresses: addr[k] (0: absent), size[k]; for a
 * TLS symbol its offset in the file's TLS block plus one. *bias (may be
 * NULL): the file's load bias. 0 or -errno. */
int interp__symbols(const struct proc_mapping *m, const char *const *names, size_t n,
		    uint64_t *addr, uint64_t *size, uint64_t *bias);

/* The base name of path starts with one of prefixes (NULL-terminated). */
bool interp__named(const char *path, const char *const *prefixes);

#endif
