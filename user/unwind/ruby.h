/* SPDX-License-Identifier: BSD-2-Clause */
/* CRuby processes: which interpreter a process runs, found off the
 * sampling path from the binary it maps (ruby* or libruby*: its symbols,
 * ruby_version, the file name) and checked against the running process
 * before the BPF walker may use it (include/kiln/ruby.h): the VM's main
 * thread and its execution context, the TLS slot of ruby_current_ec
 * against the main thread's own, the frames of that context. A build kiln
 * cannot check is refused, logged once per binary and counted by reason;
 * its stacks keep their native frames. docs/ruby.md describes the path. */
#ifndef KILN_UNWIND_RUBY_H
#define KILN_UNWIND_RUBY_H

#include <stdint.h>

#include "kiln/ruby.h"
#include "proc/proc.h"
#include "unwind/interp_procs.h"

/* Why a Ruby process gets no Ruby frames. Label values: ruby_refusal_names. */
enum ruby_refusal {
	RB_REFUSED_VERSION = 0, /* a version without an offset table (not 3.1) */
	RB_REFUSED_SYMBOLS, /* rb_vm_exec or ruby_current_vm_ptr missing */
	RB_REFUSED_OFFSETS, /* the offsets disagree with the running interpreter */
	RB_REFUSED_THREAD, /* neither the TLS slot nor the fallback checks out
			    * (not glibc, not x86-64) */
	RB_REFUSED_UNREADABLE, /* its memory unreadable (no CAP_SYS_PTRACE, exited) */
	RB_REFUSED_NOT_READY, /* no VM within the process's first re-reads */
	RB_REFUSED_FULL, /* the rb_procs map is full (--unwind-processes) */
	RB_REFUSED_WALKER, /* the kernel did not load the Ruby walker */
	RB_REFUSAL_COUNT
};
extern const char *const ruby_refusal_names[RB_REFUSAL_COUNT];

/* Everything known of one Ruby process: what BPF gets, and what the
 * symbolizer needs to name its instruction sequences. */
struct ruby_info {
	struct kiln_rb_proc bpf;
	char version[16]; /* ruby_version: "3.1.2" */
	/* rb_iseq_constant_body: location.pathobj, .label, .base_label;
	 * insns_info.body, .positions, .size, .succ_index_table; local_iseq;
	 * bytes. */
	uint16_t body_path, body_label, body_base_label, info_body, info_positions, info_size,
		info_succ, body_local_iseq;
	/* A class's instance variables (RClass -> rb_classext_t -> st_table),
	 * and the IDs of __classpath__ and __attached__ learned from Object's
	 * (0: not found, names are not qualified). */
	uint16_t class_ext, ext_iv_tbl;
	uint64_t classpath_id, attached_id;
};

#define RUBY_IVARS_MAX 64 /* instance variables of a class looked at */

/* The instance variables of class klass of pid: up to max (key, value)
 * pairs into kv. Their number, or -errno. */
int ruby__ivars(pid_t pid, const struct ruby_info *info, uint64_t klass, uint64_t (*kv)[2],
		size_t max);

/* The Ruby processes (unwind/interp_procs.h; facts: struct ruby_info).
 * s: the sampler that loads the walker; rb_procs_fd: the walker's
 * rb_procs map; max: its entries. */
struct interp_procs *rubies__new(struct sampler *s, int rb_procs_fd, uint32_t max);

#endif
