// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: the BPF side sends stacks through the events ring, and counts
 * samples by key in slots of its CPU (sample_counts), each tagged with the
 * generation `gen` it counts in; a slot another key needs is sent through
 * the ring. User space adds the records up in that generation's table as
 * it reads the ring. A drain flips gen, waits one RCU grace period
 * (membarrier(MEMBARRIER_CMD_GLOBAL) runs synchronize_rcu, and perf-event
 * programs run with interrupts off, inside an RCU read-side section), so
 * no program still writes the old generation, reads the ring to its end,
 * then the old generation's slots (and clears them), and hands the old
 * table over. The programs' counters only grow: a drain reports the
 * difference of its generation's outcomes, no sample counted twice. (The
 * ring holds what was sent, not a preallocated stack map of 1 KiB an
 * entry.)
 *
 * The unwind maps (rows, rules, tables) are BPF_F_MMAPABLE arrays: user
 * space writes tables straight into the memory the walker reads. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/membarrier.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/clock.h"
#include "core/log.h"
#include "sampler/core_btf.h"
#include "sampler/sampler.h"
#include "sampler/sideband.h"
#include "sampler.skel.h"

const char *const kiln_outcome_names[KILN_OUTCOME_COUNT] = {
	[KILN_SAMPLED] = "sampled",
	[KILN_SKIP_IDLE] = "idle",
	[KILN_SKIP_FILTERED] = "filtered",
	[KILN_SKIP_LATE] = "after_window",
	[KILN_DROP_STACK_FULL] = "stack_map_full",
	[KILN_DROP_COUNTS_FULL] = "counts_map_full",
	[KILN_DROP_RING_FULL] = "ring_full",
};

struct sampler {
	struct sampler_bpf *skel;
	struct ring_buffer *rb;
	struct sampler_hooks hooks;
	struct sideband *sb;            /* NULL: no side-band records */
	int epfd;                       /* the rings' epoll fds and wakefd */
	int wakefd;                     /* an eventfd: sampler__wake */
	/* kernel memory of the maps allocated whole at load (0: not read yet;
	 * those filled as they go are read at each sampler__maps_bytes) */
	uint64_t fixed_maps_bytes;
	struct bpf_link **links;
	unsigned nlinks;
	struct bpf_link *mmap_link;     /* kiln_mmap's kprobe, NULL: none */
	unsigned ncpus;         /* possible CPUs, for per-CPU values */
	unsigned online;
	unsigned *cpu_ids;       /* online CPUs */
	unsigned frequency;
	struct sample_table tables[2];  /* by generation & 1 */
	uint64_t ring_bytes;
	struct sampler_unwind_maps uw;
	bool have_unwind;
	/* unwind_rows' chunks (include/kiln/unwind.h), each created when a
	 * table first needs it (sampler__rows_chunk); -1: not yet. Chunk 0 is
	 * made before the load, for libbpf to take as the inner map. */
	int *row_chunks;
	uint32_t nchunks, chunk_entries;
	uint32_t chunks_held;
	uint64_t chunk_bytes;           /* one chunk's kernel memory */
	/* the native walker, or NULL; the sampling program */
	struct bpf_program *walker;
	struct bpf_program *sample;
	bool loop;                      /* the bpf_loop variants of the programs */
	/* The interpreter walkers (KILN_PROG_PY, _RB), each loaded only once a
	 * process of its language is seen (sampler__load_walker): a second
	 * copy of the object sharing the first's maps, that program alone
	 * loaded; NULL: not yet. Their verification was a third of every
	 * start's. interp_err: its load failed (-errno), not tried again. */
	struct sampler_bpf *interp[KILN_PROG_COUNT];
	int interp_err[KILN_PROG_COUNT];
	int cache_fd;                   /* the kernel types' directory (dup), or -1 */
	struct kiln_counters *percpu;   /* the counters, a value each possible CPU */
	struct kiln_sample_counts *counted; /* a generation's sample slots, likewise */
	/* The outcome counters' sums at each generation's last drain: the
	 * programs only add to them, a drain takes the difference */
	uint64_t outcomes_drained[2][KILN_OUTCOME_COUNT];
	struct core_btf_stats btf;
};

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v && r < (1u << 31))
		r <<= 1;
	return r;
}

#define RING_SECONDS 8
#define RING_MIN_BYTES (1u << 20)
#define RING_MAX_BYTES (1u << 30)

static uint32_t ring_default_bytes(unsigned cpus, unsigned hz)
{
	uint64_t b = (uint64_t)cpus * hz * RING_SECONDS * 128;

	return b < RING_MIN_BYTES ? RING_MIN_BYTES : b > RING_MAX_BYTES ? RING_MAX_BYTES :
									  (uint32_t)b;
}

/* Reads a CPU list such as "0-3,8" (sysfs format) into cpus[], at most max
 * entries. Returns the number read, or -errno. */
static int read_cpu_list(const char *path, unsigned *cpus, unsigned max)
{
	char buf[4096], *p = buf, *end;
	FILE *f = fopen(path, "re");
	unsigned n = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	while (*p && *p != '\n') {
		unsigned long lo = strtoul(p, &end, 10), hi = lo;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			hi = strtoul(p + 1, &end, 10);
			if (end == p + 1 || hi < lo)
				return -EINVAL;
			p = end;
		}
		for (unsigned long c = lo; c <= hi && n < max; c++)
			cpus[n++] = (unsigned)c;
		if (*p == ',')
			p++;
	}
	return (int)n;
}

static int open_cpu_clock(unsigned cpu, unsigned hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = hz,
	};
	int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Whether libbpf said a program failed to load: a verifier's E2BIG (a
 * program too large for it) is then no map's (libbpf unloads it all
 * before it returns, so the stage is told by its message). */
static bool prog_refused;
static libbpf_print_fn_t outer_print;

static int load_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (strstr(fmt, "prog '%s': failed to load"))
		prog_refused = true;
	return outer_print ? outer_print(level, fmt, ap) : 0;
}

static int load_programs(struct sampler_bpf *skel)
{
	int err;

	prog_refused = false;
	outer_print = libbpf_set_print(load_print);
	err = sampler_bpf__load(skel);
	libbpf_set_print(outer_print);
	return err;
}

/* (EACCES is the verifier's answer to a program it cannot prove safe:
 * preflight__check saw the capabilities before) */
static void explain_load_error(int err)
{
	if (err == -EPERM)
		pr_error("the kernel refused to load the BPF program (%s): run kiln as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE (on kernels before 5.11 also raise the locked-memory limit: ulimit -l unlimited)",
			 strerror(-err));
	else if (err == -E2BIG && prog_refused)
		pr_error("this kernel's verifier found the BPF program too large (%s): --unwind-memory 0 loads it without the stack walkers (frame pointers only); run with -v to see the verifier's log",
			 strerror(-err));
	else if ((err == -ENOMEM || err == -E2BIG) && !prog_refused)
		pr_error("the kernel could not allocate the BPF maps (%s): lower --max-processes or --unwind-processes, or raise the memory limit (on kernels before 5.11 the locked-memory limit: ulimit -l unlimited)",
			 strerror(-err));
	else
		pr_error("the kernel rejected the BPF program (%s): kiln needs Linux " KILN_MIN_KERNEL " or newer with BTF; run with -v to see the verifier's log",
			 strerror(-err));
}

/* Program i (KILN_PROG_*) of k: its bpf_loop variant, or its unrolled one. */
static struct bpf_program *walker_program(struct sampler_bpf *k, unsigned i, bool loop)
{
	struct bpf_program *all[][2] = {
		{ k->progs.kiln_walk, k->progs.kiln_walk_loop },
		{ k->progs.kiln_py, k->progs.kiln_py_loop },
		{ k->progs.kiln_rb, k->progs.kiln_rb_loop },
	};

	return all[i][loop];
}

/* Which programs to load: the bpf_loop ones where the kernel has it (5.17:
 * the verifier checks one frame's step, one frame's hashing), else the
 * unrolled ones; no walkers without tables (the sampling program then
 * takes frame pointers). */
static void choose_programs(struct sampler *s, const struct sampler_opts *opts)
{
	struct sampler_bpf *k = s->skel;
	bool loop = !opts->no_bpf_loop &&
		    libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) == 1;

	s->loop = loop;
	/* Processes not read yet walked through the mappings kiln_mmap
	 * gathers (include/kiln/unwind.h): by kiln_walk_loop alone, and on
	 * x86-64 only so far (the matrix's arm64 guest, under TCG, spends
	 * its short processes in the loader: nothing proven there yet). Not
	 * on a kernel without kprobes: kiln_mmap could not be attached, and
	 * the walker's early-walk code would cost each start a sixth of its
	 * verification and each sample a lookup, for nothing. */
#ifdef __x86_64__
	bool early = loop && opts->unwind_rows;

	k->rodata->early_walks = early && sampler__kprobes();
	if (early && !k->rodata->early_walks)
		pr_info("this kernel has no kprobes (no /sys/bus/event_source/devices/kprobe): a process's samples before kiln reads it are walked by frame pointers");
#endif
	bpf_program__set_autoload(k->progs.kiln_mmap, k->rodata->early_walks);
	bpf_program__set_autoattach(k->progs.kiln_mmap, false);
	s->sample = loop ? k->progs.kiln_sample_loop : k->progs.kiln_sample;
	bpf_program__set_autoload(k->progs.kiln_sample, !loop);
	bpf_program__set_autoload(k->progs.kiln_sample_loop, loop);
	s->walker = opts->unwind_rows ? walker_program(k, KILN_PROG_WALK, loop) : NULL;
	/* the interpreter walkers: sampler__load_walker */
	for (unsigned i = 0; i < KILN_PROG_COUNT; i++) {
		for (int l = 0; l < 2; l++)
			bpf_program__set_autoload(walker_program(k, i, l), walker_program(k, i, l) == s->walker);
	}
}

/* Sizes instance ids for this host's CPUs; preallocates the hash maps
 * where the kernel wants it. */
static void adapt_to_kernel(struct sampler_bpf *k)
{
	struct bpf_map *m;
	int cpus = libbpf_num_possible_cpus();
	uint32_t bits = 0;

	while (cpus > 0 && (1u << bits) < (unsigned)cpus)
		bits++;
	k->rodata->instance_cpu_bits = bits;
	k->rodata->page_shift = (uint32_t)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
	if (sampler__lazy_hash_maps())
		return;
	bpf_object__for_each_map(m, k->obj)
		if (bpf_map__map_flags(m) & BPF_F_NO_PREALLOC)
			bpf_map__set_map_flags(m, bpf_map__map_flags(m) & ~BPF_F_NO_PREALLOC);
}

/* Program prog of k into walk_progs[i]. 0 or -errno. */
static int set_walker(struct sampler *s, __u32 i, struct bpf_program *prog)
{
	int fd = bpf_program__fd(prog);

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.walk_progs), &i, &fd, BPF_ANY))
		return -errno;
	pr_debug("sampler: walk_progs[%u]: %s", i, bpf_program__name(prog));
	return 0;
}

/* Bytes of an mmap()ed array map: its values, 8-byte aligned, in pages. */
static size_t array_bytes(const struct bpf_map *map)
{
	size_t stride = (bpf_map__value_size(map) + 7) & ~(size_t)7;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (stride * bpf_map__max_entries(map) + page - 1) & ~(page - 1);
}

static void *map_array(struct bpf_map *map, size_t *len)
{
	void *p;

	*len = array_bytes(map);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The kernel's charge for one map: "memlock" in its fdinfo (for a map
 * filled as it goes, what it holds now, from Linux 6.4; before, its
 * capacity). */
static uint64_t map_memlock(int fd)
{
	char path[64], buf[512];
	const char *at;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 0;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	at = strstr(buf, "\nmemlock:");
	return at ? strtoull(at + 9, NULL, 10) : 0;
}

/* A chunk of unwind_rows, not yet in it: its fd, or -errno. */
static int rows_chunk_create(struct sampler *s)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "kiln_rows", sizeof(__u32),
				sizeof(union kiln_row_pair), s->chunk_entries, &o);

	if (fd < 0)
		return -errno;
	if (!s->chunk_bytes)
		s->chunk_bytes = map_memlock(fd);
	s->chunks_held++;
	return fd;
}

int sampler__rows_chunk(struct sampler *s, uint32_t c)
{
	int fd, err;

	if (c >= s->nchunks)
		return -ERANGE;
	if (s->row_chunks[c] >= 0)
		return s->row_chunks[c];
	fd = rows_chunk_create(s);
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwind_rows), &c, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	s->row_chunks[c] = fd;
	return fd;
}

bool sampler__rows_chunk_drop(struct sampler *s, uint32_t c)
{
	if (c == 0 || c >= s->nchunks || s->row_chunks[c] < 0)
		return false;
	/* (the map's own reference goes after the walkers' RCU grace period) */
	if (bpf_map_delete_elem(bpf_map__fd(s->skel->maps.unwind_rows), &c))
		return false;
	close(s->row_chunks[c]);
	s->row_chunks[c] = -1;
	s->chunks_held--;
	return true;
}

/* Sizes unwind_rows for opts->unwind_rows elements (1 without walks: the
 * map must exist) and makes chunk 0, its inner map. 0 or -errno. */
static int rows_chunks_setup(struct sampler *s, struct sampler_bpf *k,
			     const struct sampler_opts *opts)
{
	uint32_t pairs = opts->unwind_rows ? opts->unwind_rows : 1;

	if (!s->row_chunks) {
		s->chunk_entries = pairs < KILN_ROWS_CHUNK ? pairs : KILN_ROWS_CHUNK;
		s->nchunks = (pairs + KILN_ROWS_CHUNK - 1) / KILN_ROWS_CHUNK;
		s->row_chunks = malloc(s->nchunks * sizeof(*s->row_chunks));
		if (!s->row_chunks)
			return -ENOMEM;
		for (uint32_t c = 0; c < s->nchunks; c++)
			s->row_chunks[c] = -1;
	}
	if (s->row_chunks[0] < 0) {
		int fd = rows_chunk_create(s);

		if (fd < 0)
			return fd;
		s->row_chunks[0] = fd;
	}
	bpf_map__set_max_entries(k->maps.unwind_rows, s->nchunks);
	return bpf_map__set_inner_map_fd(k->maps.unwind_rows, s->row_chunks[0]);
}

static void unmap_unwind(struct sampler *s)
{
	if (s->uw.rules)
		munmap(s->uw.rules, array_bytes(s->skel->maps.unwind_rules));
	if (s->uw.tables)
		munmap(s->uw.tables, array_bytes(s->skel->maps.exe_tables));
	s->have_unwind = false;
}

/* Maps the walker's small arrays into this process for user/unwind/ (the
 * rows are mapped a window of a table's range at a time, while it is
 * written, so they do not count in kiln's RSS). */
static int map_unwind(struct sampler *s, const struct sampler_opts *opts)
{
	size_t rules, tables;

	s->uw.rules = map_array(s->skel->maps.unwind_rules, &rules);
	s->uw.tables = map_array(s->skel->maps.exe_tables, &tables);
	s->have_unwind = true;
	if (!s->uw.rules || !s->uw.tables) {
		int err = -errno;

		pr_error("cannot map the unwind table maps: %s", strerror(errno));
		unmap_unwind(s);
		return err;
	}
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwind_rows), &(__u32){ 0 },
				&s->row_chunks[0], BPF_ANY)) {
		int err = -errno;

		pr_error("cannot set up the unwind rows: %s", strerror(errno));
		unmap_unwind(s);
		return err;
	}
	s->uw.tables_gen = &s->skel->bss->tables_gen;
	s->uw.maps_gen = &s->skel->bss->maps_gen;
	s->uw.py_procs_fd = bpf_map__fd(s->skel->maps.py_procs);
	s->uw.rb_procs_fd = bpf_map__fd(s->skel->maps.rb_procs);
	s->uw.procs_max = opts->unwind_processes;
	s->uw.rows_cap = 2 * opts->unwind_rows;        /* slots: two rows an element */
	s->uw.rule_stride = (sizeof(struct kiln_unwind_rule) + 7) & ~(size_t)7;
	s->uw.proc_maps_fd = bpf_map__fd(s->skel->maps.proc_maps);
	s->uw.files_fd = s->skel->rodata->early_walks ? bpf_map__fd(s->skel->maps.file_tables) : -1;
	s->uw.bytes = rules + tables;
	return 0;
}

/* Sets up the main copy of the object k: its constants, map sizes and
 * programs. */
static int setup_main(struct sampler *s, struct sampler_bpf *k, const void *ctx)
{
	const struct sampler_opts *opts = ctx;
	/* processes walked with tables: the per-process maps' entries */
	bool walks = opts->unwind_rows && opts->unwind_processes;
	uint32_t procs = walks ? opts->unwind_processes : 1;
	int err;

	s->skel = k;
	k->rodata->include_idle = opts->include_idle;
	k->rodata->filter_enabled = opts->filter;
	k->rodata->wake_on_new = opts->wake_on_new || opts->filter;
	/* Otherwise a process's tables load at the loop's next read, or
	 * sooner once it was sampled this often without them. */
	k->rodata->wake_unloaded_after =
		opts->unwind_rows && !k->rodata->wake_on_new ? SAMPLER_UNLOADED_WAKE : 0;
	k->rodata->ring_wakeup_bytes = s->ring_bytes / 2;
	bpf_map__set_max_entries(k->maps.instances,
				 opts->process_entries ? opts->process_entries : 32768);
	/* Without -p or a command to profile it is never read: a preallocated
	 * hash map of 65536 entries costs start-up time for nothing. */
	bpf_map__set_max_entries(k->maps.filter, opts->filter ? 65536 : 1);
	/* Without tables the walker is never entered: its maps stay minimal. */
	err = rows_chunks_setup(s, k, opts);
	if (err)
		return err;
	bpf_map__set_max_entries(k->maps.file_tables,
				 opts->unwind_rows ? KILN_UNWIND_SLOTS : 1);
	bpf_map__set_max_entries(k->maps.early_maps, walks ? procs / SAMPLER_EARLY_SHARE : 1);
	bpf_map__set_max_entries(k->maps.proc_maps, procs);
	bpf_map__set_max_entries(k->maps.py_procs, procs);
	bpf_map__set_max_entries(k->maps.rb_procs, procs);
	bpf_map__set_max_entries(k->maps.events, (uint32_t)s->ring_bytes);
	adapt_to_kernel(k);
	if (!opts->filter)
		bpf_program__set_autoload(k->progs.kiln_fork, false);
	choose_programs(s, opts);
	return 0;
}

/* Sets up the copy k of the object for the interpreter walker *ctx
 * (KILN_PROG_PY, _RB): the main copy's constants and maps, that program
 * alone loaded. */
static int setup_interp(struct sampler *s, struct sampler_bpf *k, const void *ctx)
{
	unsigned i = *(const unsigned *)ctx;
	struct bpf_program *p, *want = walker_program(k, i, s->loop);
	struct bpf_map *m;

	memcpy(k->rodata, s->skel->rodata, sizeof(*k->rodata));
	bpf_object__for_each_map(m, k->obj) {
		int fd = bpf_object__find_map_fd_by_name(s->skel->obj, bpf_map__name(m));
		int err = fd < 0 ? -ENOENT : bpf_map__reuse_fd(m, fd);

		if (err)
			return err;
	}
	bpf_object__for_each_program(p, k->obj)
		bpf_program__set_autoload(p, p == want);
	return 0;
}

/* A copy of the object opened against the kernel's types in btf (NULL:
 * all of the kernel's), set up and loaded; NULL and *err (-errno), which
 * explain_load_error explains when the object was opened (*opened). */
static struct sampler_bpf *open_object(struct sampler *s, const char *btf,
				       int (*setup)(struct sampler *, struct sampler_bpf *, const void *),
				       const void *ctx, int *err, bool *opened)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf);
	struct sampler_bpf *k = sampler_bpf__open_opts(&oo);

	*opened = k != NULL;
	if (!k) {
		*err = -errno;
		pr_error("cannot open the BPF object: %s", strerror(-*err));
		return NULL;
	}
	*err = setup(s, k, ctx);
	if (!*err)
		*err = load_programs(k);
	if (*err) {
		if (s->skel == k)
			s->skel = NULL;
		sampler_bpf__destroy(k);
		return NULL;
	}
	return k;
}

/* A copy of the BPF object (setup, ctx: open_object) loaded against the
 * cut of the kernel's types kept in s->cache_fd (core_btf.h), or, without
 * one or should libbpf or the kernel refuse what it gave, against the
 * kernel's own BTF (the cut then deleted, to be made again), counted in
 * *st. NULL and *err (-errno); *opened: the object was opened, so
 * explain_load_error can say why it did not load. */
static struct sampler_bpf *open_and_load(struct sampler *s,
					 int (*setup)(struct sampler *, struct sampler_bpf *,
						      const void *),
					 const void *ctx, struct core_btf_stats *st, int *err,
					 bool *opened)
{
	char path[64];
	size_t len;
	const void *obj = sampler_bpf__elf_bytes(&len);
	enum core_btf_result r = core_btf__prepare(s->cache_fd, obj, len, path, sizeof(path),
						   &st->types);
	bool cut = r == CORE_BTF_HIT || r == CORE_BTF_BUILT || r == CORE_BTF_REFUSED;
	struct sampler_bpf *k;

	st->hits += r == CORE_BTF_HIT;
	st->built += r == CORE_BTF_BUILT || r == CORE_BTF_REFUSED;
	st->whole += !cut;
	st->refused += r == CORE_BTF_REFUSED;
	k = open_object(s, cut ? path : NULL, setup, ctx, err, opened);
	if (!k && cut) {
		unlinkat(s->cache_fd, CORE_BTF_NAME, 0);
		k = open_object(s, NULL, setup, ctx, err, opened);
		if (k) {
			st->hits = st->built = st->types = 0;
			st->whole++;
			st->fallbacks++;
			pr_warn("the BPF object did not load with the kernel's types kept in %s: loaded with all of /sys/kernel/btf/vmlinux (the file is deleted, to be cut again)",
				CORE_BTF_NAME);
		}
	}
	return k;
}

int sampler__load_walker(struct sampler *s, unsigned i)
{
	uint64_t t0 = monotonic_ns();
	struct core_btf_stats st = { 0 };       /* the main copy's are the ones counted */
	bool opened;
	int err;

	if (!s->walker || i == KILN_PROG_WALK || i >= KILN_PROG_COUNT)
		return -EINVAL;
	if (s->interp[i] || s->interp_err[i])
		return s->interp_err[i];
	s->interp[i] = open_and_load(s, setup_interp, &i, &st, &err, &opened);
	if (s->interp[i])
		err = set_walker(s, i, walker_program(s->interp[i], i, s->loop));
	if (err) {
		s->interp_err[i] = err;
		pr_warn("the kernel did not load the %s walker (%s): run with -vv to see the verifier's log",
			bpf_program__name(walker_program(s->skel, i, s->loop)), strerror(-err));
		return err;
	}
	pr_debug("sampler: %s loaded in %.1f ms", bpf_program__name(walker_program(s->skel, i, s->loop)),
		 (monotonic_ns() - t0) / 1e6);
	return 0;
}

struct sampler *sampler__open(const struct sampler_opts *opts, int cache_dirfd, int *err)
{
	struct sampler *s = calloc(1, sizeof(*s));
	uint32_t per_interval, counts, stacks;
	bool opened;
	int online;

	*err = -ENOMEM;
	if (!s)
		return NULL;
	s->epfd = -1;
	s->cache_fd = cache_dirfd >= 0 ? fcntl(cache_dirfd, F_DUPFD_CLOEXEC, 0) : -1;
	/* before any other thread may call sampler__wake */
	s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wakefd < 0) {
		*err = -errno;
		pr_error("cannot create the loop's eventfd: %s", strerror(errno));
		goto fail;
	}
	s->ncpus = libbpf_num_possible_cpus();
	s->frequency = opts->frequency;
	s->cpu_ids = calloc(s->ncpus, sizeof(*s->cpu_ids));
	if (!s->cpu_ids)
		goto fail;
	online = read_cpu_list("/sys/devices/system/cpu/online", s->cpu_ids, s->ncpus);
	if (online <= 0) {
		*err = online < 0 ? online : -ENODEV;
		pr_error("cannot read the online CPUs from /sys/devices/system/cpu/online: %s",
			 strerror(-*err));
		goto fail;
	}
	s->online = (unsigned)online;

	/* The tables of a generation: default bounds hold two drains' time
	 * (SAMPLER_DRAIN_NS) of a busy host, every CPU sampling a distinct
	 * key at every tick, and half as many distinct stacks; stacks repeat
	 * far more. They grow as used: the bounds cost nothing until
	 * reached. The ring holds RING_SECONDS of samples that average 128
	 * bytes (64 a sample, and stacks): user space reads it at least
	 * every second, or sooner when it fills. */
	per_interval = s->online * opts->frequency * 2 * (SAMPLER_DRAIN_NS / 1000000000ull);
	counts = opts->counts_entries ? opts->counts_entries : roundup_pow2(per_interval);
	stacks = opts->stack_entries ? opts->stack_entries :
		roundup_pow2(per_interval / 2 > 4096 ? per_interval / 2 : 4096);
	if (counts < 1024)
		counts = 1024;
	sample_table__init(&s->tables[0], 0, counts, stacks);
	sample_table__init(&s->tables[1], 1, counts, stacks);
	s->ring_bytes = roundup_pow2(ring_default_bytes(s->online, opts->frequency));

	/* Refuse a kernel that lacks something before anything is loaded. */
	if (sampler__probe()) {
		*err = -EOPNOTSUPP;
		goto fail;
	}
	if (!open_and_load(s, setup_main, opts, &s->btf, err, &opened)) {
		if (opened)
			explain_load_error(*err);
		goto fail;
	}
	*err = s->walker ? set_walker(s, KILN_PROG_WALK, s->walker) : 0;
	if (*err) {
		pr_error("cannot set up the stack walker's tail calls: %s", strerror(-*err));
		goto fail;
	}
	pr_debug("sampler: %u CPUs online, sample keys %u, stacks %u per generation, ring %" PRIu64 " bytes",
		 s->online, counts, stacks, s->ring_bytes);

	s->percpu = calloc(s->ncpus, sizeof(*s->percpu));
	s->counted = calloc(s->ncpus, sizeof(*s->counted));
	s->links = calloc(s->online + 1, sizeof(*s->links));
	if (!s->percpu || !s->counted || !s->links) {
		*err = -ENOMEM;
		goto fail;
	}
	if (opts->unwind_rows) {
		*err = map_unwind(s, opts);
		if (*err)
			goto fail;
	}
	*err = 0;
	return s;
fail:
	sampler__destroy(s);
	return NULL;
}

int sampler__filter_add(struct sampler *s, pid_t pid, uint8_t flags)
{
	__u32 key = pid;

	if (bpf_map__update_elem(s->skel->maps.filter, &key, sizeof(key), &flags,
				 sizeof(flags), BPF_ANY))
		return -errno;
	return 0;
}

/* A sample or stack record into its generation's table (one of another
 * generation cannot come: the drain's conservation check would say so). */
static void take_record(struct sampler *s, uint32_t type, const void *data, size_t size)
{
	const struct kiln_sample_rec *r = data;   /* type and gen: either */
	struct sample_table *t;

	if (size < (type == KILN_REC_SAMPLE ? sizeof(*r) : KILN_STACK_REC_BYTES(1)))
		return;
	t = &s->tables[r->gen & 1];
	if (r->gen != t->gen)
		return;
	if (type == KILN_REC_SAMPLE) {
		struct drained_sample first;

		if (sample_table__add_sample(t, r, &first) && s->hooks.on_new_key)
			s->hooks.on_new_key(&first, s->hooks.ctx);
	} else
		sample_table__add_stack(t, data, size);
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	uint32_t type;

	if (size < sizeof(type))
		return 0;
	memcpy(&type, data, sizeof(type));
	if (type == KILN_REC_SAMPLE || type == KILN_REC_STACK) {
		take_record(s, type, data, size);
		return 0;
	}
	if (size < sizeof(struct kiln_event) || !s->hooks.on_event)
		return 0;
	/* A new process's mappings, or those a walk missed, may have come
	 * since the side-band was last read (this ring is read to its end,
	 * events written meanwhile included): read it first. */
	if (s->sb && (type == KILN_EVENT_NEW || type == KILN_EVENT_MAPS))
		sideband__consume(s->sb);
	s->hooks.on_event(data, s->hooks.ctx);
	return 0;
}

int sampler__attach(struct sampler *s, const struct sampler_hooks *hooks)
{
	int err;

	s->hooks = *hooks;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->rb)
		return -errno;
	/* Before the first sample, so that no process maps code unseen. */
	if (hooks->on_sideband) {
		s->sb = sideband__open(s->cpu_ids, s->online, SIDEBAND_PAGES, hooks->on_sideband,
				       hooks->ctx);
		if (!s->sb)
			pr_warn("no side-band perf records (%s): a process gone before its /proc files are read stays unsymbolized",
				strerror(errno));
	}
	/* One epoll instance over the rings' own and the wake eventfd,
	 * registered once: poll() would register and unregister them at
	 * every wait. */
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd,
		      &(struct epoll_event){ .events = EPOLLIN, .data.fd = s->wakefd }) ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->rb),
		      &(struct epoll_event){ .events = EPOLLIN, .data.fd = -1 }) ||
	    (s->sb && epoll_ctl(s->epfd, EPOLL_CTL_ADD, sideband__epoll_fd(s->sb),
				&(struct epoll_event){ .events = EPOLLIN, .data.fd = -1 }))) {
		err = -errno;
		pr_error("cannot wait on the event rings: %s", strerror(errno));
		return err;
	}
	/* Tracepoints first, so no process escapes between its first sample
	 * and its exit. */
	err = sampler_bpf__attach(s->skel);
	if (err) {
		pr_error("cannot attach the process lifecycle tracepoints: %s", strerror(-err));
		return err;
	}
	/* Without it, processes not read yet are walked by frame pointers;
	 * libbpf's own warnings about it are kept quiet: this line says it. */
	if (s->skel->rodata->early_walks) {
		libbpf_print_fn_t print = libbpf_set_print(NULL);
		int e;

		s->mmap_link = bpf_program__attach(s->skel->progs.kiln_mmap);
		e = errno;
		libbpf_set_print(print);
		if (!s->mmap_link)
			pr_info("no kprobe on uprobe_mmap (%s): a process's samples before kiln reads it are walked by frame pointers",
				strerror(e));
	}
	for (unsigned i = 0; i < s->online; i++) {
		unsigned cpu = s->cpu_ids[i];
		struct bpf_link *link;
		int fd = open_cpu_clock(cpu, s->frequency);

		if (fd < 0) {
			if (fd == -ENOENT || fd == -EOPNOTSUPP || fd == -ENODEV)
				pr_error("cpu %u: this kernel has no cpu-clock perf event (%s): kiln needs CONFIG_PERF_EVENTS",
					 cpu, strerror(-fd));
			else
				pr_error("cpu %u: cannot open the cpu-clock perf event (%s): run as root or with CAP_PERFMON, or lower kernel.perf_event_paranoid",
					 cpu, strerror(-fd));
			return fd;
		}
		/* The link owns fd from here: destroying it closes fd. */
		link = bpf_program__attach_perf_event(s->sample, fd);
		if (!link) {
			err = -errno;
			close(fd);
			pr_error("cpu %u: cannot attach the sampler to its perf event: %s",
				 cpu, strerror(-err));
			return err;
		}
		s->links[s->nlinks++] = link;
	}
	return 0;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	struct epoll_event evs[3];
	uint64_t woken;
	int n = epoll_wait(s->epfd, evs, 3, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	for (int i = 0; i < n; i++)
		if (evs[i].data.fd == s->wakefd && read(s->wakefd, &woken, sizeof(woken)) < 0)
			pr_debug("sampler: wake eventfd: %s", strerror(errno));
	/* The mappings first: a process's event may need those it made. */
	if (s->sb)
		sideband__consume(s->sb);
	n = ring_buffer__consume(s->rb);
	return n == -EINTR ? 0 : n;
}

void sampler__wake(struct sampler *s)
{
	uint64_t one = 1;

	/* (EAGAIN, the counter full, cannot be: each poll resets it) */
	if (s->wakefd >= 0 && write(s->wakefd, &one, sizeof(one)) < 0)
		pr_debug("sampler: wake eventfd: %s", strerror(errno));
}

/* Waits until no program can still be writing the previous generation. */
static void wait_for_programs(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	/* nohz_full hosts refuse MEMBARRIER_CMD_GLOBAL; a program runs for
	 * microseconds, so 10 ms is ample. */
	usleep(10000);
}

void sampler__counters(struct sampler *s, struct kiln_counters *out)
{
	const size_t words = sizeof(*out) / sizeof(uint64_t);
	uint32_t zero = 0;
	uint64_t *sum = (uint64_t *)out;

	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.counters), &zero, s->percpu))
		return;
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		const uint64_t *v = (const uint64_t *)&s->percpu[cpu];

		for (size_t i = 0; i < words; i++)
			sum[i] += v[i];
	}
}

/* The samples every CPU still counts in generation gen's slots (the
 * others went through the ring), then the slots cleared: no program
 * writes them before the next flip. */
static void take_counted(struct sampler *s, uint32_t gen)
{
	int fd = bpf_map__fd(s->skel->maps.sample_counts);
	uint32_t idx = gen & 1;

	if (bpf_map_lookup_elem(fd, &idx, s->counted)) {
		pr_warn("sampler: cannot read the samples counted in BPF: %s", strerror(errno));
		return;
	}
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
		for (unsigned i = 0; i < KILN_SAMPLE_SLOTS; i++) {
			const struct kiln_sample_rec *r = &s->counted[cpu].slots[i];

			if (r->count && r->gen == gen)
				take_record(s, KILN_REC_SAMPLE, r, sizeof(*r));
		}
	memset(s->counted, 0, s->ncpus * sizeof(*s->counted));
	if (bpf_map_update_elem(fd, &idx, s->counted, BPF_ANY))
		pr_warn("sampler: cannot clear the samples counted in BPF: %s", strerror(errno));
}

int sampler__drain(struct sampler *s, sample_fn fn, void *ctx, struct drain_stats *st)
{
	uint32_t gen = s->skel->bss->gen, old = gen & 1;
	uint64_t start = monotonic_ns();
	struct kiln_counters c;

	memset(st, 0, sizeof(*st));
	/* counted up, not toggled: the programs' note of the stacks stored
	 * in a generation (walk.recent) must not outlive it */
	__atomic_store_n(&s->skel->bss->gen, gen + 1, __ATOMIC_SEQ_CST);
	wait_for_programs();
	/* Every sample of the old generation, and every process one
	 * announced, is now in the ring: read it to its end. */
	if (s->sb)
		sideband__consume(s->sb);
	if (s->rb)
		ring_buffer__consume(s->rb);
	take_counted(s, gen);

	sampler__counters(s, &c);
	for (uint32_t i = 0; i < KILN_OUTCOME_COUNT; i++) {
		st->outcomes[i] = c.outcomes[old][i] - s->outcomes_drained[old][i];
		s->outcomes_drained[old][i] = c.outcomes[old][i];
	}
	sample_table__emit(&s->tables[old], fn, ctx, st);
	sample_table__reset(&s->tables[old], gen + 2);
	st->duration_ns = monotonic_ns() - start;
	return 0;
}

bool sampler__unwind_maps(struct sampler *s, struct sampler_unwind_maps *out)
{
	if (!s->have_unwind)
		return false;
	*out = s->uw;
	return true;
}

unsigned sampler__cpus(const struct sampler *s)
{
	return s->online;
}

bool sampler__sideband_stats(const struct sampler *s, struct sideband_stats *out, uint64_t *bytes)
{
	if (!s->sb)
		return false;
	sideband__stats(s->sb, out);
	*bytes = sideband__bytes(s->sb);
	return true;
}

const volatile uint64_t *sampler__cgroup_epoch(const struct sampler *s)
{
	return (const volatile uint64_t *)&s->skel->bss->cgroup_epoch;
}

uint64_t sampler__maps_bytes(struct sampler *s)
{
	const struct bpf_map *m;
	bool first = s->fixed_maps_bytes == 0;
	uint64_t grown = 0;

	bpf_object__for_each_map(m, s->skel->obj) {
		int fd = bpf_map__fd(m);

		if (fd < 0)
			continue;
		if (bpf_map__map_flags(m) & BPF_F_NO_PREALLOC)
			grown += map_memlock(fd);
		else if (first)
			s->fixed_maps_bytes += map_memlock(fd);
	}
	return s->fixed_maps_bytes + grown + sampler__rows_bytes(s);
}

uint64_t sampler__rows_bytes(const struct sampler *s)
{
	return (uint64_t)s->chunks_held * s->chunk_bytes;
}

uint64_t sampler__kernel_run_ns(struct sampler *s)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(bpf_program__fd(s->sample), &info, &len) ? 0 :
										 info.run_time_ns;
}

void sampler__reading_soon(struct sampler *s)
{
	__atomic_store_n(&s->skel->bss->key_wake_ns, monotonic_ns(), __ATOMIC_RELAXED);
}

void sampler__set_window_end(struct sampler *s, uint64_t mono_ns)
{
	__atomic_store_n(&s->skel->bss->window_end_ns, mono_ns, __ATOMIC_SEQ_CST);
}

void sampler__stop(struct sampler *s)
{
	for (unsigned i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	s->nlinks = 0;
	bpf_link__destroy(s->mmap_link);
	s->mmap_link = NULL;
}

void sampler__btf_stats(const struct sampler *s, struct core_btf_stats *out)
{
	*out = s->btf;
}

void sampler__destroy(struct sampler *s)
{
	if (!s)
		return;
	sampler__stop(s);
	if (s->have_unwind)
		unmap_unwind(s);
	sample_table__free(&s->tables[0]);
	sample_table__free(&s->tables[1]);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->wakefd >= 0)
		close(s->wakefd);
	ring_buffer__free(s->rb);
	sideband__free(s->sb);
	for (int i = 0; i < KILN_PROG_COUNT; i++)
		sampler_bpf__destroy(s->interp[i]);
	sampler_bpf__destroy(s->skel);
	for (uint32_t c = 0; s->row_chunks && c < s->nchunks; c++)
		if (s->row_chunks[c] >= 0)
			close(s->row_chunks[c]);
	free(s->row_chunks);
	if (s->cache_fd >= 0)
		close(s->cache_fd);
	free(s->links);
	free(s->cpu_ids);
	free(s->percpu);
	free(s->counted);
	free(s);
}
