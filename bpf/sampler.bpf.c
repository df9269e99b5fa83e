// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* kiln sampler: one cpu-clock perf event per CPU runs kiln_sample, which
 * counts {process, comm, cgroup, kernel stack, user stack} into the counts
 * map of the generation user space selected. Tracepoints on fork, exec and
 * exit keep the process lifecycle visible to user space (ring buffer).
 *
 * Two generations of counts and stack maps: user space flips `gen`, waits
 * for in-flight programs (an RCU grace period), then drains and clears the
 * old generation while this program fills the other. Every invocation ends
 * in exactly one outcome counter of its generation. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "kiln/sample.h"

#define PF_KTHREAD 0x00200000
#define EEXIST 17
#define ENOMEM 12
#define EFAULT 14

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load. */
const volatile bool include_idle = false;
const volatile bool filter_enabled = false;

/* Generation selected by user space (bit 0), and the instance counter. */
volatile __u32 gen = 0;
/* record -d: samples after this bpf_ktime_get_ns() are not counted, so the
 * window is exact however late user space stops the perf events. 0: none. */
volatile __u64 window_end_ns = 0;
__u32 next_instance = 0;

/* max_entries of every sized map is set by user space before load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct kiln_sample_key);
	__type(value, __u64);
	__uint(max_entries, 1);
} counts0 SEC(".maps"), counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, KILN_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 1);
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

/* Outcome counters, [gen * KILN_OUTCOME_COUNT + outcome]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2 * KILN_OUTCOME_COUNT);
} outcomes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, KILN_EV_STAT_COUNT);
} event_stats SEC(".maps");

/* tgid -> instance of every process sampled since its last exec. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} instances SEC(".maps");

/* tgid -> KILN_FILTER_* flags; consulted only when filter_enabled. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1);
} filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1);
} events SEC(".maps");

static __always_inline void count_outcome(__u32 g, __u32 outcome)
{
	__u32 idx = g * KILN_OUTCOME_COUNT + outcome;
	__u64 *v = bpf_map_lookup_elem(&outcomes, &idx);

	if (v)
		*v += 1;
}

static __always_inline void count_event(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&event_stats, &stat);

	if (v)
		*v += 1;
}

static __always_inline void send_event(__u32 type, struct task_struct *task,
				       __u32 instance)
{
	struct kiln_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_event(KILN_EV_DROPPED);
		return;
	}
	e->type = type;
	e->pid = BPF_CORE_READ(task, tgid);
	e->instance = instance;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->start_ns = BPF_CORE_READ(task, group_leader, start_time);
	e->cgroup_id = bpf_get_current_cgroup_id();
	e->time_ns = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	bpf_ringbuf_submit(e, 0);
	count_event(KILN_EV_SENT);
}

/* The instance of the sampled process; the first sample of a process (or
 * the first after its exec) allocates one and tells user space. */
static __always_inline __u32 instance_of(__u32 tgid, struct task_struct *task)
{
	__u32 *found = bpf_map_lookup_elem(&instances, &tgid);
	__u32 fresh;

	if (found)
		return *found;
	fresh = __sync_fetch_and_add(&next_instance, 1) + 1;
	if (bpf_map_update_elem(&instances, &tgid, &fresh, BPF_NOEXIST) == 0) {
		send_event(KILN_EVENT_NEW, task, fresh);
		return fresh;
	}
	/* Another CPU registered this process first: use its instance. */
	found = bpf_map_lookup_elem(&instances, &tgid);
	return found ? *found : fresh;
}

/* True while execve replaces the program: the new mm is installed (and the
 * new comm set) but the saved user registers still hold the old program's
 * pc and stack, which mean nothing in the new address space. A new mm has
 * end_code zero until load_elf_binary, its segments mapped, sets it just
 * before start_thread. (mm->start_stack is set earlier, by
 * setup_arg_pages, and so tells too little.) */
static __always_inline bool user_regs_stale(struct task_struct *task)
{
	return BPF_CORE_READ(task, mm, end_code) == 0;
}

/* bpf_get_stackid result -> drop outcome, or 0 when usable. -EFAULT means
 * "no frames of that kind" (a sample in user mode has no kernel stack). */
static __always_inline __u32 stack_drop(long id)
{
	if (id >= 0 || id == -EFAULT)
		return 0;
	if (id == -EEXIST)
		return KILN_DROP_STACK_COLLISION;
	if (id == -ENOMEM)
		return KILN_DROP_STACK_FULL;
	return KILN_DROP_STACK_ERROR;
}

SEC("perf_event")
int kiln_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u32 g = gen & 1, drop;
	struct task_struct *task = bpf_get_current_task_btf();
	struct kiln_sample_key key = {};
	void *stacks = g ? (void *)&stacks1 : (void *)&stacks0;
	void *counts = g ? (void *)&counts1 : (void *)&counts0;
	__u64 one = 1, *val;
	long id;

	if (tid == 0 && !include_idle) {
		count_outcome(g, KILN_SKIP_IDLE);
		return 0;
	}
	if (filter_enabled && !bpf_map_lookup_elem(&filter, &tgid)) {
		count_outcome(g, KILN_SKIP_FILTERED);
		return 0;
	}
	if (window_end_ns && bpf_ktime_get_ns() > window_end_ns) {
		count_outcome(g, KILN_SKIP_LATE);
		return 0;
	}

	key.pid = tgid;
	key.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(&key.comm, sizeof(key.comm));

	id = bpf_get_stackid(ctx, stacks, 0);
	drop = stack_drop(id);
	if (drop) {
		count_outcome(g, drop);
		return 0;
	}
	key.kstack = id < 0 ? -1 : id;

	key.ustack = -1;
	if (task->flags & PF_KTHREAD || tid == 0) {
		/* no user stack */
	} else if (user_regs_stale(task)) {
		count_event(KILN_EV_EXEC_USER_SKIPPED);
	} else {
		id = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
		drop = stack_drop(id);
		if (drop) {
			count_outcome(g, drop);
			return 0;
		}
		key.ustack = id < 0 ? -1 : id;
	}
	/* After the stacks: a dropped sample must not announce a process. */
	key.instance = tid == 0 ? 0 : instance_of(tgid, task);

	val = bpf_map_lookup_elem(counts, &key);
	if (!val) {
		if (bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST) == 0) {
			count_outcome(g, KILN_SAMPLED);
			return 0;
		}
		/* Lost a race with another CPU inserting the same key, or full. */
		val = bpf_map_lookup_elem(counts, &key);
		if (!val) {
			count_outcome(g, KILN_DROP_COUNTS_FULL);
			return 0;
		}
	}
	__sync_fetch_and_add(val, 1);
	count_outcome(g, KILN_SAMPLED);
	return 0;
}

/* A profiled process's children are profiled too (record -- COMMAND). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kiln_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 *flags, inherited;

	if (!filter_enabled || ptgid == ctgid)
		return 0;
	flags = bpf_map_lookup_elem(&filter, &ptgid);
	if (!flags || !(*flags & KILN_FILTER_CHILDREN))
		return 0;
	inherited = *flags;
	bpf_map_update_elem(&filter, &ctgid, &inherited, BPF_ANY);
	return 0;
}

/* An exec ends the process image: the next sample gets a new instance
 * (and a fresh snapshot of the new program's mappings). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(kiln_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	__u32 *found = bpf_map_lookup_elem(&instances, &tgid);

	if (!found)
		return 0;
	send_event(KILN_EVENT_EXEC, p, *found);
	bpf_map_delete_elem(&instances, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(kiln_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	__u32 *found;

	/* Only the last thread of the group ends the process. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (filter_enabled)
		bpf_map_delete_elem(&filter, &tgid);
	found = bpf_map_lookup_elem(&instances, &tgid);
	if (!found)
		return 0;
	send_event(KILN_EVENT_EXIT, p, *found);
	bpf_map_delete_elem(&instances, &tgid);
	return 0;
}
