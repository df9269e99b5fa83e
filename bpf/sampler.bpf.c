// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* kiln sampler: one cpu-clock perf event per CPU runs kiln_sample, which
 * counts {process, comm, cgroup, kernel stack, user stack} into the counts
 * map of the generation user space selected. Tracepoints on fork, exec and
 * exit keep the process lifecycle visible to user space (ring buffer).
 *
 * User stacks of processes user space loaded unwind tables for (proc_maps)
 * are walked here, from the tables built out of each file's CFI: kiln_sample
 * sets up the walk and tail-calls the walker, which unwinds frames until
 * the stack ends (kiln_walk_loop, with bpf_loop) or WALK_FRAMES of them
 * (kiln_walk, unrolled, for kernels before 5.17) and tail-calls itself for
 * more. Other processes' user
 * stacks come from the kernel's frame-pointer walk (bpf_get_stack).
 * Stacks are stored by a 64-bit hash of their frames, so two stacks never
 * share a slot; only a full map drops one.
 *
 * Two generations of counts and stack maps: user space counts `gen` up
 * (its bit 0 selects the maps), waits
 * for in-flight programs (an RCU grace period), then drains and clears the
 * old generation while this program fills the other. Every invocation ends
 * in exactly one outcome counter of its generation. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "kiln/counters.h"
#include "kiln/sample.h"
#include "kiln/unwind.h"
#include "kiln/python.h"
#include "kiln/ruby.h"

#define PF_KTHREAD 0x00200000
#define EEXIST 17
#define ENOMEM 12
#define EFAULT 14
#define E2BIG 7

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load. */
const volatile bool include_idle = false;
const volatile bool filter_enabled = false;
/* A new process's event wakes user space (--wake-on-new-process, or a
 * filter), see send_event. */
const volatile bool wake_on_new = false;
/* A process sampled this many times before its tables loaded wakes user
 * space to load them (0: never), see unloaded_wakeup. */
const volatile __u32 wake_unloaded_after = 0;
/* Bits of an instance id that hold the CPU it was made on: enough for
 * every possible CPU (see new_instance_id). */
const volatile __u32 instance_cpu_bits = 0;
/* Early walks (include/kiln/unwind.h; only kiln_walk_loop walks them),
 * and the kernel's page size as a shift. */
const volatile bool early_walks = false;
const volatile __u32 page_shift = 12;

/* Generation selected by user space (bit 0: which maps; user space counts
 * it up at every drain). */
volatile __u32 gen = 0;
/* record -d: samples after this bpf_ktime_get_ns() are not counted, so the
 * window is exact however late user space stops the perf events. 0: none. */
volatile __u64 window_end_ns = 0;
/* When unloaded_wakeup last woke user space (bpf_ktime_get_ns), and how
 * often it may: a host starting many busy programs at once wakes kiln at
 * most 20 times a second. */
__u64 unloaded_wake_ns = 0;
#define UNLOADED_WAKE_GAP_NS (50 * 1000000ull)
/* Likewise for key_wakeup: a new key of a stack with interpreter frames;
 * user space also sets it when it will read the ring within the gap
 * anyway (sampler__reading_soon). */
__u64 key_wake_ns = 0;
#define KEY_WAKE_GAP_NS (100 * 1000000ull)
/* Tasks moved between cgroups (or cgroups renamed) since load: user space
 * reads it, and each event carries it (struct kiln_event). */
volatile __u64 cgroup_epoch = 0;
/* Counted up by user space whenever a loaded unwind table goes (its slot
 * and rows may then hold another file's): the walker's row memos forget
 * every row remembered under an older count. */
volatile __u32 tables_gen = 0;
/* Counted up by user space after it rewrites the proc_maps entry of a
 * process image the walkers may have read (new mappings, a flag cleared):
 * each CPU's process and mapping memos forget what they took from older
 * entries. A new image's first entry, and the entries of ended processes,
 * need no count: nothing remembered can match them. */
volatile __u32 maps_gen = 0;

/* max_entries of every sized map is set by user space before load. */

/* Each CPU's samples counted by key, [generation & 1]
 * (include/kiln/sample.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct kiln_sample_counts);
	__uint(max_entries, 2);
} sample_counts SEC(".maps");

/* Every counter of the programs (include/kiln/counters.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct kiln_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* When this CPU's sample began (bpf_ktime_get_ns): the program that ends
 * it, the first or one it tail-called, adds the time since to
 * kiln_counters.run_ns. The kernel's run-time statistics would give the
 * same figure, but only switched on for every BPF program of the host. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} run_start SEC(".maps");

/* A process image as the sampler knows it: its instance, and the address
 * space it runs in. execve installs a new mm before the exec tracepoint
 * runs, and a new mm never has the address of the one it replaces (both
 * are alive at the switch): an instance whose mm is not the task's is the
 * program before the exec. An mm's address names only the image running
 * now, though: a second exec of the process may be given the address the
 * first one freed (sh -c '...; exec chroot DIR prog' does, often). What
 * outlives an image (the walker's memos, kiln_mmap's mappings, the seen
 * image of a proc_maps entry) is keyed by image_exec_id instead. */
struct instance {
	__u32 id;
	__u16 unloaded;         /* samples walked before its tables loaded */
	__u16 woken;            /* and one of them woke user space */
	__u64 mm;
};

/* Each CPU's count of the instance ids it made. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} instance_seqs SEC(".maps");

/* tgid -> instance of every process sampled since its last exec. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct instance);
	__uint(max_entries, 1);
} instances SEC(".maps");

/* tgid -> KILN_FILTER_* flags; consulted only when filter_enabled. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1);
} filter SEC(".maps");

/* Lifecycle events, samples and stacks (include/kiln/sample.h). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1);
} events SEC(".maps");

/* Samples do not wake user space, which reads the ring at least every
 * second (100 ms with a filter or interpreters), unless it holds more than
 * this many bytes. */
const volatile __u64 ring_wakeup_bytes = 1;

#define STACK_HASH_SEED 0x9e3779b97f4a7c15ull

static __always_inline __u64 hash_mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static __always_inline struct kiln_counters *counters_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* A sample begins: its start, and one run more. (The clock is read
 * first and last: the cache misses of the lookups, which a sample at
 * 97 Hz meets, are the program's time too.) */
static __always_inline void run_begin(void)
{
	__u64 now = bpf_ktime_get_ns();
	struct kiln_counters *c = counters_here();
	__u32 zero = 0;
	__u64 *start = bpf_map_lookup_elem(&run_start, &zero);

	if (start)
		*start = now;
	if (c)
		c->runs += 1;
}

/* The sample ends in this program (it made no tail call, or one that
 * failed): its time goes to run_ns. */
static __always_inline int run_end(int ret)
{
	struct kiln_counters *c = counters_here();
	__u32 zero = 0;
	__u64 *start = bpf_map_lookup_elem(&run_start, &zero);

	if (start && c)
		c->run_ns += bpf_ktime_get_ns() - *start;
	return ret;
}

static __always_inline void count_outcome(__u32 g, __u32 outcome)
{
	struct kiln_counters *c = counters_here();

	if (c && outcome < KILN_OUTCOME_COUNT)
		c->outcomes[g & 1][outcome] += 1;
}

static __always_inline void count_event(__u32 stat)
{
	struct kiln_counters *c = counters_here();

	if (c && stat < KILN_EV_STAT_COUNT)
		c->events[stat] += 1;
}

/* The exec that made the image task runs, counted in its process (with
 * the process's start time, a process image no other ever matches): each
 * exec counts its self_exec_id up, before the new program's files are
 * mapped, and a clone copies it, so every thread of an image has the
 * same. */
static __always_inline __u64 image_exec_id(struct task_struct *task)
{
	return BPF_CORE_READ(task, self_exec_id);
}

/* KILN_EVENT_F_FORKED when task's process runs its parent's image: it
 * has not exec'd since the fork (its exec count is the one its parent had
 * then), its parent has not either, and both map the same program file
 * (which a reaper adopting an orphan, its count equal by chance, does not). */
static __always_inline __u32 fork_flags(struct task_struct *task)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	struct task_struct *parent = BPF_CORE_READ(leader, real_parent);
	__u64 at_fork = BPF_CORE_READ(leader, parent_exec_id);

	if (BPF_CORE_READ(leader, self_exec_id) != at_fork ||
	    BPF_CORE_READ(parent, self_exec_id) != at_fork)
		return 0;
	return BPF_CORE_READ(leader, mm, exe_file) == BPF_CORE_READ(parent, mm, exe_file) ?
		       KILN_EVENT_F_FORKED : 0;
}

/* Hashed kernel addresses: the main thread's root (its dentry and mount)
 * and css_set, which are what /proc/PID/root and /proc/PID/cgroup show;
 * for a new process's event only, the one user space snapshots (the exec
 * and exit tracepoints are spared the reads). The epoch first: a
 * migration moves the task, then counts. */
static __always_inline void set_identity_keys(struct kiln_event *e, struct task_struct *task)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	__u64 dentry, mnt;

	e->cgroup_epoch = cgroup_epoch;
	dentry = (__u64)BPF_CORE_READ(leader, fs, root.dentry);
	mnt = (__u64)BPF_CORE_READ(leader, fs, root.mnt);
	e->root_key = dentry ? hash_mix(hash_mix(STACK_HASH_SEED, dentry), mnt) : 0;
	e->cgroup_key = hash_mix(STACK_HASH_SEED, (__u64)BPF_CORE_READ(leader, cgroups));
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
	e->start_boottime_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	e->cgroup_id = bpf_get_current_cgroup_id();
	e->time_ns = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	BPF_CORE_READ_STR_INTO(&e->leader_comm, task, group_leader, comm);
	e->flags = type == KILN_EVENT_NEW ? fork_flags(task) : 0;
	e->pad = 0;
	e->root_key = e->cgroup_key = e->cgroup_epoch = 0;
	if (type == KILN_EVENT_NEW)
		set_identity_keys(e, task);
	/* An exec's or exit's event waits for the next read of the ring,
	 * which reads it in order. So does a new process's unless
	 * wake_on_new: its tables then load at that read, or once a few of
	 * its samples were walked by frame pointers (unloaded_wakeup). A
	 * wakeup here cost about 12 us of this program's time (irq_work's
	 * self-IPI, a VM exit) and 30 us of user space's, at every new
	 * process of a busy node. The processes a filter names (record --
	 * COMMAND, -p) are few and each one is the point: woken for. (The
	 * default wakes only a consumer that has read up to this record,
	 * which one waiting behind a quiet record has not: forced.) */
	bpf_ringbuf_submit(e, type == KILN_EVENT_NEW && wake_on_new ? BPF_RB_FORCE_WAKEUP :
								      BPF_RB_NO_WAKEUP);
	count_event(KILN_EV_SENT);
}

/* A new instance id, never 0, unique among those in use: this CPU's own
 * count above the CPU's number (2^31 ids a CPU on a 2-CPU host, 2^24 on
 * one of 256). Kernels before 5.12 have no atomic fetch-and-add, whose
 * instruction they refuse even where it cannot run; instance_of runs only
 * in the sampling program, which never interrupts itself on a CPU, so a
 * CPU's count needs no atomic. */
static __always_inline __u32 new_instance_id(void)
{
	__u32 zero = 0, *seq, id;

	seq = bpf_map_lookup_elem(&instance_seqs, &zero);
	if (!seq)
		return 0;
	id = ++*seq << instance_cpu_bits;
	if (!id)                /* the count wrapped */
		id = ++*seq << instance_cpu_bits;
	return id | (bpf_get_smp_processor_id() & ((1u << instance_cpu_bits) - 1));
}

/* The instance of the sampled process; the first sample of a process (or
 * the first after its exec) allocates one and tells user space. Not while
 * execve builds the new image (end_code still zero): the process's name
 * may still be the old program's then, and nothing of the new is mapped;
 * such a sample has kernel frames only, under instance 0 (none).
 * (task's fields here, in user_regs_stale and in kiln_sample are read
 * with BPF_CORE_READ, not loaded directly: on newer kernels (6.5 and
 * later at least; not 6.2 and before) the verifier looks up each direct
 * load through a trusted task pointer by name in the kernel's BTF, in
 * every state it visits, and this code is in every walker: about 20 ms of
 * each start-up.) */
static __always_inline __u32 instance_of(__u32 tgid, struct task_struct *task)
{
	struct instance *found = bpf_map_lookup_elem(&instances, &tgid);
	struct instance fresh = {};

	if (found)
		return found->id;
	if (BPF_CORE_READ(task, mm, end_code) == 0)
		return 0;
	fresh.mm = (__u64)BPF_CORE_READ(task, mm);
	fresh.id = new_instance_id();
	if (!fresh.id)
		return 0;
	if (bpf_map_update_elem(&instances, &tgid, &fresh, BPF_NOEXIST) == 0) {
		send_event(KILN_EVENT_NEW, task, fresh.id);
		return fresh.id;
	}
	/* Another CPU registered this process first: use its instance. */
	found = bpf_map_lookup_elem(&instances, &tgid);
	return found ? found->id : fresh.id;
}

/* True while execve replaces the program, when the saved user registers
 * mean nothing to the process image the sample will be counted under:
 * - the new mm is installed (and the new comm set) but its segments are
 *   not mapped yet: the registers still hold the old program's pc and
 *   stack. A new mm has end_code zero until load_elf_binary, its segments
 *   mapped, sets it just before start_thread (mm->start_stack is set
 *   earlier, by setup_arg_pages, and so tells too little);
 * - the new program's registers are set, but the exec tracepoint that
 *   ends the old instance has not run yet (or is running, interrupted by
 *   this sample): the instance is the old program's, its mm not the
 *   task's.
 * Both happen inside execve: never to a sample that interrupted user mode
 * (the caller's check spares most samples the mm's cold line). */
static __always_inline bool user_regs_stale(struct task_struct *task, __u32 tgid)
{
	struct instance *found = bpf_map_lookup_elem(&instances, &tgid);

	return BPF_CORE_READ(task, mm, end_code) == 0 ||
	       (found && found->mm != (__u64)BPF_CORE_READ(task, mm));
}

/* ---- unwinding with tables ---- */

#ifdef __TARGET_ARCH_arm64
#define WALK_FRAMES 6           /* frames per kiln_walk run */
#else
#define WALK_FRAMES 8
#endif
/* Tail calls a walk may make (the kernel allows 33); WALK_FRAMES x (1 +
 * WALK_TAIL_CALLS) must cover KILN_MAX_STACK_DEPTH. */
#define WALK_TAIL_CALLS 28
#define ROW_SEARCH_STEPS 13     /* 2^13 > KILN_ROW_PAGE_ROWS, the rows of a page */
#define MAP_SEARCH_STEPS 8      /* 2^8 > KILN_PROC_MAPS_MAX */
#define FP_MAX_SPAN (8u << 20)  /* a sane frame pointer lies within 8 MiB above sp */
/* The kernel stack of a task, where its user registers are saved on entry;
 * used only on kernels without bpf_task_pt_regs (before 5.15). */
#define KERNEL_THREAD_SIZE (16u << 10)

/* Interpreter walk states (struct walk's it_state), and what the walker
 * made of the eval-loop frame it was handed (it_replaced). */
enum { IT_UNSTARTED = 0, IT_ACTIVE = 1, IT_OFF = 2 };
enum { IT_NOT_HANDED = 0, IT_REPLACED = 1, IT_KEPT = 2 };
/* Bytes of a frame or code object read at once (every offset the walkers
 * use lies below IT_READ - 8), and the scratch they are read into:
 * offsets are masked with IT_OFF_MASK, so every access stays inside. */
#define IT_READ 80
#define IT_OFF_MASK 0x7f
#define IT_SCRATCH (IT_OFF_MASK + 1 + 8)

#define RECENT_STACKS 64
#define RECENT_CODES 256
#define CODE_WAYS 4     /* codes[] in sets of 4, by the hash's low bits */
_Static_assert(CODE_WAYS == 4 && RECENT_CODES % CODE_WAYS == 0 &&
	       (RECENT_CODES & (RECENT_CODES - 1)) == 0, "code_seen reads a set of 4");

/* Rows this CPU looked up last, by table slot and offset (direct-mapped):
 * a hot loop's pcs and its callers' return addresses recur from sample to
 * sample, and a remembered row spares the table search and the rule's
 * lookup, whose memory a busy host has evicted (TLB and cache) between
 * two samples 10 ms apart: the walk of make bench's load took a third
 * less time, Debian's python3, ruby and perl a fifth (75-89 % of rows
 * remembered). A row is valid while key matches and gen is tables_gen:
 * rules never change once interned, tables only go. */
#define ROW_MEMO 256
#define ROW_MEMO_SHIFT 56 /* 64 - log2(ROW_MEMO) */
#define ROW_MEMO_USED (1ull << 63) /* in key: an entry written (slot < 2^13) */
struct row_memo {
	__u64 key; /* ROW_MEMO_USED | slot << 32 | offset */
	__u32 gen; /* tables_gen when written */
	__u32 rule; /* the row's rule word (rule index or command) */
	struct kiln_unwind_rule body; /* the rule (when not a command) */
};

/* Processes and mappings this CPU walked last (direct-mapped; valid while
 * gen is maps_gen): the next sample of the same process image needs no
 * proc_maps lookup before its walk, and a frame in a remembered mapping
 * no search of the process's mappings, so a sample of a known process
 * reads nothing of its entry, 4 KiB of vmalloc'd memory a busy host
 * evicts (TLB and cache) between two samples. */
#define PROC_MEMO 8
struct proc_memo {
	__u64 exec, start;      /* the image: image_exec_id, its leader's start time */
	__u32 tgid, instance;   /* instance 0: unused */
	__u32 flags, gen;       /* the entry's KILN_PROC_*, maps_gen then */
};
#define MAP_MEMO 32
#define MAP_MEMO_SHIFT 21       /* a mapping is remembered per 2 MiB of it */
struct map_memo {
	__u64 start, end, bias; /* as the entry's struct kiln_exec_map */
	__u32 instance, slot;   /* whose entry; instance 0: unused */
	__u32 gen, pad;
};

/* Per-CPU state of one sample while its user stack is walked. What every
 * sample reads or writes comes first, together: at 97 Hz each cache line
 * (and page) of it is found cold. */
struct walk {
	struct kiln_sample_rec rec;     /* the sample's record */
	__u64 pc, sp, fp;
	__u64 lr;               /* arm64: x30 of the interrupted frame */
	__u64 hash;             /* of the frames walked so far (hash_mix) */
	__u32 gen;
	__u32 tail_calls;
	__u32 pc_is_ra;         /* pc is a return address: look up pc - 1 */
	__u32 lr_known;         /* lr is this frame's x30: the first frame, or
				 * the one a signal interrupted */
	__u32 maps_pid;         /* whose proc_maps the walk reads: the process's,
				 * or its parent's (tables_instance) */
	__u32 map_probe;        /* find_map's index, passed through memory */
	__u32 maps_instance;    /* the instance of that entry; 0: early walk */
	__u32 map_hits;         /* frames of this walk in remembered mappings */
	/* Frames of this walk whose row was remembered, unwound by a row,
	 * and by frame-pointer steps: counted once, when the walk is sent */
	__u32 memo_hits, table_frames, fp_frames;
	__u32 recent_gen;       /* the generation of recent[] */
	/* An early walk: the last mapping it found among the process's
	 * early_maps, [early_start, early_end) (0, 0: none) */
	__u64 early_start, early_end, early_bias;
	__u32 early, early_slot;
	/* The interpreter walk (kiln_py, kiln_rb), for the process's language
	 * it_lang: the next interpreter frame to emit (Ruby: and where its
	 * control frames end), IT_* state, frames emitted, the process's
	 * instance its facts were checked against, it_emitted when the current
	 * call's frames began, and whether the native frame at pc was
	 * replaced by interpreter frames (unwound, not recorded) or the walk
	 * is appending the frames left at its end. it_new_code: the walk
	 * emitted a code object not in codes[] (see there). */
	__u64 it_frame, it_end, it_eval_start, it_eval_len;
	__u32 it_state, it_emitted, it_instance, it_call_start, it_lang;
	__u8 it_replaced, it_leftover, it_pending, it_new_code;
	struct kiln_stack_rec srec;     /* the stack being built, as a record */
	__u8 scratch[IT_SCRATCH];
	struct kiln_early_maps early_maps;      /* the process's, copied */
	struct row_memo memo[ROW_MEMO];
	struct proc_memo procs[PROC_MEMO];
	struct map_memo maps[MAP_MEMO];
	/* Hashes of stacks this CPU stored in generation recent_gen (by the
	 * hash's low bits; 0: none; a hash is never 0). */
	__u64 recent[RECENT_STACKS];
	/* The interpreter frames' code objects this CPU emitted, hashed with
	 * the process's instance, a Ruby frame's method entry and the
	 * generation (so none of an earlier one matches), in sets of
	 * CODE_WAYS by the hash's low bits, newest first: a stack with one
	 * not here may hold a name user space has not read (key_wakeup). */
	__u64 codes[RECENT_CODES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct walk);
	__uint(max_entries, 1);
} walks SEC(".maps");

/* The rows in chunks of KILN_ROWS_CHUNK elements (include/kiln/unwind.h),
 * each created by user space when the tables first need it, so the
 * kernel memory grows with the tables up to --unwind-memory. User space
 * sizes the chunks (the inner map it gives libbpf) and the count. */
struct rows_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(union kiln_row_pair));
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__type(key, __u32);
	__uint(max_entries, 1);
	__array(values, struct rows_chunk);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct kiln_unwind_rule);
	__uint(max_entries, KILN_UNWIND_RULES);
	__uint(map_flags, BPF_F_MMAPABLE);
} unwind_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct kiln_exe_table);
	__uint(max_entries, KILN_UNWIND_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
} exe_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct kiln_proc_maps);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} proc_maps SEC(".maps");

/* Early walks (include/kiln/unwind.h): sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct kiln_file_key);
	__type(value, struct kiln_file_table);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} file_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct kiln_early_maps);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} early_maps SEC(".maps");

/* Never written: a new early_maps entry is a copy of these zeros (too
 * large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct kiln_early_maps);
	__uint(max_entries, 1);
} early_zero SEC(".maps");

/* pid -> the facts of a Python process (user/unwind/python.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct kiln_py_proc);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} py_procs SEC(".maps");

/* pid -> the facts of a Ruby process (user/unwind/ruby.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct kiln_rb_proc);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} rb_procs SEC(".maps");

/* The walker (kiln_walk or kiln_walk_loop) and the interpreter walkers,
 * for tail calls (the walk continues in a fresh run of any; KILN_PROG_PY +
 * lang is a language's); user space fills it (KILN_PROG_*,
 * include/kiln/unwind.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, KILN_PROG_COUNT);
	__type(key, __u32);
	__type(value, __u32);
} walk_progs SEC(".maps");

static __always_inline void count_unwind_n(__u32 stat, __u64 n)
{
	struct kiln_counters *c = counters_here();

	if (c && stat < KILN_UW_STAT_COUNT)
		c->unwind[stat] += n;
}

static __always_inline void count_unwind(__u32 stat)
{
	count_unwind_n(stat, 1);
}

static __always_inline void count_interp(__u32 lang, __u32 stat)
{
	struct kiln_counters *c = counters_here();

	if (c && lang < KILN_LANG_COUNT && stat < KILN_INTERP_STAT_COUNT)
		c->interp[lang][stat] += 1;
}

/* A stack's key: its frames from STACK_HASH_SEED on, then its flags; never
 * 0 (no stack). */
static __always_inline __u64 hash_final(__u64 h, __u32 flags)
{
	h = hash_mix(h, flags);
	return h ? h : 1;
}

struct stack_hashing {
	const struct kiln_stack *st;
	__u64 h;
};

/* Mixes frame i into the hash; 1: the stack ends before it. */
static long hash_frame_cb(__u32 i, void *data)
{
	struct stack_hashing *sh = data;

	if (i >= sh->st->len || i >= KILN_MAX_STACK_DEPTH)
		return 1;
	sh->h = hash_mix(sh->h, sh->st->ips[i]);
	return 0;
}

/* Where the kernel has bpf_loop the frames are mixed by a callback, which
 * the verifier checks once: the bounded loop made it check up to 127
 * frames for each stack hashed, three quarters of kiln_sample's start-up
 * CPU. A call a frame costs little here: only kernel stacks and
 * frame-pointer stacks are hashed so (a walked stack is hashed along its
 * walk). */
static __always_inline __u64 stack_hash(const struct kiln_stack *st, bool loop)
{
	struct stack_hashing sh = { st, STACK_HASH_SEED };

	if (loop)
		bpf_loop(KILN_MAX_STACK_DEPTH, hash_frame_cb, &sh, 0);
	else
		for (__u32 i = 0; i < KILN_MAX_STACK_DEPTH; i++) {
			if (i >= st->len)
				break;
			sh.h = hash_mix(sh.h, st->ips[i]);
		}
	return hash_final(sh.h, st->flags);
}

/* Wakes user space only when the ring fills: it reads the ring often. */
static __always_inline __u64 ring_wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ring_wakeup_bytes ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Sends the stack in w->srec under its hash, unless this CPU sent it in
 * this generation already (w->recent: a hot loop's few stacks are sent
 * once a drain, not at every sample); *id: the hash, 0 for an empty
 * stack. -1 when the ring is full. */
static __always_inline int store_hashed(struct walk *w, __u64 hash, __u64 *id)
{
	__u64 *recent = &w->recent[hash & (RECENT_STACKS - 1)];
	__u32 len = w->srec.stack.len;

	*id = 0;
	if (len == 0 || len > KILN_MAX_STACK_DEPTH)
		return 0;
	*id = hash;
	if (*recent == hash)
		return 0;
	w->srec.type = KILN_REC_STACK;
	w->srec.gen = w->rec.gen;
	w->srec.id = hash;
	if (bpf_ringbuf_output(&events, &w->srec, KILN_STACK_REC_BYTES(len), ring_wakeup()))
		return -1;
	*recent = hash;
	return 0;
}

static __always_inline int store_stack(struct walk *w, __u64 *id, bool loop)
{
	return store_hashed(w, stack_hash(&w->srec.stack, loop), id);
}

/* Whether this sample of a process whose tables are not loaded wakes user
 * space to load them: at its wake_unloaded_after-th such sample, once a
 * process image, and at most every UNLOADED_WAKE_GAP_NS on the host. A
 * process that ends sooner (most short-lived ones) wakes nothing: its few
 * samples are walked by frame pointers, and its tables would come too
 * late. One that runs on gets its tables within a few samples, where the
 * loop's next read (up to a second) could leave it walked by frame
 * pointers for a hundred. Unsynchronized: a count lost to a race costs a
 * sample's delay. */
static __always_inline bool unloaded_wakeup(__u32 tgid)
{
	struct instance *inst;
	__u64 now;

	if (!wake_unloaded_after)
		return false;
	inst = bpf_map_lookup_elem(&instances, &tgid);
	if (!inst || inst->woken)
		return false;
	if (inst->unloaded < 0xffff)
		inst->unloaded++;
	if (inst->unloaded < wake_unloaded_after)
		return false;
	now = bpf_ktime_get_ns();
	if (now - unloaded_wake_ns < UNLOADED_WAKE_GAP_NS)
		return false;
	unloaded_wake_ns = now;
	inst->woken = 1;
	count_event(KILN_EV_WAKE_UNLOADED);
	return true;
}

/* n samples of generation g, counted sent, that the ring had no room for. */
static __always_inline void count_lost(__u32 g, __u32 n)
{
	struct kiln_counters *c = counters_here();

	if (c) {
		c->outcomes[g & 1][KILN_SAMPLED] -= n;
		c->outcomes[g & 1][KILN_DROP_RING_FULL] += n;
	}
}

_Static_assert(sizeof(struct kiln_sample_key) == 48, "same_key compares 6 words");

static __always_inline bool same_key(const struct kiln_sample_key *a,
				     const struct kiln_sample_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3] && x[4] == y[4] &&
	       x[5] == y[5];
}

/* The sample in w->rec sent through the ring at once (wake: the ring's
 * wakeup flag), counted sampled or dropped. */
static __always_inline void send_sample(struct walk *w, __u64 wake)
{
	if (bpf_ringbuf_output(&events, &w->rec, sizeof(w->rec), wake))
		count_outcome(w->gen, KILN_DROP_RING_FULL);
	else
		count_outcome(w->gen, KILN_SAMPLED);
}

/* A key user space must see at once (its interpreter frames are named
 * from the living process) wakes it when the walk met a code object this
 * CPU had not in this generation (new native frames bring no name to
 * read), unless this woke it, or user space said it reads the ring again,
 * less than KEY_WAKE_GAP_NS ago: while new names keep coming it polls
 * every 100 ms itself (pipeline.c), and idles while none do. */
static __always_inline __u64 key_wakeup(void)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - key_wake_ns < KEY_WAKE_GAP_NS)
		return ring_wakeup();
	key_wake_ns = now;
	count_event(KILN_EV_WAKE_NAMES);
	return BPF_RB_FORCE_WAKEUP;
}

/* The sample in w->rec counted in this CPU's slot for its key; the key
 * the slot counted before (if another) sent to the ring. A new key that
 * user space must see at once (now) is sent at once too. */
static __always_inline void count_sample(struct walk *w, bool now)
{
	const __u64 *k = (const __u64 *)&w->rec.key;
	struct kiln_sample_counts *sc;
	struct kiln_sample_rec *slot;
	__u32 g = w->gen;
	__u64 h = STACK_HASH_SEED;

	sc = bpf_map_lookup_elem(&sample_counts, &g);
	if (!sc) {
		send_sample(w, ring_wakeup());
		return;
	}
	for (int i = 0; i < 6; i++)
		h = hash_mix(h, k[i]);
	slot = &sc->slots[(h >> 58) & (KILN_SAMPLE_SLOTS - 1)];
	if ((slot->count || slot->sent) && slot->gen == w->rec.gen &&
	    same_key(&slot->key, &w->rec.key)) {
		slot->count++;
		count_outcome(g, KILN_SAMPLED);
		return;
	}
	if (slot->count && slot->gen == w->rec.gen &&
	    bpf_ringbuf_output(&events, slot, sizeof(*slot), ring_wakeup()))
		count_lost(g, slot->count);
	*slot = w->rec;
	if (now) {
		slot->count = 0;
		slot->sent = 1;
		send_sample(w, w->it_new_code ? key_wakeup() : ring_wakeup());
		return;
	}
	count_outcome(g, KILN_SAMPLED);
}

/* Counts the sample, its stacks sent; its key sent at once (now) when
 * user space reads something of its process on the key's arrival
 * (interpreter frames), and the sample sent at once to wake user space
 * when a process sampled a few times before its tables loaded (unloaded:
 * its user stack was walked by frame pointers for that reason) should
 * have them. */
static __always_inline void commit(struct walk *w, struct task_struct *task, __u32 tid,
				   bool unloaded, bool now)
{
	__u64 wake;

	/* After the stacks: a dropped sample must not announce a process.
	 * (A walk with the process's own tables knows its instance.) */
	if (!w->rec.key.instance)
		w->rec.key.instance = tid == 0 ? 0 : instance_of(w->rec.key.pid, task);
	w->rec.type = KILN_REC_SAMPLE;
	w->rec.count = 1;
	w->rec.sent = 0;
	wake = unloaded && unloaded_wakeup(w->rec.key.pid) ? BPF_RB_FORCE_WAKEUP : 0;
	if (wake)
		send_sample(w, wake);
	else
		count_sample(w, now);
}

/* Sends the walked user stack and the sample. */
static __always_inline void send_walk(struct walk *w)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (w->srec.stack.flags & KILN_STACK_ROOT)
		count_unwind(KILN_UW_ROOT);
	if (w->srec.stack.flags & KILN_STACK_TRUNCATED)
		count_unwind(KILN_UW_TRUNCATED);
	if (w->memo_hits)
		count_unwind_n(KILN_UW_ROW_MEMO, w->memo_hits);
	if (w->map_hits)
		count_unwind_n(KILN_UW_MAP_MEMO, w->map_hits);
	if (w->table_frames)
		count_unwind_n(KILN_UW_FRAMES_TABLE, w->table_frames);
	if (w->fp_frames)
		count_unwind_n(KILN_UW_FRAMES_FP, w->fp_frames);
	if (store_hashed(w, hash_final(w->hash, w->srec.stack.flags), &w->rec.key.ustack)) {
		count_outcome(w->gen, KILN_DROP_RING_FULL);
		return;
	}
	commit(w, (struct task_struct *)bpf_get_current_task(), (__u32)id, false,
	       w->it_emitted != 0);
}

/* Global functions (kiln_send_walk, kiln_commit, kiln_walk_step,
 * kiln_py_step, kiln_rb_step): the verifier checks each once, on its own,
 * from arguments it knows nothing of, where an inlined copy is checked
 * again at every place and in every state the program reaches it in (on
 * 6.18, the walker's step in 8 states, a sample's end inlined in 3 places
 * of the walker). Only the bpf_loop programs (5.17) call them: pointer
 * arguments need 5.12, and arm64 before 6.0 cannot mix calls with tail
 * calls. A call costs a sample nothing measurable (make bench's load, both
 * at once: BPF time a sample 0.99x at 97 and 999 Hz); each start verifies
 * 10.6 ms, not 24.5. */
__noinline int kiln_send_walk(struct walk *w)
{
	if (w)
		send_walk(w);
	return 0;
}

__noinline int kiln_commit(struct walk *w, __u32 tid, bool unloaded)
{
	if (w)
		commit(w, (struct task_struct *)bpf_get_current_task(), tid, unloaded, false);
	return 0;
}

static __always_inline void finish_walk(struct walk *w, bool loop)
{
	if (loop)
		kiln_send_walk(w);
	else
		send_walk(w);
}

static __always_inline int read_user(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* A saved return address as a code address: arm64 code built with
 * pointer authentication signs it in the bits above the 48-bit user
 * address space. */
static __always_inline __u64 strip_pac(__u64 ra)
{
#ifdef __TARGET_ARCH_arm64
	return ra & ((1ull << 48) - 1);
#else
	return ra;
#endif
}

/* i as an index of pm->maps, stored and loaded back: the verifier does
 * not follow a value through map memory, so the search's bounds do not
 * become its business. (As an offset, i is checked for its exact range,
 * and that range's history with it: the verifier then walks both ways of
 * every step of the search, 2^7 paths, a third of kiln_walk_loop's
 * verification.) */
static __always_inline __u32 map_index(struct walk *w, __u32 i)
{
	*(volatile __u32 *)&w->map_probe = i;
	return *(volatile __u32 *)&w->map_probe & (KILN_PROC_MAPS_MAX - 1);
}

/* The executable mapping of pm holding pc, or NULL. */
static __always_inline const struct kiln_exec_map *find_map(struct walk *w,
							    const struct kiln_proc_maps *pm,
							    __u64 pc)
{
	const struct kiln_exec_map *m;
	__u32 lo = 0, n = pm->n;

	if (n == 0 || n > KILN_PROC_MAPS_MAX)
		return NULL;
	for (int i = 0; i < MAP_SEARCH_STEPS; i++) {
		__u32 half, mid;

		if (n <= 1)
			break;
		half = n / 2;
		mid = lo + half;
		if (pm->maps[map_index(w, mid)].start <= pc)
			lo = mid;
		n -= half;
	}
	m = &pm->maps[map_index(w, lo)];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/* Slot i of unwind_rows (include/kiln/unwind.h), or NULL. Both lookups
 * are inlined by the verifier (the chunks share one size), a few
 * instructions each. */
static __always_inline const union kiln_row_pair *row_pair(__u32 i)
{
	__u32 e = i >> 1, c = e >> KILN_ROWS_CHUNK_SHIFT, in = e & (KILN_ROWS_CHUNK - 1);
	void *chunk = bpf_map_lookup_elem(&unwind_rows, &c);

	return chunk ? bpf_map_lookup_elem(chunk, &in) : NULL;
}

/* The rule of the row of table t that applies at off, or -1: searched
 * among the rows of off's page (its page index gives their range), a few
 * cache lines, not the whole table's. (As callbacks of bpf_loop, this
 * search and find_map's cost the verifier half as much, but each halving
 * then costs a call: ~350 ns more a frame walked, which an agent pays at
 * every sample.) */
static __always_inline int find_row(const struct kiln_exe_table *t, __u32 off)
{
	const union kiln_row_pair *p;
	__u32 first = t->first_row, nrows = t->nrows, npages = t->npages;
	__u32 page = off >> KILN_ROW_PAGE_SHIFT, in = off & KILN_ROW_PAGE_MASK, idx, lo, hi, n;

	if (off < t->start_off)
		return -1;
	if (page >= npages) {
		lo = nrows - 1;         /* past the last page: the last row */
		hi = lo;
	} else {
		idx = first + ((nrows + 1) & ~1u) + page;
		p = row_pair(idx);
		if (!p)
			return -1;
		lo = p->page[idx & 1];
		hi = nrows - 1;
		if (page + 1 < npages) {
			idx++;
			p = row_pair(idx);
			if (!p)
				return -1;
			hi = p->page[idx & 1];
		}
	}
	if (hi >= nrows || lo > hi || hi - lo >= KILN_ROW_PAGE_ROWS)
		return -1;
	n = hi - lo + 1;
	lo += first;

	for (int i = 0; i < ROW_SEARCH_STEPS; i++) {
		const struct kiln_packed_row *r;
		__u32 half, mid;

		if (n <= 1)
			break;
		half = n / 2;
		mid = lo + half;
		p = row_pair(mid);
		if (!p)
			return -1;
		/* past the first row: inside the page, or at the next one (0,
		 * which wraps to the largest: one test, one branch for the
		 * verifier to follow) */
		r = &p->row[mid & 1];
		if ((__u16)(r->off - 1) < in)
			lo = mid;
		n -= half;
	}
	p = row_pair(lo);
	return p ? p->row[lo & 1].rule : -1;
}

enum { WALK_ON = 0, WALK_END = 1 };

static __always_inline int walk_end(struct walk *w, __u32 flags, __u32 stat)
{
	w->srec.stack.flags |= flags;
	if (stat < KILN_UW_STAT_COUNT)
		count_unwind(stat);
	return WALK_END;
}

/* One step by the frame-pointer chain, only while it is sane: fp above sp
 * by less than FP_MAX_SPAN, aligned, and so increasing from frame to frame
 * (sp becomes fp + 16). A step onto another stack (other_stack: a row
 * says the chain crosses there) keeps only the alignment check. */
static __always_inline int fp_step(struct walk *w, bool other_stack)
{
	__u64 frame[2];

	if (w->fp == 0)
		return WALK_END;        /* the chain's end, as _start leaves it */
	if ((w->fp & 7) || (!other_stack && (w->fp < w->sp || w->fp - w->sp >= FP_MAX_SPAN)))
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_BAD_FP);
	if (bpf_probe_read_user(frame, sizeof(frame), (const void *)w->fp))
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
	w->sp = w->fp + 16;
	w->fp = frame[0];
	w->pc = strip_pac(frame[1]);
	w->pc_is_ra = 1;
	w->lr_known = 0;
	w->srec.stack.flags |= KILN_STACK_FP_STEPS;
	w->fp_frames++;
	return w->pc ? WALK_ON : WALK_END;
}

/* The caller's registers, once its CFA is known: the return address
 * saved at cfa + ra_off, or (ra_in_lr) still in x30, which only the
 * interrupted frame knows; the CFA lies above sp, or at it when nothing
 * was pushed (an arm64 leaf). */
static __always_inline int cfa_step(struct walk *w, __u64 cfa, __u64 fp, bool ra_in_lr,
				    __s64 ra_off)
{
	__u64 ra;

	if (cfa < w->sp || (cfa == w->sp && !ra_in_lr))
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_BAD_CFA);
	if (ra_in_lr) {
		if (!w->lr_known)
			return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_LR);
		ra = w->lr;
	} else if (read_user(&ra, cfa + ra_off)) {
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
	}
	w->sp = cfa;
	w->fp = fp;
	w->pc = strip_pac(ra);
	w->pc_is_ra = 1;
	w->lr_known = 0;
	w->table_frames++;
	return ra ? WALK_ON : WALK_END;
}

/* The signal trampoline: the interrupted registers are in the ucontext the
 * kernel pushed (x86-64: its mcontext at sp + 40, rbp, rsp, rip at 10, 15,
 * 16 words in; arm64: x0 at sp + 312, then x29, x30, sp, pc at 29 to 32). */
#ifdef __TARGET_ARCH_arm64
#define SIGCTX_OFF 312
#define SIGCTX_FP 29
#define SIGCTX_LR 30
#define SIGCTX_SP 31
#define SIGCTX_PC 32
#else
#define SIGCTX_OFF 40
#define SIGCTX_FP 10
#define SIGCTX_SP 15
#define SIGCTX_PC 16
#endif

static __always_inline int signal_step(struct walk *w)
{
	__u64 base = w->sp + SIGCTX_OFF, fp, sp, pc;

	if (read_user(&fp, base + SIGCTX_FP * 8) || read_user(&sp, base + SIGCTX_SP * 8) ||
	    read_user(&pc, base + SIGCTX_PC * 8))
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
#ifdef SIGCTX_LR
	if (read_user(&w->lr, base + SIGCTX_LR * 8))
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
	w->lr_known = 1;
#endif
	w->fp = fp;
	w->sp = sp;
	w->pc = pc;
	w->pc_is_ra = 0;        /* interrupted, not called: pc itself is the frame */
	w->table_frames++;
	return pc ? WALK_ON : WALK_END;
}

static __always_inline int rule_step(struct walk *w, const struct kiln_unwind_rule *r)
{
	__u64 cfa, fp = w->fp;

	cfa = (r->cfa_reg == KILN_REG_FP ? w->fp : w->sp) + (__s64)r->cfa_off;
	if ((r->flags & KILN_RULE_CFA_DEREF) && read_user(&cfa, cfa))
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
	if (r->fp_rule == KILN_FP_AT_CFA) {
		if (read_user(&fp, cfa + (__s64)r->fp_off))
			return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
	} else if (r->fp_rule == KILN_FP_AT_FP) {
		if (read_user(&fp, w->fp + (__s64)r->fp_off))
			return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_READ);
	}
	return cfa_step(w, cfa, fp, r->ra_rule == KILN_RA_IN_LR, r->ra_off);
}

/* An event of the walk (no task fields: those are the sampler's). */
static __always_inline void send_walk_event(__u32 type, __u32 pid, __u32 instance)
{
	struct kiln_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_event(KILN_EV_DROPPED);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->pid = pid;
	e->instance = instance;
	e->time_ns = bpf_ktime_get_ns();
	/* urgent (the walker misses mappings until user space reads them), and
	 * maybe behind a quiet exec or exit event: forced, see send_event */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	count_event(KILN_EV_SENT);
}

/* Tells user space once (until it rewrites the entry) that a pc fell in no
 * known mapping: a library loaded since its last read. */
static __always_inline void report_miss(struct kiln_proc_maps *pm, struct walk *w)
{
	if (pm->flags & KILN_PROC_MISS_SENT)
		return;
	/* (not atomic: kernels before 5.12 have no atomic or; two CPUs that
	 * race here send the event twice) */
	pm->flags |= KILN_PROC_MISS_SENT;
	send_walk_event(KILN_EVENT_MAPS, w->maps_pid, pm->instance);
}

#define VM_EXEC 0x4ull

/* The mapping of an early walk at pc, from the process's early_maps entry
 * em, into w->early_* (kept: the next frames are often in the same file;
 * slot KILN_NO_TABLE when its file has no table loaded). False when pc is
 * in none of em's mappings. */
static __always_inline bool early_map(struct walk *w, const struct kiln_early_maps *em, __u64 pc)
{
	const struct kiln_early_map *e;
	const struct kiln_file_table *ft;
	struct kiln_file_key k;
	__u32 n = em->n, found = KILN_EARLY_MAPS;

	if (pc - w->early_start < w->early_end - w->early_start)
		return true;
	for (int i = 0; i < KILN_EARLY_MAPS; i++) {
		if (i >= n)
			break;
		if (pc - em->maps[i].start < em->maps[i].end - em->maps[i].start) {
			found = i;
			break;
		}
	}
	if (found >= KILN_EARLY_MAPS)
		return false;
	/* (an index, its value forgotten through memory as find_map's: one
	 * state for the verifier to go on with, not one a mapping) */
	e = &em->maps[map_index(w, found) & (KILN_EARLY_MAPS - 1)];
	w->early_start = e->start;
	w->early_end = e->end;
	w->early_slot = KILN_NO_TABLE;
	k = e->file;
	ft = bpf_map_lookup_elem(&file_tables, &k);
	if (!ft)
		return true;
	/* as unwind_table__bias: the segment holding the mapping's offset */
	found = KILN_FILE_SEGS;
	for (int i = 0; i < KILN_FILE_SEGS; i++) {
		__u64 off = ft->segs[i].offset;

		if (i >= ft->nsegs)
			break;
		if (e->pgoff >= (off & ~4095ull) && e->pgoff < off + ft->segs[i].filesz) {
			found = i;
			break;
		}
	}
	if (found < KILN_FILE_SEGS) {
		found = map_index(w, found) & (KILN_FILE_SEGS - 1);
		w->early_bias = e->start - e->pgoff + ft->segs[found].offset -
				ft->segs[found].vaddr + ft->base;
		w->early_slot = ft->slot;
	}
	return true;
}

static __always_inline struct map_memo *map_memo_of(struct walk *w, __u64 pc)
{
	__u64 k = (pc >> MAP_MEMO_SHIFT) ^ (__u64)w->maps_instance << 20;

	return &w->maps[(__u32)((k * STACK_HASH_SEED) >> 59) & (MAP_MEMO - 1)];
}

/* The mapping of the walked process holding pc: remembered (this CPU's
 * map memo), else searched in its proc_maps entry and remembered. Early
 * walks (maps_instance 0) remember nothing: their entry holds none. */
static __always_inline int walk_map(struct walk *w, __u64 pc, __u32 *slot, __u64 *bias,
				    struct kiln_proc_maps **pmp)
{
	struct map_memo *memo = map_memo_of(w, pc);
	const struct kiln_exec_map *m;
	struct kiln_proc_maps *pm;
	__u32 pid = w->maps_pid, gen = maps_gen;

	if (w->maps_instance && memo->instance == w->maps_instance && memo->gen == gen &&
	    pc - memo->start < memo->end - memo->start) {
		*slot = memo->slot;
		*bias = memo->bias;
		w->map_hits++;
		return 1;
	}
	pm = bpf_map_lookup_elem(&proc_maps, &pid);
	*pmp = pm;
	if (!pm)
		return -1;
	m = find_map(w, pm, pc);
	if (!m)
		return 0;
	*slot = m->slot;
	*bias = m->bias;
	if (w->maps_instance && pm->instance == w->maps_instance) {
		memo->start = m->start;
		memo->end = m->end;
		memo->bias = m->bias;
		memo->slot = m->slot;
		memo->instance = w->maps_instance;
		memo->gen = gen;
	}
	return 1;
}

/* Records the frame at w->pc and finds its caller. A pc in the
 * interpreter's eval loop [it_eval_start, + it_eval_len) (len 0 for other
 * processes) is handed to the language's walker first (it_pending), which
 * writes that call's interpreter frames in its place and comes back with
 * it_replaced set: the frame is then unwound without being recorded. */
static __always_inline int walk_step(struct walk *w, bool early_ok)
{
	struct kiln_proc_maps *pm = NULL;
	const struct kiln_exe_table *t;
	const struct kiln_unwind_rule *r;
	struct row_memo *memo;
	__u64 pc = w->pc, at = w->pc_is_ra ? pc - 1 : pc, bias = 0, key;
	__u32 n = w->srec.stack.len, slot = KILN_NO_TABLE, cmd, gen, idx;
	bool mapped;
	int rule, found;
	bool replaced = w->it_replaced == IT_REPLACED;

	if (w->it_pending)
		return WALK_ON;         /* waits for kiln_py, after this run */
	if (n >= KILN_MAX_STACK_DEPTH)
		return walk_end(w, KILN_STACK_TRUNCATED, KILN_UW_STAT_COUNT);
	if (at - w->it_eval_start < w->it_eval_len && !w->it_replaced && w->it_state != IT_OFF) {
		w->it_pending = 1;
		return WALK_ON;
	}
	w->it_replaced = 0;
	found = walk_map(w, at, &slot, &bias, &pm);
	if (found < 0)          /* user space dropped the process meanwhile */
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_STAT_COUNT);
	mapped = found;
	if (!mapped && early_ok && early_walks && w->early && early_map(w, &w->early_maps, at)) {
		mapped = true;
		slot = w->early_slot;
		bias = w->early_bias;
	}
	if (!mapped && pm && !(pm->flags & KILN_PROC_INCOMPLETE)) {
		report_miss(pm, w);
		/* The sampled pc is a fact; a caller outside every mapping is
		 * what a wrong step would produce: never emitted. */
		if (n == 0) {
			w->srec.stack.ips[0] = pc;
			w->srec.stack.len = 1;
			w->hash = hash_mix(w->hash, pc);
		}
		return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_NO_MAPPING);
	}
	/* (written either way, counted only when not replaced: no branch
	 * for the verifier to follow twice; n bounded again in the register
	 * that indexes: the compiler may reload a copy spilled before the
	 * check above, whose bound the 6.1 verifier does not know) */
	barrier_var(n);
	if (n >= KILN_MAX_STACK_DEPTH)
		return walk_end(w, KILN_STACK_TRUNCATED, KILN_UW_STAT_COUNT);
	w->srec.stack.ips[n] = pc;
	w->srec.stack.len = n + !replaced;
	if (!replaced)
		w->hash = hash_mix(w->hash, pc);
	if (!mapped || slot >= KILN_UNWIND_SLOTS)
		return fp_step(w, false);
	key = ROW_MEMO_USED | (__u64)slot << 32 | (__u32)(at - bias);
	memo = &w->memo[(__u32)((key * STACK_HASH_SEED) >> ROW_MEMO_SHIFT) & (ROW_MEMO - 1)];
	if (at >= bias && at - bias <= 0xffffffffull && memo->key == key &&
	    memo->gen == tables_gen) {
		rule = (int)memo->rule;
		w->memo_hits++;
	} else {
		/* read before the table: a row read after its table went is
		 * remembered as stale */
		gen = tables_gen;
		t = bpf_map_lookup_elem(&exe_tables, &slot);
		if (!t || t->nrows == 0)
			return fp_step(w, false); /* not loaded (yet), or evicted */
		if (at < bias || at - bias > 0xffffffffull)
			return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_NO_ROW);
		rule = find_row(t, (__u32)(at - bias));
		if (rule < 0)
			return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_NO_ROW);
		if (!(rule & KILN_UNWIND_CMD)) {
			idx = (__u32)rule;
			r = bpf_map_lookup_elem(&unwind_rules, &idx);
			if (!r)
				return walk_end(w, KILN_STACK_ERROR, KILN_UW_ERR_NO_ROW);
			memo->body = *r;
		}
		memo->key = key;
		memo->gen = gen;
		memo->rule = (__u32)rule;
	}
	if (!(rule & KILN_UNWIND_CMD))
		return rule_step(w, &memo->body);
	cmd = rule & KILN_CMD_MASK;
	if (cmd == KILN_CMD_STOP)
		return walk_end(w, KILN_STACK_ROOT, KILN_UW_STAT_COUNT);
	if (cmd == KILN_CMD_PLT)
		return cfa_step(w, w->sp + 8 +
				((pc & 15) >= ((rule >> KILN_CMD_ARG_SHIFT) & 15) ? 8 : 0),
				w->fp, false, -8);
	if (cmd == KILN_CMD_SIGNAL)
		return signal_step(w);
	/* INVALID (no CFI covers pc), FP and FP_SWITCH */
	return fp_step(w, cmd == KILN_CMD_FP_SWITCH);
}

/* Ends the walk: interpreter frames not placed yet (the native walk
 * stopped before the eval-loop frames they belong to) are put at the root
 * end of the stack by the language's walker first. */
static __always_inline void end_walk(struct bpf_perf_event_data *ctx, struct walk *w, bool loop)
{
	if (w->it_state == IT_ACTIVE && w->it_frame && !w->it_leftover &&
	    w->tail_calls < WALK_TAIL_CALLS) {
		w->it_leftover = 1;
		w->it_call_start = w->it_emitted;
		w->tail_calls++;
		bpf_tail_call(ctx, &walk_progs, KILN_PROG_PY + (w->it_lang & 1));
	}
	finish_walk(w, loop);
}

/* bpf_loop (Linux 5.17) runs one frame step as a callback, and the step is
 * a global function (see kiln_send_walk): the verifier checks it once;
 * the unrolled loop of kiln_walk is checked frame by frame (about 140 000
 * instructions, most of kiln's start-up CPU). */
struct walk_loop {
	struct walk *w;
	int end;
};

__noinline int kiln_walk_step(struct walk *w)
{
	return w ? walk_step(w, true) : WALK_END;
}

static long walk_loop_step(__u32 i, void *data)
{
	struct walk_loop *l = data;

	if (kiln_walk_step(l->w) == WALK_END) {
		l->end = 1;
		return 1;
	}
	return l->w->it_pending ? 1 : 0;       /* an interpreter walker's turn */
}

/* One run of the walk: up to WALK_FRAMES frames unrolled, or (loop) as
 * many as bpf_loop allows until the walk ends or a Python eval-loop frame
 * waits; then a tail call to go on. */
static __always_inline int walk_run(struct bpf_perf_event_data *ctx, bool loop)
{
	__u32 zero = 0;
	int end = 0;
	struct walk *w = bpf_map_lookup_elem(&walks, &zero);

	if (!w)
		return 0;
	if (loop) {
		struct walk_loop l = { .w = w };

		bpf_loop(KILN_MAX_STACK_DEPTH, walk_loop_step, &l, 0);
		end = l.end;
	} else {
		for (int i = 0; i < WALK_FRAMES && !end; i++)
			end = walk_step(w, false) == WALK_END;
	}
	/* one place that ends the walk: the verifier checks the stack's
	 * hashing once, not once for every frame that may end it */
	if (end) {
		end_walk(ctx, w, loop);
		return 0;
	}
	if (w->it_pending) {
		w->it_pending = 0;
		if (w->tail_calls < WALK_TAIL_CALLS) {
			w->tail_calls++;
			w->it_call_start = w->it_emitted;
			bpf_tail_call(ctx, &walk_progs, KILN_PROG_PY + (w->it_lang & 1));
		}
		/* no tail call left: the frame stays native */
		w->it_state = IT_OFF;
	}
	if (w->tail_calls < WALK_TAIL_CALLS) {
		w->tail_calls++;
		bpf_tail_call(ctx, &walk_progs, KILN_PROG_WALK);
	}
	w->srec.stack.flags |= KILN_STACK_TRUNCATED;
	finish_walk(w, loop);
	return 0;
}

/* User space loads one of the two (sampler.c: kiln_walk_loop where the
 * kernel has bpf_loop) and puts it in walk_progs[KILN_PROG_WALK]. */
SEC("perf_event")
int kiln_walk(struct bpf_perf_event_data *ctx)
{
	return run_end(walk_run(ctx, false));
}

SEC("perf_event")
int kiln_walk_loop(struct bpf_perf_event_data *ctx)
{
	return run_end(walk_run(ctx, true));
}

/* ---- interpreter frames (include/kiln/interp.h, docs/python.md, docs/ruby.md) ---- */

#define IT_FRAMES_PER_RUN 16    /* interpreter frames read per walker run */
#define PY_TSD_KEYS 32          /* glibc's first block of thread-specific keys */
#define RB_STACK_WORDS (1u << 28) /* a sane vm_stack_size (VALUE words) */
#define RB_BODY_READ 96         /* bytes of an iseq body read (< IT_SCRATCH - 8) */
#define RB_EP_DEPTH 4           /* environments followed to a block's method */

enum { IT_MORE = 0, IT_CALL_DONE = 1, IT_STOP = 2 };

/* The u64 / u32 / u8 at off in w->scratch (what the last read put there). */
static __always_inline __u64 scratch_u64(struct walk *w, __u32 off)
{
	return *(__u64 *)&w->scratch[off & IT_OFF_MASK];
}

static __always_inline __u32 scratch_u32(struct walk *w, __u32 off)
{
	return *(__u32 *)&w->scratch[off & IT_OFF_MASK];
}

static __always_inline __u8 scratch_u8(struct walk *w, __u32 off)
{
	return w->scratch[off & IT_OFF_MASK];
}

/* The thread pointer of the sampled thread (x86-64 only for now: 0). */
static __always_inline __u64 thread_pointer(void)
{
#ifdef __TARGET_ARCH_x86
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, thread.fsbase);
#else
	return 0;
#endif
}

/* Notes code (with aux) in w->codes; it_new_code when it was not there.
 * Sets, not one slot a hash: two of a program's hot code objects in one
 * slot (one run in six of tests/unwind's Python, about 10 of them in 256
 * slots) pushed each other out at every sample, and each stack that held
 * one woke user space, ~7 times a second for the whole run. */
static __always_inline void code_seen(struct walk *w, __u64 code, __u64 aux)
{
	__u64 h = hash_final(hash_mix(hash_mix(hash_mix(STACK_HASH_SEED, w->it_instance), code), aux),
			     w->rec.gen);
	__u64 *set = &w->codes[h & (RECENT_CODES - CODE_WAYS)];

	if (set[0] == h || set[1] == h || set[2] == h || set[3] == h)
		return;
	set[3] = set[2];
	set[2] = set[1];
	set[1] = set[0];
	set[0] = h;
	w->it_new_code = 1;
}

/* Writes one interpreter frame (kiln/interp.h: with_aux, a third slot
 * holding aux); IT_STOP when the stack or the frame cap is full. (User
 * space reads the names of a stack's code objects as the stack arrives,
 * while the process lives: sampler_hooks.on_new_key.) */
static __always_inline int it_emit(struct walk *w, __u32 lang, __u64 tag_code, __u64 tag_where,
				   __u64 code, __u32 check, __u32 idx, bool with_aux, __u64 aux)
{
	__u32 n = w->srec.stack.len;

	if (n >= KILN_MAX_STACK_DEPTH - 1 - with_aux ||
	    w->it_emitted >= KILN_INTERP_MAX_FRAMES) {
		count_interp(lang, KILN_INTERP_TRUNCATED);
		w->srec.stack.flags |= KILN_STACK_TRUNCATED;
		return IT_STOP;
	}
	w->srec.stack.ips[n] = tag_code << KILN_INTERP_TAG_SHIFT | code;
	w->srec.stack.ips[n + 1] = tag_where << KILN_INTERP_TAG_SHIFT | (__u64)check << 32 | idx;
	w->srec.stack.len = n + 2;
	w->hash = hash_mix(hash_mix(w->hash, w->srec.stack.ips[n]), w->srec.stack.ips[n + 1]);
	if (with_aux) {
		w->srec.stack.ips[n + 2] =
			(__u64)KILN_INTERP_TAG_AUX << KILN_INTERP_TAG_SHIFT | aux;
		w->srec.stack.len = n + 3;
		w->hash = hash_mix(w->hash, w->srec.stack.ips[n + 2]);
	}
	code_seen(w, code, with_aux ? aux : 0);
	w->it_emitted++;
	count_interp(lang, KILN_INTERP_FRAMES);
	return IT_MORE;
}

/* -- Python -- */

/* The sampled thread's own current interpreter frame: its thread state
 * is the value of the interpreter's thread-state key in the thread's
 * glibc TSD (not the GIL holder's, not the main thread's). 0 with a
 * counted reason when there is none. */
static __always_inline __u64 py_first_frame(struct walk *w, const struct kiln_py_proc *py)
{
	__u64 tp = thread_pointer(), tstate, cframe, frame;
	__s32 tss[2];

	if (bpf_probe_read_user(tss, sizeof(tss), (const void *)py->tss_addr) || tss[0] != 1 ||
	    tss[1] < 0 || tss[1] >= PY_TSD_KEYS) {
		count_interp(KILN_LANG_PY, KILN_INTERP_ERR_KEY);
		return 0;
	}
	if (!tp || read_user(&tstate, tp + py->tsd_off + 16 * (__u64)tss[1])) {
		count_interp(KILN_LANG_PY, KILN_INTERP_ERR_TSD);
		return 0;
	}
	if (!tstate) {
		count_interp(KILN_LANG_PY, KILN_INTERP_NO_STATE);
		return 0;
	}
	cframe = tstate;
	if (py->o.tstate_cframe != 0xffff && read_user(&cframe, tstate + py->o.tstate_cframe))
		goto bad;
	if (!cframe || read_user(&frame, cframe + py->o.cframe_frame))
		goto bad;
	return frame;
bad:
	count_interp(KILN_LANG_PY, KILN_INTERP_ERR_FRAME);
	return 0;
}

/* Emits the interpreter frame at w->it_frame (when it is one: a 3.12+
 * entry shim ends the call instead) and moves to the previous one. */
static __always_inline int py_step(struct walk *w, const struct kiln_py_proc *py)
{
	__u64 frame = w->it_frame, code, prev, instr, idx = KILN_INTERP_NO_INSTR;
	__u32 check;
	__u8 entry;

	if (!frame)
		return IT_CALL_DONE;
	if (bpf_probe_read_user(w->scratch, IT_READ, (const void *)frame)) {
		count_interp(KILN_LANG_PY, KILN_INTERP_ERR_FRAME);
		return IT_STOP;
	}
	code = scratch_u64(w, py->o.frame_code);
	prev = scratch_u64(w, py->o.frame_previous);
	instr = scratch_u64(w, py->o.frame_instr);
	entry = scratch_u8(w, py->o.frame_entry);
	w->it_frame = prev;
	if (py->o.entry_kind == KILN_PY_ENTRY_SHIM && entry == py->o.entry_value)
		return w->it_leftover ? IT_MORE : IT_CALL_DONE;
	if (!code || bpf_probe_read_user(w->scratch, IT_READ, (const void *)code) ||
	    scratch_u64(w, 8) != py->code_type) {
		count_interp(KILN_LANG_PY, KILN_INTERP_ERR_CODE);
		return IT_STOP;
	}
	check = (scratch_u32(w, py->o.code_firstlineno) ^ scratch_u32(w, py->o.code_argcount) << 16 ^
		 scratch_u32(w, py->o.code_flags) << 8) & KILN_INTERP_CHECK_MASK;
	if (instr >= code + py->o.code_bytecode && instr - code - py->o.code_bytecode < (1ull << 32))
		idx = (instr - code - py->o.code_bytecode) / 2;
	if (it_emit(w, KILN_LANG_PY, KILN_PY_TAG_CODE, KILN_PY_TAG_WHERE, code, check, (__u32)idx,
		    false, 0) == IT_STOP)
		return IT_STOP;
	if (py->o.entry_kind == KILN_PY_ENTRY_FLAG && entry && !w->it_leftover)
		return IT_CALL_DONE;
	return IT_MORE;
}

/* -- Ruby -- */

#define RB_T_MASK 0x1f
#define RB_T_IMEMO 0x1a
#define RB_IMEMO_ISEQ 7
#define RB_IMEMO_SHIFT 12

/* The sampled thread's own execution context: ruby_current_ec, the
 * thread's TLS variable, found through its DTV (glibc x86-64: the DTV at
 * tp + 8, 16-byte entries); or, without it, the main ractor's running EC
 * when its thread is the sampled one (tp is its pthread_self()). Then its
 * current control frame, and where its control frames end (w->it_end).
 * 0 with a counted reason when there is none. */
static __always_inline __u64 rb_first_frame(struct walk *w, const struct kiln_rb_proc *rb)
{
	__u64 tp = thread_pointer(), ec, dtv, block, ractor, th, id, cfp, end;

	if (!tp) {
		count_interp(KILN_LANG_RB, KILN_INTERP_ERR_TSD);
		return 0;
	}
	if (rb->ec_kind == KILN_RB_EC_TLS) {
		if (read_user(&dtv, tp + 8) || read_user(&block, dtv + 16 * (rb->tls_modid & 0xffff)) ||
		    block == (__u64)-1 || read_user(&ec, block + rb->tls_off)) {
			count_interp(KILN_LANG_RB, KILN_INTERP_ERR_KEY);
			return 0;
		}
	} else {
		if (read_user(&ractor, rb->main_ractor) ||
		    read_user(&ec, ractor + rb->o.ractor_running_ec)) {
			count_interp(KILN_LANG_RB, KILN_INTERP_ERR_KEY);
			return 0;
		}
		if (ec && (read_user(&th, ec + rb->o.ec_thread) || read_user(&id, th + rb->o.thread_id) ||
			   id != tp)) {
			count_interp(KILN_LANG_RB, KILN_INTERP_NOT_HOLDER);
			return 0;
		}
	}
	if (!ec) {
		count_interp(KILN_LANG_RB, KILN_INTERP_NO_STATE);
		return 0;
	}
	if (bpf_probe_read_user(w->scratch, 24, (const void *)ec))
		goto bad;
	end = scratch_u64(w, rb->o.ec_vm_stack);
	if (scratch_u64(w, rb->o.ec_vm_stack_size) >= RB_STACK_WORDS)
		goto bad;
	end += 8 * scratch_u64(w, rb->o.ec_vm_stack_size);
	cfp = scratch_u64(w, rb->o.ec_cfp);
	if (cfp < scratch_u64(w, rb->o.ec_vm_stack) || cfp >= end)
		goto bad;
	/* (the outermost frame is the thread's dummy: never Ruby) */
	w->it_end = end - rb->o.cfp_size;
	return cfp;
bad:
	count_interp(KILN_LANG_RB, KILN_INTERP_ERR_FRAME);
	return 0;
}

/* Emits the control frame at w->it_frame when it is a Ruby one (C frames
 * are the native frames' to show) and moves to its caller; the frame
 * rb_vm_exec was entered with (FINISH) ends the call. */
static __always_inline int rb_step(struct walk *w, const struct kiln_rb_proc *rb)
{
	__u64 cfp = w->it_frame, pc, iseq, ep, flags, body, encoded, idx = KILN_INTERP_NO_INSTR;
	__u64 env[3], me = 0; /* ep[-2] (method entry or cref), ep[-1] (prev ep), ep[0] */
	__u32 check, size;

	if (!cfp || cfp >= w->it_end) {
		w->it_frame = 0;
		return IT_CALL_DONE;
	}
	if (bpf_probe_read_user(w->scratch, 40, (const void *)cfp)) {
		count_interp(KILN_LANG_RB, KILN_INTERP_ERR_FRAME);
		return IT_STOP;
	}
	pc = scratch_u64(w, rb->o.cfp_pc);
	iseq = scratch_u64(w, rb->o.cfp_iseq);
	ep = scratch_u64(w, rb->o.cfp_ep);
	w->it_frame = cfp + rb->o.cfp_size < w->it_end ? cfp + rb->o.cfp_size : 0;
	if (bpf_probe_read_user(env, sizeof(env), (const void *)(ep - 16))) {
		count_interp(KILN_LANG_RB, KILN_INTERP_ERR_FRAME);
		return IT_STOP;
	}
	flags = env[2];
	if (flags & KILN_RB_FRAME_CFRAME)
		return IT_MORE;
	/* The method entry (its class names the frame) is in the method's
	 * own environment: a block's leads there through its previous eps.
	 * User space checks what it is. */
	for (int i = 0; i < RB_EP_DEPTH; i++) {
		if (env[2] & KILN_RB_ENV_LOCAL) {
			me = env[0];
			break;
		}
		if (bpf_probe_read_user(env, sizeof(env), (const void *)((env[1] & ~3ull) - 16)))
			break;
	}
	if (bpf_probe_read_user(w->scratch, 24, (const void *)iseq) ||
	    (scratch_u64(w, 0) & RB_T_MASK) != RB_T_IMEMO ||
	    (scratch_u64(w, 0) >> RB_IMEMO_SHIFT & 0xf) != RB_IMEMO_ISEQ) {
		count_interp(KILN_LANG_RB, KILN_INTERP_ERR_CODE);
		return IT_STOP;
	}
	body = scratch_u64(w, rb->o.iseq_body);
	if (bpf_probe_read_user(w->scratch, RB_BODY_READ, (const void *)body)) {
		count_interp(KILN_LANG_RB, KILN_INTERP_ERR_CODE);
		return IT_STOP;
	}
	size = scratch_u32(w, rb->o.body_size);
	encoded = scratch_u64(w, rb->o.body_encoded);
	check = (scratch_u32(w, rb->o.body_first_lineno) ^ size << 8 ^
		 scratch_u32(w, rb->o.body_type) << 20) & KILN_INTERP_CHECK_MASK;
	/* pc points past the instruction running: Ruby looks up pos - 1 */
	if (pc >= encoded && (pc - encoded) / 8 <= size) {
		idx = (pc - encoded) / 8;
		if (idx)
			idx--;
	}
	if (it_emit(w, KILN_LANG_RB, KILN_RB_TAG_ISEQ, KILN_RB_TAG_WHERE, iseq, check, (__u32)idx,
		    true, me & ((1ull << KILN_INTERP_TAG_SHIFT) - 1)) == IT_STOP)
		return IT_STOP;
	if ((flags & KILN_RB_FRAME_FINISH) && !w->it_leftover)
		return IT_CALL_DONE;
	return IT_MORE;
}

/* -- both -- */

/* Entered from kiln_walk at a native frame in the eval loop: writes the
 * interpreter frames of that C call of the loop (from the thread's current
 * frame, or where the last call's ended, to the call's entry frame) in its
 * place, and goes back to kiln_walk, which unwinds the eval-loop frame
 * without recording it. Also entered once at the walk's end to append the
 * frames left (it_leftover). lang is a constant: each language's program
 * gets its own copy. */
/* One interpreter frame a bpf_loop step (see walk_loop_step). */
struct interp_loop {
	struct walk *w;
	void *proc;
	int r;
};

__noinline int kiln_py_step(struct walk *w, const struct kiln_py_proc *py)
{
	return w && py ? py_step(w, py) : IT_STOP;
}

__noinline int kiln_rb_step(struct walk *w, const struct kiln_rb_proc *rb)
{
	return w && rb ? rb_step(w, rb) : IT_STOP;
}

static long py_loop_step(__u32 i, void *data)
{
	struct interp_loop *l = data;

	l->r = kiln_py_step(l->w, l->proc);
	return l->r != IT_MORE;
}

static long rb_loop_step(__u32 i, void *data)
{
	struct interp_loop *l = data;

	l->r = kiln_rb_step(l->w, l->proc);
	return l->r != IT_MORE;
}

static __always_inline int interp_run(struct bpf_perf_event_data *ctx, __u32 lang, bool loop)
{
	__u32 zero = 0, pid;
	struct walk *w = bpf_map_lookup_elem(&walks, &zero);
	void *proc;
	int r = IT_MORE;

	if (!w)
		return 0;
	pid = w->rec.key.pid;
	/* (each language's facts begin with its instance) */
	proc = bpf_map_lookup_elem(lang == KILN_LANG_PY ? (void *)&py_procs : (void *)&rb_procs,
				   &pid);
	if (!proc || *(__u32 *)proc != w->it_instance) {
		w->it_state = IT_OFF;
		goto back;
	}
	if (w->it_state == IT_UNSTARTED) {
		count_interp(lang, KILN_INTERP_WALKS);
		w->it_frame = lang == KILN_LANG_PY ? py_first_frame(w, proc) : rb_first_frame(w, proc);
		w->it_state = w->it_frame ? IT_ACTIVE : IT_OFF;
		if (!w->it_frame)
			goto back;
	}
	if (!w->it_frame && !w->it_leftover) {
		/* an eval-loop frame beyond the thread's interpreter frames */
		count_interp(lang, KILN_INTERP_CHAIN_SHORT);
		goto back;
	}
	if (loop) {
		struct interp_loop l = { .w = w, .proc = proc, .r = IT_MORE };

		bpf_loop(KILN_INTERP_MAX_FRAMES, lang == KILN_LANG_PY ? py_loop_step : rb_loop_step,
			 &l, 0);
		r = l.r;
	} else {
		for (int i = 0; i < IT_FRAMES_PER_RUN && r == IT_MORE; i++)
			r = lang == KILN_LANG_PY ? py_step(w, proc) : rb_step(w, proc);
	}
	if (r == IT_STOP) {
		w->it_state = IT_OFF;
		/* what was emitted of this call stands in for its native frame */
		w->it_replaced = !w->it_leftover && w->it_emitted != w->it_call_start;
		goto back;
	}
	if (r == IT_MORE && w->it_frame) {
		if (w->tail_calls < WALK_TAIL_CALLS) {
			w->tail_calls++;
			bpf_tail_call(ctx, &walk_progs, KILN_PROG_PY + lang);
		}
		count_interp(lang, KILN_INTERP_LOOP_CAP);
		w->srec.stack.flags |= KILN_STACK_TRUNCATED;
		w->it_state = IT_OFF;
	}
	/* A call with no frame (sampled as the loop set its first one up)
	 * keeps its native frame. */
	w->it_replaced = !w->it_leftover && w->it_emitted != w->it_call_start;
back:
	if (w->it_leftover) {
		if (w->it_emitted != w->it_call_start)
			count_interp(lang, KILN_INTERP_LEFTOVER);
		finish_walk(w, loop);
		return 0;
	}
	/* the native frame stays when no interpreter frame replaced it (and
	 * is not handed to the walker again) */
	w->it_replaced = w->it_replaced ? IT_REPLACED : IT_KEPT;
	if (w->tail_calls < WALK_TAIL_CALLS) {
		w->tail_calls++;
		bpf_tail_call(ctx, &walk_progs, KILN_PROG_WALK);
	}
	w->srec.stack.flags |= KILN_STACK_TRUNCATED;
	finish_walk(w, loop);
	return 0;
}

/* Each with bpf_loop (the verifier checks one frame's step) or unrolled,
 * as the walker (sampler.c). */
SEC("perf_event")
int kiln_py(struct bpf_perf_event_data *ctx)
{
	return run_end(interp_run(ctx, KILN_LANG_PY, false));
}

SEC("perf_event")
int kiln_py_loop(struct bpf_perf_event_data *ctx)
{
	return run_end(interp_run(ctx, KILN_LANG_PY, true));
}

SEC("perf_event")
int kiln_rb(struct bpf_perf_event_data *ctx)
{
	return run_end(interp_run(ctx, KILN_LANG_RB, false));
}

SEC("perf_event")
int kiln_rb_loop(struct bpf_perf_event_data *ctx)
{
	return run_end(interp_run(ctx, KILN_LANG_RB, true));
}

/* Sets up the walk's interpreter for tgid (instance), if it runs one
 * user space checked: its eval loop's range and language. instance 0: no
 * facts to look for (the process maps no interpreter, or is walked with
 * its parent's mappings). */
static __always_inline void interp_setup(struct walk *w, __u32 tgid, __u32 instance)
{
	struct kiln_py_proc *py;
	struct kiln_rb_proc *rb;

	w->it_frame = 0;
	w->it_state = IT_UNSTARTED;
	w->it_emitted = 0;
	w->it_instance = 0;
	w->it_call_start = 0;
	w->it_replaced = 0;
	w->it_leftover = 0;
	w->it_pending = 0;
	w->it_new_code = 0;
	w->it_eval_len = 0;
	if (!instance)
		return;
	py = bpf_map_lookup_elem(&py_procs, &tgid);
	if (py && py->instance == instance) {
		w->it_lang = KILN_LANG_PY;
		w->it_eval_start = py->eval_start;
		w->it_eval_len = py->eval_end - py->eval_start;
		w->it_instance = instance;
		return;
	}
	rb = bpf_map_lookup_elem(&rb_procs, &tgid);
	if (rb && rb->instance == instance) {
		w->it_lang = KILN_LANG_RB;
		w->it_eval_start = rb->eval_start;
		w->it_eval_len = rb->eval_end - rb->eval_start;
		w->it_instance = instance;
	}
}

/* The instance pid's mappings are loaded for, when it is the image pid
 * runs now (not one before an exec, or a process that had the pid before);
 * 0 when not. *flags: the entry's KILN_PROC_*. own: pid's sampled task,
 * whose image (exec, its leader's start) the entry remembers once checked
 * (*image then true): its next samples skip the instances lookup, a hash
 * map in vmalloc'd memory (~400 ns a sample here, its bucket and element
 * cold). An exec changes the exec count, a reused pid the start time;
 * NULL own: pid is the sampled process's parent. */
static __always_inline __u32 loaded_instance(__u32 pid, struct task_struct *own, __u64 exec,
					     __u64 start, __u32 *flags, bool *image)
{
	struct kiln_proc_maps *pm = bpf_map_lookup_elem(&proc_maps, &pid);
	struct instance *inst;

	*flags = 0;
	*image = false;
	if (!pm)
		return 0;
	*flags = pm->flags;
	if (own && pm->seen_exec == exec && pm->seen_start == start) {
		*image = true;
		return pm->instance;
	}
	inst = bpf_map_lookup_elem(&instances, &pid);
	if (!inst || inst->id != pm->instance)
		return 0;
	/* (the instance may still be the one before an exec in progress: its
	 * mm is not the task's then) */
	if (own && inst->mm == (__u64)BPF_CORE_READ(own, mm)) {
		pm->seen_start = start;
		pm->seen_exec = exec;
		*image = true;
	}
	return pm->instance;
}

/* The sampled process's own loaded instance as loaded_instance finds it;
 * once it is known to be the task's image, this CPU remembers it
 * (w->procs) for the image's next samples. */
static __always_inline __u32 own_instance(struct walk *w, __u32 tgid, struct task_struct *task,
					  __u32 *flags)
{
	struct proc_memo *pmm = &w->procs[tgid & (PROC_MEMO - 1)];
	__u64 exec = image_exec_id(task);
	__u64 start = BPF_CORE_READ(task, group_leader, start_time);
	__u32 gen = maps_gen, instance;
	bool image;

	if (pmm->instance && pmm->tgid == tgid && pmm->exec == exec && pmm->start == start &&
	    pmm->gen == gen) {
		*flags = pmm->flags;
		count_unwind(KILN_UW_PROC_MEMO);
		return pmm->instance;
	}
	instance = loaded_instance(tgid, task, exec, start, flags, &image);
	if (instance && image) {
		pmm->tgid = tgid;
		pmm->exec = exec;
		pmm->start = start;
		pmm->instance = instance;
		pmm->flags = *flags;
		pmm->gen = gen;
	}
	return instance;
}

/* The instance the sampled process's user stack is walked with tables
 * for, and in *maps_pid whose mappings: its own; or, for a forked process
 * whose own are not loaded yet, its parent's, the same image at the same
 * addresses (the workers of a preforking server, from their first
 * sample). 0: not walked. The interpreter walkers read only a process's
 * own facts. */
static __always_inline __u32 tables_instance(struct walk *w, __u32 tgid, struct task_struct *task,
					     __u32 *maps_pid, __u32 *flags)
{
	__u32 own = own_instance(w, tgid, task, flags), parent;
	bool image;

	*maps_pid = tgid;
	if (own || !fork_flags(task))
		return own;
	parent = BPF_CORE_READ(task, group_leader, real_parent, tgid);
	*maps_pid = parent;
	return loaded_instance(parent, NULL, 0, 0, flags, &image);
}

/* Word indices in the user register set (x86-64 struct pt_regs, arm64
 * struct user_pt_regs). */
#ifdef __TARGET_ARCH_arm64
#define REG_FP 29
#define REG_LR 30
#define REG_SP 31
#define REG_PC 32
#define REG_MODE 33
#else
#define REG_FP 4
#define REG_PC 16
#define REG_MODE 17
#define REG_SP 19
#endif

/* Whether the sample interrupted user mode, from its registers, read by
 * their place in the user ABI's register set, 8 bytes at a time:
 * perf_event contexts allow only full-width loads, and field sizes differ
 * between kernels' BTF (x86 cs is 2 bytes on 6.1, a union since), so no
 * CO-RE access here. */
static __always_inline bool sampled_in_user(struct bpf_perf_event_data *ctx)
{
	const volatile __u64 *r = (const volatile __u64 *)ctx;

#ifdef __TARGET_ARCH_arm64
	return (r[REG_MODE] & 0xf) == 0;        /* pstate: EL0t */
#else
	return r[REG_MODE] & 3;                 /* cs: ring 3 */
#endif
}

/* The user registers of the sampled task: from the sample when it
 * interrupted user mode, else from where the kernel saved them on entry.
 * Either way pc is looked up as it is: after a page fault it is the
 * faulting instruction, and after a system call the instruction past it,
 * in the same function in practice. 0, or -1: none. */
static __always_inline int user_regs(struct bpf_perf_event_data *ctx, struct task_struct *task,
				     struct walk *w)
{
	const volatile __u64 *r = (const volatile __u64 *)ctx;
	struct pt_regs *regs;

	w->lr_known = 0;
	if (sampled_in_user(ctx)) {
		w->pc = r[REG_PC];
		w->sp = r[REG_SP];
		w->fp = r[REG_FP];
#ifdef REG_LR
		w->lr = r[REG_LR];
		w->lr_known = 1;
#endif
		return 0;
	}
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	else
		regs = (struct pt_regs *)((__u64)BPF_CORE_READ(task, stack) + KERNEL_THREAD_SIZE -
					  bpf_core_type_size(struct pt_regs));
	w->pc = PT_REGS_IP_CORE(regs);
	w->sp = PT_REGS_SP_CORE(regs);
	w->fp = PT_REGS_FP_CORE(regs);
#ifdef REG_LR
	w->lr = PT_REGS_RET_CORE(regs);         /* arm64: x30 */
	w->lr_known = 1;
#endif
	return w->sp ? 0 : -1;
}

/* The kernel's stack (user: false) or frame-pointer user stack into
 * w->srec.stack. A sample that interrupted user mode has no kernel stack: not
 * asked for (at 97 Hz the call cost about 2 us of a sample's 16-20 here,
 * each sample finding caches and TLBs cold). */
static __always_inline void get_stack(struct bpf_perf_event_data *ctx, struct walk *w,
				      bool user)
{
	long n = !user && sampled_in_user(ctx) ? 0 :
		 bpf_get_stack(ctx, w->srec.stack.ips, sizeof(w->srec.stack.ips),
			       user ? BPF_F_USER_STACK : 0);

	w->srec.stack.flags = 0;
	w->srec.stack.len = n > 0 ? (__u32)n / sizeof(__u64) : 0;
}

/* One frame of a frame-pointer user stack walked by the program itself
 * (bpf_loop programs): pc recorded and hashed, then the caller's frame
 * record read while the chain is sane as fp_step has it. bpf_get_stack's
 * walk of the same chains took 3 to 4 times as long here (timed in the
 * program on make bench's load: 4.7-6.3 us a stack of a few frames
 * against 1.7), and follows any chain, garbage too. 1: the stack ends. */
static long fp_frame_cb(__u32 i, void *data)
{
	struct walk *w = *(struct walk **)data;
	__u32 n = w->srec.stack.len;
	__u64 frame[2];

	if (n >= KILN_MAX_STACK_DEPTH) {
		w->srec.stack.flags |= KILN_STACK_TRUNCATED;
		return 1;
	}
	w->srec.stack.ips[n] = w->pc;
	w->srec.stack.len = n + 1;
	w->hash = hash_mix(w->hash, w->pc);
	if (w->fp == 0 || (w->fp & 7) || w->fp < w->sp || w->fp - w->sp >= FP_MAX_SPAN ||
	    bpf_probe_read_user(frame, sizeof(frame), (const void *)w->fp))
		return 1;
	w->sp = w->fp + 16;
	w->fp = frame[0];
	w->pc = strip_pac(frame[1]);
	return 0;
}

/* The frame-pointer user stack of a process walked without tables, sent:
 * by the program (loop) or by the kernel. -1 when the ring is full. */
static __always_inline int fp_stack(struct bpf_perf_event_data *ctx, struct task_struct *task,
				    struct walk *w, bool loop)
{
	if (!loop) {
		get_stack(ctx, w, true);
		return store_stack(w, &w->rec.key.ustack, false);
	}
	w->srec.stack.len = 0;
	w->srec.stack.flags = 0;
	w->hash = STACK_HASH_SEED;
	if (user_regs(ctx, task, w) == 0)
		bpf_loop(KILN_MAX_STACK_DEPTH, fp_frame_cb, &w, 0);    /* (a stack pointer) */
	return store_hashed(w, hash_final(w->hash, w->srec.stack.flags), &w->rec.key.ustack);
}

/* Whether kiln_mmap gathered the mappings of the image tgid runs (its
 * exec count and start): then copied into w->early_maps, where the walk
 * reads them (one map for the verifier to follow, never NULL). */
static __always_inline bool early_known(struct task_struct *task, __u32 tgid, struct walk *w)
{
	const struct kiln_early_maps *em = bpf_map_lookup_elem(&early_maps, &tgid);

	if (!em || em->exec_id != image_exec_id(task) ||
	    em->start_time != BPF_CORE_READ(task, group_leader, start_time))
		return false;
	__builtin_memcpy(&w->early_maps, em, sizeof(*em));
	return true;
}

static __always_inline int sample(struct bpf_perf_event_data *ctx, bool loop)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u32 generation = gen, g = generation & 1, zero = 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	bool unloaded = false;
	struct walk *w;

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
	w = bpf_map_lookup_elem(&walks, &zero);
	if (!w)
		return 0;
	__builtin_memset(&w->rec.key, 0, sizeof(w->rec.key));
	w->gen = g;
	w->rec.gen = generation;
	if (w->recent_gen != generation) {
		__builtin_memset(w->recent, 0, sizeof(w->recent));
		w->recent_gen = generation;
	}
	w->rec.key.pid = tgid;
	w->rec.key.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(&w->rec.key.comm, sizeof(w->rec.key.comm));

	get_stack(ctx, w, false);
	/* (most samples interrupted user mode: no kernel stack to hash) */
	if (w->srec.stack.len && store_stack(w, &w->rec.key.kstack, loop)) {
		count_outcome(g, KILN_DROP_RING_FULL);
		return 0;
	}

	if (BPF_CORE_READ(task, flags) & PF_KTHREAD || tid == 0) {
		/* no user stack */
	} else if (!sampled_in_user(ctx) && user_regs_stale(task, tgid)) {
		count_event(KILN_EV_EXEC_USER_SKIPPED);
	} else {
		__u32 flags, tabled = tables_instance(w, tgid, task, &w->maps_pid, &flags);
		/* not read yet: walked through the mappings kiln_mmap saw */
		bool early = !tabled && loop && early_walks && early_known(task, tgid, w);

		if (w->maps_pid == tgid)
			w->rec.key.instance = tabled;

		if ((tabled || early) && user_regs(ctx, task, w) == 0) {
			count_unwind(KILN_UW_WALKS);
			w->early = early;
			w->early_start = 0;
			w->early_end = 0;
			w->maps_instance = tabled;
			if (early) {
				count_unwind(KILN_UW_EARLY);
				w->maps_pid = KILN_PROC_MAPS_NONE;
				w->maps_instance = 0;
				flags = 0;
			}
			w->tail_calls = 0;
			w->memo_hits = 0;
			w->map_hits = 0;
			w->table_frames = 0;
			w->fp_frames = 0;
			w->pc_is_ra = 0;
			interp_setup(w, tgid, w->maps_pid == tgid && (flags & KILN_PROC_INTERP) ?
						      tabled : 0);
			w->srec.stack.len = 0;
			w->srec.stack.flags = KILN_STACK_TABLES;
			w->hash = STACK_HASH_SEED;
			bpf_tail_call(ctx, &walk_progs, KILN_PROG_WALK);
			/* no walker program: frame pointers below */
		}
		count_unwind(KILN_UW_NO_PROC);
		unloaded = !tabled;
		if (fp_stack(ctx, task, w, loop)) {
			count_outcome(g, KILN_DROP_RING_FULL);
			return 0;
		}
	}
	if (loop)
		kiln_commit(w, tid, unloaded);
	else
		commit(w, task, tid, unloaded, false);
	return 0;
}

/* User space loads one of the two (sampler.c: kiln_sample_loop where the
 * kernel has bpf_loop, as for the walkers) and attaches it to every CPU's
 * perf event. */
SEC("perf_event")
int kiln_sample(struct bpf_perf_event_data *ctx)
{
	run_begin();
	return run_end(sample(ctx, false));
}

SEC("perf_event")
int kiln_sample_loop(struct bpf_perf_event_data *ctx)
{
	run_begin();
	return run_end(sample(ctx, true));
}

/* A profiled process's children are profiled too (record -- COMMAND). */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(kiln_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
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
 * (and a fresh snapshot of the new program's mappings). An instance of the
 * new mm already is the new program's: its first sample came after the mm
 * switch. */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(kiln_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct instance *found = bpf_map_lookup_elem(&instances, &tgid);

	if (!found || found->mm == (__u64)BPF_CORE_READ(p, mm))
		return 0;
	send_event(KILN_EVENT_EXEC, p, found->id);
	bpf_map_delete_elem(&instances, &tgid);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(kiln_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct instance *found;

	/* Only the last thread of the group ends the process. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (early_walks)
		bpf_map_delete_elem(&early_maps, &tgid);
	if (filter_enabled)
		bpf_map_delete_elem(&filter, &tgid);
	found = bpf_map_lookup_elem(&instances, &tgid);
	if (!found)
		return 0;
	send_event(KILN_EVENT_EXIT, p, found->id);
	bpf_map_delete_elem(&instances, &tgid);
	return 0;
}

/* Every move of a task between cgroups, and every rename of one, ends what
 * the cgroup keys of earlier events stood for. */
static __always_inline int cgroups_changed(void)
{
	__sync_fetch_and_add(&cgroup_epoch, 1);
	return 0;
}

SEC("raw_tp/cgroup_attach_task")
int BPF_PROG(kiln_cgroup_attach, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	return cgroups_changed();
}

SEC("raw_tp/cgroup_transfer_tasks")
int BPF_PROG(kiln_cgroup_transfer, struct cgroup *dst, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	return cgroups_changed();
}

SEC("raw_tp/cgroup_rename")
int BPF_PROG(kiln_cgroup_rename, struct cgroup *cgrp, const char *path)
{
	return cgroups_changed();
}

/* A v1 hierarchy mounted or gone: a line more or less in every text. */
SEC("raw_tp/cgroup_setup_root")
int BPF_PROG(kiln_cgroup_setup_root, struct cgroup_root *root)
{
	return cgroups_changed();
}

SEC("raw_tp/cgroup_destroy_root")
int BPF_PROG(kiln_cgroup_destroy_root, struct cgroup_root *root)
{
	return cgroups_changed();
}

/* An inode's mtime in ns, wherever this kernel keeps it: i_mtime_sec and
 * i_mtime_nsec since 6.7, __i_mtime in 6.6, i_mtime before. */
struct inode___mtime_sec {
	time64_t i_mtime_sec;
	u32 i_mtime_nsec;
} __attribute__((preserve_access_index));
struct inode___mtime_66 {
	struct timespec64 __i_mtime;
} __attribute__((preserve_access_index));
struct inode___mtime_ts {
	struct timespec64 i_mtime;
} __attribute__((preserve_access_index));

static __always_inline __u64 inode_mtime_ns(struct inode *inode)
{
	struct timespec64 ts;

	if (bpf_core_field_exists(struct inode___mtime_sec, i_mtime_sec))
		return (__u64)BPF_CORE_READ((struct inode___mtime_sec *)inode, i_mtime_sec) *
			       1000000000ull +
		       BPF_CORE_READ((struct inode___mtime_sec *)inode, i_mtime_nsec);
	if (bpf_core_field_exists(struct inode___mtime_66, __i_mtime))
		ts = BPF_CORE_READ((struct inode___mtime_66 *)inode, __i_mtime);
	else
		ts = BPF_CORE_READ((struct inode___mtime_ts *)inode, i_mtime);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* kiln_mmap's scan of the mappings kept, one a call of bpf_loop (an
 * unrolled scan's paths are more than the 6.1 verifier follows). */
struct early_add {
	struct kiln_early_maps *em;
	__u64 start, end;
	__u32 n, slot, free;
};

static long early_overlap(__u32 i, void *data)
{
	struct early_add *a = data;
	struct kiln_early_map *e;

	if (i >= a->n || i >= KILN_EARLY_MAPS)
		return 1;
	e = &a->em->maps[i];
	if (e->start < a->end && a->start < e->end) {
		if (a->slot == a->n)
			a->slot = i;
		else
			e->start = e->end = 0;
	} else if (e->start == e->end && a->free == a->n) {
		a->free = i;
	}
	return 0;
}

/* Every executable file mapping the kernel makes, kept by process for
 * early walks: uprobe_mmap is called for each new file mapping once it is
 * set up (the exec'd program's and its loader's too, into the new address
 * space) and for each part of one split or merged. A mapping over ones
 * kept (MAP_FIXED, a library loaded where another was, a split) takes
 * their place, and a slot they left is taken again; past KILN_EARLY_MAPS
 * the rest are left out (their frames take frame-pointer steps), as are
 * the mappings of a process early_maps has no room for: each counted.
 * Unsynchronized: two threads mapping at once may lose one, which costs
 * that file's frames the same. Not perf_event_mmap: it runs for every
 * mapping, anonymous ones, mprotect and brk too, thousands of times a
 * second in a program that allocates (a file mapping mprotect makes
 * executable later is not seen). */
SEC("kprobe/uprobe_mmap")
int BPF_KPROBE(kiln_mmap, struct vm_area_struct *vma)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct kiln_early_maps *em;
	struct kiln_early_map m;
	struct early_add add;
	struct inode *inode;
	struct file *file;
	__u32 zero = 0, slot, n, tgid;
	__u64 mm, start_time, exec_id;

	if (!early_walks || !(BPF_CORE_READ(vma, vm_flags) & VM_EXEC))
		return 0;
	file = BPF_CORE_READ(vma, vm_file);
	mm = (__u64)BPF_CORE_READ(vma, vm_mm);
	if (!file || !mm || mm != (__u64)BPF_CORE_READ(task, mm))
		return 0;
	tgid = BPF_CORE_READ(task, tgid);
	start_time = BPF_CORE_READ(task, group_leader, start_time);
	exec_id = image_exec_id(task);
	em = bpf_map_lookup_elem(&early_maps, &tgid);
	if (!em) {
		const struct kiln_early_maps *none = bpf_map_lookup_elem(&early_zero, &zero);

		if (!none)
			return 0;
		/* (its low 32 bits: 6.1 answers -E2BIG zero-extended) */
		if ((int)bpf_map_update_elem(&early_maps, &tgid, none, BPF_NOEXIST) == -E2BIG)
			count_unwind(KILN_UW_EARLY_NO_ROOM);
		em = bpf_map_lookup_elem(&early_maps, &tgid);
		if (!em)
			return 0;
	}
	if (em->exec_id != exec_id || em->start_time != start_time) {
		/* a new image (an exec), or a process whose exit was missed */
		em->n = 0;
		em->exec_id = exec_id;
		em->start_time = start_time;
	}
	m.start = BPF_CORE_READ(vma, vm_start);
	m.end = BPF_CORE_READ(vma, vm_end);
	m.pgoff = (__u64)BPF_CORE_READ(vma, vm_pgoff) << page_shift;
	inode = BPF_CORE_READ(file, f_inode);
	m.file.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	m.file.ino = BPF_CORE_READ(inode, i_ino);
	m.file.size = BPF_CORE_READ(inode, i_size);
	m.file.mtime_ns = inode_mtime_ns(inode);
	/* the first mapping it overlaps takes it, the others go */
	n = em->n;
	add = (struct early_add){
		.em = em, .start = m.start, .end = m.end, .n = n, .slot = n, .free = n
	};
	bpf_loop(KILN_EARLY_MAPS, early_overlap, &add, 0);
	slot = add.slot == n ? add.free : add.slot;
	if (slot >= KILN_EARLY_MAPS) {
		count_unwind(KILN_UW_EARLY_MAPS_LEFT);
		return 0;
	}
	/* (masked past the compiler: 6.1 knows slot's low 32 bits only, and
	 * its product with the size then reaches past the value) */
	barrier_var(slot);
	em->maps[slot & (KILN_EARLY_MAPS - 1)] = m;
	if (slot == n)
		em->n = n + 1;
	return 0;
}
