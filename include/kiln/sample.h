/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Types shared by bpf/sampler.bpf.c and user space: fixed-width kernel
 * types and fixed arrays only, no libc. */
#ifndef KILN_SAMPLE_H
#define KILN_SAMPLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef KILN_COMM_LEN
#define KILN_COMM_LEN 16
#endif

/* Frames kept per stack: the kernel's PERF_MAX_STACK_DEPTH. */
#ifndef KILN_MAX_STACK_DEPTH
#define KILN_MAX_STACK_DEPTH 127
#endif

/* One sample's aggregation key. `instance` names one process image:
 * a fresh one is allocated on the first sample of a pid and on every exec,
 * so pid reuse and exec never mix two programs under one key. */
struct kiln_sample_key {
	__u32 pid;              /* tgid */
	__u32 instance;
	__u64 kstack;           /* stack id (a hash of the stack), 0: none */
	__u64 ustack;
	__u64 cgroup_id;        /* cgroup v2 id of the sampled task */
	char comm[KILN_COMM_LEN];
};

/* A stack, known by a 64-bit hash of its frames and flags: two stacks
 * share a key only if the hash collides. */
struct kiln_stack {
	__u32 len;
	__u32 flags;            /* KILN_STACK_* */
	__u64 ips[KILN_MAX_STACK_DEPTH]; /* innermost first */
};

/* Samples reach user space through the events ring, beside the lifecycle
 * events (struct kiln_event), as records that start with their type: a
 * sample key with the number of samples it stands for, and a stack, sent
 * by a CPU before the first sample of a generation that uses it. User
 * space adds them up per generation. */
enum kiln_record_type {
	KILN_REC_SAMPLE = 16,
	KILN_REC_STACK = 17,
};

struct kiln_sample_rec {
	__u32 type;             /* KILN_REC_SAMPLE */
	__u32 gen;              /* the generation it counts in */
	struct kiln_sample_key key;
	__u32 count;            /* samples of this key (never 0 in the ring) */
	__u32 sent;             /* in a slot: the key went to the ring at once
				 * (count leaves that sample out); else 0 */
};

/* Each CPU counts its samples by key before they are sent (BPF map
 * sample_counts, per CPU, [generation & 1]): a slot, chosen by the key's
 * hash, counts its key until another key needs it, which sends it to the
 * ring; the drain reads the rest straight from the map and clears them.
 * A hot loop's samples so cost a CPU one slot of 64 bytes each (a cache
 * line's size), and the ring a record a key, not a record a sample. A key
 * whose first sample user space must see at once (interpreter frames,
 * named from the live process) is sent so, and its slot counts the rest. */
#define KILN_SAMPLE_SLOTS 64
struct kiln_sample_counts {
	struct kiln_sample_rec slots[KILN_SAMPLE_SLOTS];        /* count 0: free */
};

/* Sent up to ips[len]: KILN_STACK_REC_BYTES(len) bytes. */
struct kiln_stack_rec {
	__u32 type;             /* KILN_REC_STACK */
	__u32 gen;
	__u64 id;               /* the kstack / ustack of the keys that use it */
	struct kiln_stack stack;
};
#define KILN_STACK_REC_BYTES(len) (24u + (len) * 8u)

/* How a user stack was walked and how the walk ended. */
#define KILN_STACK_TABLES     0x01u /* walked with unwind tables (else frame pointers only) */
#define KILN_STACK_ROOT       0x02u /* reached the thread's root */
#define KILN_STACK_TRUNCATED  0x04u /* depth or walk budget ran out: outer frames missing */
#define KILN_STACK_FP_STEPS   0x08u /* some frames came from frame-pointer steps */
#define KILN_STACK_ERROR      0x10u /* the walk stopped at a frame it could not unwind */

/* Outcome of each program invocation. Exactly one counter per invocation is
 * incremented, so their sum is the number of invocations. */
enum kiln_outcome {
	KILN_SAMPLED = 0,       /* sent to user space in generation gen */
	KILN_SKIP_IDLE,         /* pid 0 and --include-idle not given */
	KILN_SKIP_FILTERED,     /* not a profiled pid (record -p / COMMAND) */
	KILN_SKIP_LATE,         /* after the end of record's window (-d) */
	KILN_DROP_STACK_FULL,   /* user space's stack table of the drain full */
	KILN_DROP_COUNTS_FULL,  /* user space's table of sample keys full */
	KILN_DROP_RING_FULL,    /* the ring full: user space behind */
	KILN_OUTCOME_COUNT,
};

/* Counters outside the per-invocation outcomes. */
enum kiln_event_stat {
	KILN_EV_SENT = 0,       /* lifecycle events written to the ring buffer */
	KILN_EV_DROPPED,        /* ring buffer full */
	KILN_EV_EXEC_USER_SKIPPED, /* samples inside execve whose user registers
				    * still held the replaced program's: kernel
				    * frames only */
	KILN_EV_WAKE_UNLOADED,  /* wakeups of user space by a process sampled a
				 * few times before its tables loaded */
	KILN_EV_WAKE_NAMES,     /* wakeups of user space by a stack with an
				 * interpreter frame's code object new to its
				 * CPU in the generation (key_wakeup) */
	KILN_EV_STAT_COUNT,
};

enum kiln_event_type {
	KILN_EVENT_NEW = 1,     /* first sample of a process not seen before */
	KILN_EVENT_EXEC = 2,
	KILN_EVENT_EXIT = 3,
	KILN_EVENT_MAPS = 4,    /* a walk met a pc outside the process's known mappings */
};

struct kiln_event {
	__u32 type;
	__u32 pid;
	__u32 instance;
	__u32 ppid;
	__u64 start_boottime_ns; /* the process's start, ns since boot (suspend
				  * included): /proc/PID/stat's starttime */
	__u64 cgroup_id;
	__u64 time_ns;          /* when sent, CLOCK_MONOTONIC */
	char comm[KILN_COMM_LEN];        /* the thread's */
	char leader_comm[KILN_COMM_LEN]; /* the process's (its main thread's) */
	__u32 flags;            /* KILN_EVENT_F_* */
	__u32 pad;
	/* KILN_EVENT_NEW (0 in the others): which root directory and which
	 * set of cgroups the process (its main thread) is in, as opaque keys:
	 * equal keys of two live processes mean
	 * the same root, the same cgroups. cgroup_epoch counts the cgroup
	 * migrations since kiln started (as of before the keys were read): a
	 * key stands for the cgroups it stood for only while that is
	 * unchanged. */
	__u64 root_key;
	__u64 cgroup_key;
	__u64 cgroup_epoch;
};

/* KILN_EVENT_NEW: the process has not exec'd since its fork, its parent
 * (ppid) has not either and maps the same program file: it runs the
 * parent's image, whose mappings it has (but for any it made itself). */
#define KILN_EVENT_F_FORKED 1u

/* Values of the pid filter map. */
#define KILN_FILTER_SELF     1  /* profile this process */
#define KILN_FILTER_CHILDREN 2  /* and every process it forks from now on */

#endif
