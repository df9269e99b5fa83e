// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "pipeline.h"
#include "proc/proc.h"
#include "symbolize/deferred.h"
#include "symbolize/symbolizer.h"
#include "unwind/table_cache.h"
#include "unwind/unwinder.h"

#define MAX_SEEN_LABEL_SETS 1000
/* The loop reads its rings at least every POLL_SLOW_MS; every
 * POLL_FAST_MS with a filter (a profiled COMMAND's exit and the end of -p's
 * processes are noticed at a read) and while stacks with interpreter
 * frames keep arriving (their names are read from the living process as
 * each new stack arrives; the programs wake the loop for the first after
 * a quiet spell, bpf key_wakeup). Sooner when woken: the ring half full,
 * a walk's miss, a new process's event with wake_on_new, a process
 * sampled SAMPLER_UNLOADED_WAKE times before its tables loaded,
 * sampler__wake (a table built, a pull). Each wakeup costs 50-100 us of CPU on a VM whose exits
 * are slow. */
#define POLL_FAST_MS 100
#define POLL_SLOW_MS 1000
/* Samples held for debuginfod lookups and perf maps written at exit
 * (wait_for_names): about 16 000 stacks of 64 frames. */
#define PIPELINE_WAIT_BYTES (16u << 20)

struct pipeline {
	struct pipeline_opts o;
	struct sampler *sampler;
	struct proc_table *procs;
	struct symbolizer *sym;
	struct unwinder *uw;            /* NULL: frame pointers only */
	struct table_cache *cache;      /* unwind and symbol tables, kernel types; NULL: none */
	struct metadata *md;
	struct profile_set *current;
	struct profile_set *seen;
	struct frame *frames;
	struct labels labels, group;    /* scratch, reused */
	char *label_text;               /* o.label_frames: a set's text form */
	struct deferred held;           /* samples waiting for debug files, perf maps */
	uint64_t lookups_seen;          /* symbolizer__lookups_ended when last named */
	bool kernel_symbols_due;        /* attached: loaded at the first drain */
	bool interp_keys;               /* the last read brought names to read */
	struct pipeline_totals t;
};

static void on_mapped(void *ctx, const struct proc_snapshot *s)
{
	struct pipeline *p = ctx;

	symbolizer__mapped(p->sym, s);
	if (p->uw)
		unwinder__mapped(p->uw, s);
}

static void on_ended(void *ctx, const struct proc_snapshot *s)
{
	struct pipeline *p = ctx;

	if (p->uw)
		unwinder__ended(p->uw, s);
}

/* Where cgroup v2 is mounted on a host of v2 alone, and its magic
 * (linux/magic.h). */
#define CGROUP2_MOUNT "/sys/fs/cgroup"
#define CGROUP2_MAGIC 0x63677270

/* Everything but the sampler; p->o set. 0 or -errno. */
static int open_stages(struct pipeline *p, const char *proc_root)
{
	const struct pipeline_opts *opts = &p->o;
	struct statfs fs;

	p->procs = proc_table__new(proc_root, opts->max_processes, opts->max_mappings);
	p->sym = p->procs ? symbolizer__new(opts->cache_bytes, opts->cache_ttl_ns, opts->jit_bytes,
					       p->procs) : NULL;
	p->current = profile_set__new(opts->max_label_sets);
	p->seen = opts->track_label_sets ? profile_set__new(MAX_SEEN_LABEL_SETS) : NULL;
	/* the label set's frame first, with o.label_frames */
	p->frames = calloc(SYMBOLIZER_MAX_FRAMES + 1, sizeof(*p->frames));
	p->label_text = opts->label_frames ? malloc(LABELS_TEXT_MAX) : NULL;
	if (!p->procs || !p->sym || !p->current || (opts->track_label_sets && !p->seen) ||
	    !p->frames || (opts->label_frames && !p->label_text)) {
		pr_error("out of memory");
		return -ENOMEM;
	}
	/* cgroup v2 alone: a cgroup's file is the same for all its processes */
	if (p->sampler && statfs(CGROUP2_MOUNT, &fs) == 0 && fs.f_type == CGROUP2_MAGIC)
		proc_table__cache_cgroups(p->procs, CGROUP2_MOUNT);
	if (p->sampler)
		proc_table__use_cgroup_epoch(p->procs, sampler__cgroup_epoch(p->sampler));
	symbolizer__use_debuginfod(p->sym, &opts->debuginfod);
	deferred__init(&p->held, PIPELINE_WAIT_BYTES);
	proc_table__observe(p->procs, &(struct proc_observer){ on_mapped, on_ended, p });
	if (p->sampler && opts->sampler.unwind_rows) {
		struct unwinder_opts uo = { p->cache, !opts->no_python, !opts->no_ruby,
					    opts->unwind_table_ttl_ns };

		p->uw = unwinder__new(p->sampler, &uo);
		if (!p->uw) {
			pr_error("out of memory");
			return -ENOMEM;
		}
		unwinder__prewarm(p->uw);
		for (int i = 0; i < KILN_LANG_COUNT; i++)
			symbolizer__use_interp(p->sym, i, unwinder__interp(p->uw, i));
		symbolizer__use_table_cache(p->sym, p->cache);
	}
	p->md = metadata__new(&opts->metadata);
	if (!p->md)     /* metadata__new said why; EINVAL: a bad tag or label option */
		return errno == EINVAL ? -EINVAL : -ENOMEM;
	return 0;
}

/* The disk cache (--unwind-cache): the unwinder's tables, the
 * symbolizer's, and the kernel's types the sampler's BPF object reads.
 * NULL: none. */
static struct table_cache *open_cache(const struct pipeline_opts *opts)
{
	const char *dir = opts->unwind_cache;
	char buf[4096];

	if (!opts->unwind_cache_bytes)
		return NULL;
	if (!dir && table_cache__default_dir(buf, sizeof(buf)) == 0)
		dir = buf;
	/* the default may not be there to make: not worth a warning */
	return table_cache__open(dir, opts->unwind_cache_bytes, !opts->unwind_cache,
				 !opts->count_cache_on_write);
}

/* A pipeline with or without the sampler (with_sampler: BPF, /proc). */
static struct pipeline *pipeline_make(const struct pipeline_opts *opts, bool with_sampler,
				      const char *proc_root)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	int err = 0;

	if (!p) {
		pr_error("out of memory");
		errno = ENOMEM;
		return NULL;
	}
	p->o = *opts;
	if (with_sampler) {
		/* --max-processes bounds both the process table and the BPF map
		 * of processes: one option, the sampler's size follows it. */
		if (!p->o.sampler.process_entries)
			p->o.sampler.process_entries = (uint32_t)p->o.max_processes;
		p->o.sampler.unwind_rows = (uint32_t)(p->o.unwind_bytes /
						      sizeof(union kiln_row_pair));
		p->cache = open_cache(opts);
		/* sampler__open said why, whatever the errno behind it */
		p->sampler = sampler__open(&p->o.sampler, table_cache__dirfd(p->cache), &err);
		err = p->sampler ? 0 : -ENODEV;
	}
	if (!err)
		err = open_stages(p, proc_root);
	if (err) {
		pipeline__free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

struct pipeline *pipeline__open(const struct pipeline_opts *opts)
{
	return pipeline_make(opts, true, "/proc");
}

struct pipeline *pipeline__new(const struct pipeline_opts *opts, const char *proc_root)
{
	return pipeline_make(opts, false, proc_root);
}

int pipeline__filter_add(struct pipeline *p, pid_t pid, uint8_t flags)
{
	return sampler__filter_add(p->sampler, pid, flags);
}

static void on_event(const struct kiln_event *ev, void *ctx)
{
	struct pipeline *p = ctx;

	if (ev->type == KILN_EVENT_MAPS) {
		if (p->uw)
			unwinder__miss(p->uw, p->procs, ev->instance);
		return;
	}
	proc_table__on_event(p->procs, ev);
}

static void on_sideband(const struct sideband_record *r, void *ctx)
{
	struct pipeline *p = ctx;

	proc_table__on_sideband(p->procs, r);
}

/* Interpreter frames are named while their process lives: a Ruby frame's
 * method entry, for one, is known only from the stack. */
static void on_new_key(const struct drained_sample *d, void *ctx)
{
	struct pipeline *p = ctx;

	if (symbolizer__interp_stack(p->sym, d->key->instance, d->uips, d->un))
		p->interp_keys = true;
}

int pipeline__attach(struct pipeline *p)
{
	const struct sampler_hooks hooks = { .on_event = on_event, .on_sideband = on_sideband,
					     .on_new_key = on_new_key, .ctx = p };
	int err = sampler__attach(p->sampler, &hooks);

	/* Kernel symbols are first needed at the first drain: read there, so
	 * the first polls (new processes read, their tables loaded) are not
	 * kept waiting behind them (1-2 s on a slow machine). */
	p->kernel_symbols_due = !err;
	/* Opening the sampler may have parsed the kernel's BTF (~15 MB, freed
	 * since: to cut its types, once a boot, or without a cache
	 * directory): give those pages back to the system now, or the heap
	 * keeps them for the whole run. */
	malloc_trim(0);
	return err;
}

int pipeline__poll(struct pipeline *p, int timeout_ms)
{
	int err;

	if ((p->o.sampler.filter || p->interp_keys) && timeout_ms > POLL_FAST_MS)
		timeout_ms = POLL_FAST_MS;
	p->interp_keys = false;
	err = sampler__poll(p->sampler, unwinder__poll_ms(p->uw, timeout_ms));
	if (p->interp_keys)
		sampler__reading_soon(p->sampler);
	/* A library replaced in place: the samples read so far are named
	 * with the mappings they were taken in, then its process is read
	 * again (which re-arms its walks). */
	if (proc_table__replaced_due(p->procs)) {
		pipeline__drain(p);
		proc_table__refresh_replaced(p->procs);
	}

	proc_table__refresh_young(p->procs);
	unwinder__tick(p->uw, p->procs);
	return err < 0 ? err : 0;
}

void pipeline__wake(struct pipeline *p)
{
	if (p->sampler)
		sampler__wake(p->sampler);
}

/* Milliseconds to poll: until wake, at most POLL_SLOW_MS. */
static int poll_timeout(uint64_t now, uint64_t wake)
{
	if (wake <= now)
		return 0;
	if (wake - now >= POLL_SLOW_MS * 1000000ull)
		return POLL_SLOW_MS;
	return (int)((wake - now + 999999) / 1000000);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int pipeline__run(struct pipeline *p, struct pipeline_loop *l)
{
	uint64_t now = monotonic_ns();
	uint64_t mono_start = l->start_ns ? l->start_ns : now;
	uint64_t wall_start = realtime_ns() - (now - mono_start);
	uint64_t deadline = l->deadline_ns ? l->deadline_ns : UINT64_MAX;
	uint64_t next_interval = l->interval_ns ? mono_start + l->interval_ns : UINT64_MAX;
	uint64_t next_drain = mono_start + (l->first_drain_ns ? l->first_drain_ns : l->drain_every_ns);
	uint64_t due;
	struct profile_set *set;
	int err;

	for (;;) {
		if (next_drain > next_interval)
			next_drain = next_interval;
		due = l->drain_at ? l->drain_at(l->ctx) : UINT64_MAX;
		err = pipeline__poll(p, poll_timeout(now, min_u64(min_u64(deadline, next_drain), due)));
		if (err)
			break;
		now = monotonic_ns();
		if (now >= deadline || (l->stop && l->stop(l->ctx, now)))
			break;
		if (now < next_drain && !(l->drain_at && l->drain_at(l->ctx) <= now))
			continue;
		pipeline__drain(p);
		if (l->drained)
			l->drained(l->ctx);
		next_drain = now + l->drain_every_ns;
		if (now < next_interval)
			continue;
		set = pipeline__take(p);
		if (set) {
			uint64_t wall_end = wall_start + (now - mono_start);

			l->interval(l->ctx, set, wall_start, wall_end);
			mono_start = now;
			wall_start = wall_end;
		}
		next_interval += l->interval_ns;
		if (next_interval <= now)       /* fell behind: skip, don't burst */
			next_interval = now + l->interval_ns;
	}
	/* Stop sampling first: the last drain then holds every sample. The
	 * window ends here, not after the drain. */
	pipeline__stop(p);
	now = monotonic_ns();
	l->stopped_ns = now < deadline ? now : deadline;
	pipeline__drain(p);
	if (l->drained)
		l->drained(l->ctx);
	if (l->interval_ns && (set = pipeline__take(p)))
		l->interval(l->ctx, set, wall_start, wall_start + (l->stopped_ns - mono_start));
	return err;
}

/* The labels that choose the profile, under o.group_by, of a sample
 * labeled l. */
static const struct labels *group_key(struct pipeline *p, const struct labels *l)
{
	const char *v;
	size_t nl, vl;

	if (!p->o.group_by)
		return l;
	p->group.len = p->group.n = 0;
	if (!*p->o.group_by)
		return &p->group;
	v = labels__get(l, p->o.group_by);
	if (!v)
		v = "";
	nl = strlen(p->o.group_by) + 1;
	vl = strlen(v) + 1;
	if (nl + vl > p->group.cap) {
		char *b = realloc(p->group.buf, nl + vl);

		if (!b)
			return NULL;
		p->group.buf = b;
		p->group.cap = nl + vl;
	}
	memcpy(p->group.buf, p->o.group_by, nl);
	memcpy(p->group.buf + nl, v, vl);
	p->group.len = nl + vl;
	p->group.n = 1;
	return &p->group;
}

/* Names d's frames and adds it to e's profile, under its labels with
 * o.label_frames; with may_wait, a sample with a frame waiting for a
 * debug file or a perf map is held instead (its snapshot pinned, with its
 * labels), unless the holding bound is reached. What it waits for
 * (SYMBOLIZER_WAIT_*) when held, else 0. */
static unsigned name_and_add(struct pipeline *p, struct profile_set_entry *e,
			     const struct labels *labels, const struct drained_sample *d,
			     struct proc_snapshot *snap, bool may_wait)
{
	char comm[KILN_COMM_LEN + 1];
	size_t n, first = p->o.label_frames;
	unsigned waiting;
	int err;

	memcpy(comm, snap ? snap->comm : d->key->comm, KILN_COMM_LEN);
	comm[KILN_COMM_LEN] = '\0';
	n = symbolizer__stack(p->sym, comm, snap, d->kips, d->kn, d->uips, d->un, d->uflags, d->count,
			      p->frames + first);
	waiting = may_wait ? symbolizer__waiting(p->sym) : 0;
	if (waiting) {
		err = deferred__add(&p->held, d, snap, labels, waiting);
		if (!err) {
			symbolizer__uncount(p->sym);
			if (snap)
				proc_snapshot__pin(snap);
			return waiting;
		}
		if (err == -ENOSPC)
			p->t.wait_full += d->count;
	}
	if (first) {
		if (labels__to_text(labels, p->label_text, LABELS_TEXT_MAX) < 0) {
			p->t.add_failures += d->count;  /* labels are bounded far below */
			return 0;
		}
		p->frames[0] = (struct frame){ .kind = FRAME_LABELS, .name = p->label_text };
	}
	if (profile__add(e->profile, p->frames, n + first, d->count)) {
		p->t.add_failures += d->count;
		return 0;
	}
	p->t.profiled += d->count;
	if (p->o.tap)
		p->o.tap(p->o.tap_ctx, labels, p->frames + first, n, d->count);
	return 0;
}

/* Names and adds the held samples; with may_wait, those whose frames
 * still wait for a lookup are held again. */
static void name_held(struct pipeline *p, bool may_wait)
{
	size_t n;
	struct deferred_sample **v = deferred__take(&p->held, &n);

	for (size_t i = 0; i < n; i++) {
		struct deferred_sample *s = v[i];
		struct drained_sample d = deferred__sample(s);
		struct profile_set_entry *e;
		int err;

		e = profile_set__get(p->current, group_key(p, &s->group), &err);
		if (e)
			name_and_add(p, e, &s->group, &d, s->snap, may_wait);
		else if (err == -ENOSPC)
			p->t.label_sets_full += s->count;
		else
			p->t.add_failures += s->count;
		if (s->snap)
			proc_snapshot__unpin(s->snap);
		deferred__free_sample(s);
	}
	free(v);
}

void pipeline__add_sample(struct pipeline *p, const struct drained_sample *d)
{
	struct proc_snapshot *snap = d->key->instance ?
		proc_table__get(p->procs, d->key->instance) : NULL;
	const struct labels *key;
	struct profile_set_entry *e, *seen;
	unsigned waiting;
	int err;

	if (metadata__labels(p->md, d->key, snap, d->count, &p->labels) != METADATA_KEEP) {
		p->t.filtered += d->count;
		return;
	}
	seen = p->seen ? profile_set__get(p->seen, &p->labels, &err) : NULL;
	if (seen)
		seen->samples += d->count;
	key = group_key(p, &p->labels);
	e = key ? profile_set__get(p->current, key, &err) : NULL;
	if (!e) {
		if (err == -ENOSPC)
			p->t.label_sets_full += d->count;
		else
			p->t.add_failures += d->count;
		return;
	}
	e->samples += d->count;
	waiting = name_and_add(p, e, &p->labels, d, snap, p->o.wait_for_names);
	if (waiting & SYMBOLIZER_WAIT_DEBUG_FILE)
		p->t.waited += d->count;
	if (waiting & SYMBOLIZER_WAIT_JIT)
		p->t.jit_waited += d->count;
}

/* Whether a held sample may be named now: a process whose perf map its
 * frames waited for has ended (its map is read then). */
static bool held_jit_ready(const struct pipeline *p)
{
	for (size_t i = 0; i < p->held.n; i++) {
		const struct deferred_sample *s = p->held.v[i];

		if ((s->waiting & SYMBOLIZER_WAIT_JIT) && s->snap && s->snap->ended)
			return true;
	}
	return false;
}

static void on_sample(const struct drained_sample *d, void *ctx)
{
	pipeline__add_sample(ctx, d);
}

void pipeline__account_drain(struct pipeline *p, const struct drain_stats *st, int err)
{
	for (int i = 0; i < KILN_OUTCOME_COUNT; i++)
		p->t.outcomes[i] += st->outcomes[i];
	p->t.drained += st->drained;
	p->t.drain_keys += st->keys;
	p->t.stacks_missing += st->stacks_missing;
	p->t.drains++;
	p->t.drain_ns_last = st->duration_ns;
	p->t.drain_ns_sum += st->duration_ns;
	if (st->duration_ns > p->t.drain_ns_max)
		p->t.drain_ns_max = st->duration_ns;
	/* Conservation: every sample counted by BPF was drained, once. */
	if (!err && st->drained != st->outcomes[KILN_SAMPLED]) {
		p->t.invariant_failures++;
		pr_warn("drain %" PRIu64 ": drained %" PRIu64 " samples but the sampler counted %" PRIu64,
			p->t.drains, st->drained, st->outcomes[KILN_SAMPLED]);
	}
	proc_table__drained(p->procs);
}

int pipeline__drain(struct pipeline *p)
{
	static const struct kallsyms_paths kernel = {
		"/proc/kallsyms", "/proc/modules", "/proc/sys/kernel/random/boot_id",
	};
	struct drain_stats st;
	int err;

	if (p->kernel_symbols_due) {
		p->kernel_symbols_due = false;
		symbolizer__load_kernel_symbols(p->sym, &kernel, table_cache__dir(p->cache));
	}

	/* Tables of binaries that stopped running go. free() leaves their
	 * pages, and those of loading tables, in the heap: give them back, or
	 * a burst of big binaries (a compiler build) raises RSS for good, by
	 * about twice their tables. */
	if (symbolizer__age(p->sym, monotonic_ns()))
		malloc_trim(0);
	/* A lookup ended, or a process that writes its perf map at exit did:
	 * the samples that waited for it are named now. */
	if (p->held.n &&
	    (symbolizer__lookups_ended(p->sym) != p->lookups_seen || held_jit_ready(p))) {
		p->lookups_seen = symbolizer__lookups_ended(p->sym);
		name_held(p, true);
	}
	err = sampler__drain(p->sampler, on_sample, p, &st);
	pipeline__account_drain(p, &st, err);
	return err;
}

size_t pipeline__wait_lookups(struct pipeline *p, uint64_t timeout_ns)
{
	return symbolizer__wait_lookups(p->sym, timeout_ns);
}

void pipeline__name_held(struct pipeline *p)
{
	/* The files that arrived are taken first. */
	symbolizer__age(p->sym, monotonic_ns());
	name_held(p, false);
}

void pipeline__stop(struct pipeline *p)
{
	sampler__stop(p->sampler);
}

struct profile_set *pipeline__take(struct pipeline *p)
{
	struct profile_set *fresh, *full;

	if (p->held.n)
		name_held(p, false);
	fresh = profile_set__new(p->o.max_label_sets);
	full = p->current;
	if (!fresh)
		return NULL;
	p->current = fresh;
	return full;
}

struct profile_set *pipeline__current(struct pipeline *p)
{
	return p->current;
}

struct unwinder *pipeline__unwinder(struct pipeline *p)
{
	return p->uw;
}

struct sampler *pipeline__sampler(struct pipeline *p)
{
	return p->sampler;
}

struct proc_table *pipeline__procs(struct pipeline *p)
{
	return p->procs;
}

struct symbolizer *pipeline__symbolizer(struct pipeline *p)
{
	return p->sym;
}

struct metadata *pipeline__metadata(struct pipeline *p)
{
	return p->md;
}

const struct pipeline_totals *pipeline__totals(const struct pipeline *p)
{
	return &p->t;
}

struct profile_set *pipeline__label_sets_seen(struct pipeline *p)
{
	return p->seen;
}

void pipeline__free(struct pipeline *p)
{
	if (!p)
		return;
	deferred__release(&p->held);
	metadata__free(p->md);
	unwinder__free(p->uw);
	sampler__destroy(p->sampler);
	symbolizer__free(p->sym);
	table_cache__close(p->cache);
	proc_table__free(p->procs);
	profile_set__free(p->current);
	profile_set__free(p->seen);
	labels__release(&p->labels);
	labels__release(&p->group);
	free(p->frames);
	free(p->label_text);
	free(p);
}
