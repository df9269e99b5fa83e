// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: the walker reads four maps (include/kiln/unwind.h). Three are
 * arrays this process maps: rows, rules and per-file table slots. A file's
 * rows are written into a free range of the row array first and published
 * by writing its slot's nrows last; evicting clears nrows before the range
 * is reused. Rules are interned across files (a few hundred per file, most
 * shared). The fourth, proc_maps, holds each process's executable mappings
 * with the slot of their file, and the instance they belong to: the walker
 * uses an entry only for that instance, so after an exec or a pid reuse it
 * never applies one program's tables to another's stack. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>

#include "core/clock.h"
#include "core/elf.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/log.h"
#include "core/safe_open.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_table.h"
#include "unwind/unwinder.h"

const char *const unwinder_fallback_names[UNWINDER_FB_COUNT] = {
	[UNWINDER_FB_NO_FILE] = "no_file",
	[UNWINDER_FB_NO_TABLE] = "no_table",
	[UNWINDER_FB_NO_ROOM] = "no_room",
	[UNWINDER_FB_NO_SLOT] = "no_slot",
	[UNWINDER_FB_RULES_FULL] = "rules_full",
	[UNWINDER_FB_SEGMENT] = "segment",
	[UNWINDER_FB_TOO_MANY] = "too_many_mappings",
};

#define EXES_MAX 16384                  /* files remembered, loaded or not */
#define MISS_REFRESH_NS 1000000000ull   /* a process's mappings re-read at most this often */
#define QUEUE_MAX 65536u                /* snapshots waiting for their tables */
/* Ended processes' proc_maps entries are deleted together, by one
 * BPF_MAP_DELETE_BATCH, at least this often and at most this many: a
 * busy host ends tens of processes a second, a syscall each otherwise.
 * Meanwhile the walker ignores them (their instance is no one's). */
#define ENDED_MAX 256
#define ENDED_FLUSH_NS 1000000000ull
#define EXPIRY_CHECK_NS 1000000000ull   /* tables unmapped past --unwind-table-ttl: looked for */
#define CHUNK_SLOTS (2 * KILN_ROWS_CHUNK) /* slots of a chunk of unwind_rows */
#define DONE_BYTES_MAX (1u << 20)       /* built, not collected: the builder waits */
/* ... and while an interpreter is to be tried again: a process's first
 * re-read is due 50 ms after its first read, and a short one (python -c)
 * may be gone by the wake-up after that */
#define INTERP_POLL_MS 20

/* A file gets its slot when first mapped: its processes' entries are
 * written at once and name the slot, whose nrows stays 0 (frame pointers)
 * until the builder thread's table is loaded into it. The slot is the
 * file's until it is evicted, which needs no live process to map it. */
enum exe_state {
	EXE_BUILDING,                   /* queued for the builder, or being built */
	EXE_LOADED,                     /* rows in the maps */
	EXE_NO_TABLE,                   /* built, but no table to load (why says) */
};

/* One file (or the vDSO) and its table in the maps. */
struct exe {
	char key[96];
	enum exe_state state;
	enum unwinder_fallback why;     /* EXE_NO_TABLE: why */
	uint32_t slot, first, nrows;    /* nrows: slots of unwind_rows, page index included */
	unsigned refs;                  /* live processes mapping it */
	uint64_t last_used;             /* monotonic ns */
	struct unwind_table_info info;  /* segments, for each mapping's bias */
	struct kiln_file_key file;      /* its file_tables key (has_file) */
	bool has_file;                  /* false: the vDSO */
	bool logged;
};

/* One process walked with tables. */
struct proc_entry {
	uint32_t instance;
	pid_t pid;
	struct exe **exes;              /* the files its entry uses (a ref each) */
	size_t nexes;
	uint64_t written_ns;
	bool miss_pending;
};

struct extent {
	uint32_t start, len;
};

/* One table for the builder thread to build. */
struct build_job {
	struct build_job *next;
	struct exe *e;                  /* the loop thread's; the builder never touches it */
	int fd;                         /* a duplicate, -1: the vDSO */
	char *root, *path;
	struct unwind_table *t;         /* result, NULL: none */
	uint64_t ns;
	bool cached;                    /* t came from the disk cache */
};

/* A FIFO of jobs. */
struct job_list {
	struct build_job *head, **tail;
};

struct unwinder {
	struct sampler *smp;            /* unwind_rows' chunks */
	struct sampler_unwind_maps m;
	struct hashmap exes;            /* hash of key -> struct exe */
	size_t nexes;
	struct hashmap procs;           /* instance -> struct proc_entry */
	struct extent *free;            /* free row ranges, sorted, coalesced */
	size_t nfree, free_cap;
	uint32_t *free_slots;
	size_t nfree_slots;
	struct kiln_unwind_rule *rules; /* interned, mirror of unwind_rules */
	struct hashmap rule_index;      /* rule hash -> index + 1 */
	uint32_t nrules;
	struct kiln_proc_maps pm;       /* scratch */
	size_t pending;                 /* entries with miss_pending */
	uint32_t ended_pid[ENDED_MAX], ended_instance[ENDED_MAX]; /* to delete */
	size_t nended;
	uint64_t ended_since;           /* when the oldest of them ended */
	uint32_t *queue;                /* instances to load, oldest first */
	size_t qhead, qlen;
	struct hashmap queued;          /* instance -> 1 */
	/* pid -> the instance whose mappings its proc_maps entry holds (in
	 * the pointer): an exit deletes the entry without reading its 4 KiB */
	struct hashmap written;
	pthread_t thread;
	bool thread_started;
	size_t jobs;                    /* handed to the builder, not collected yet */
	/* Under mu: */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	struct job_list todo, done;
	size_t done_bytes;              /* of the tables in done */
	/* The builder's bounds: a table larger than the whole row budget
	 * is refused while it is built, before it costs its full memory. */
	struct unwind_limits limits;
	struct table_cache *cache;      /* NULL: none; borrowed (unwinder_opts) */
	struct unwinder_stats st;
	bool chunk_refused;             /* said once */
	uint64_t table_ttl_ns;          /* unwinder_opts */
	uint64_t expiry_due;            /* monotonic ns */
	struct interp_procs *interp[KILN_LANG_COUNT]; /* NULL: no frames of that language */
};

static bool exe_eq(const void *ctx, const void *val, const void *key)
{
	(void)ctx;
	return strcmp(((const struct exe *)val)->key, key) == 0;
}

static bool rule_eq(const void *ctx, const void *val, const void *key)
{
	const struct unwinder *u = ctx;

	return memcmp(&u->rules[(uintptr_t)val - 1], key, sizeof(struct kiln_unwind_rule)) == 0;
}

static void *builder(void *arg);

struct unwinder *unwinder__new(struct sampler *s, const struct unwinder_opts *o)
{
	struct unwinder *u;

	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	if (!sampler__unwind_maps(s, &u->m)) {
		free(u);
		return NULL;
	}
	u->smp = s;
	u->free = malloc(sizeof(*u->free));
	u->free_slots = malloc(KILN_UNWIND_SLOTS * sizeof(*u->free_slots));
	u->rules = calloc(KILN_UNWIND_RULES, sizeof(*u->rules));
	u->queue = malloc(QUEUE_MAX * sizeof(*u->queue));
	if (!u->free || !u->free_slots || !u->rules || !u->queue) {
		unwinder__free(u);
		return NULL;
	}
	u->free[0] = (struct extent){ 0, u->m.rows_cap };
	u->nfree = 1;
	u->free_cap = 1;
	for (uint32_t i = 0; i < KILN_UNWIND_SLOTS; i++)
		u->free_slots[i] = KILN_UNWIND_SLOTS - 1 - i;
	u->nfree_slots = KILN_UNWIND_SLOTS;
	if ((o && o->python &&
	     !(u->interp[KILN_LANG_PY] = pythons__new(s, u->m.py_procs_fd, u->m.procs_max))) ||
	    (o && o->ruby &&
	     !(u->interp[KILN_LANG_RB] = rubies__new(s, u->m.rb_procs_fd, u->m.procs_max)))) {
		unwinder__free(u);
		return NULL;
	}
	u->st.rows_cap = u->m.rows_cap;
	if (u->m.files_fd >= 0) {
		/* the entry early walks read (include/kiln/unwind.h) */
		__u32 none = KILN_PROC_MAPS_NONE;

		memset(&u->pm, 0, sizeof(u->pm));
		u->pm.flags = KILN_PROC_INCOMPLETE | KILN_PROC_MISS_SENT;
		if (bpf_map_update_elem(u->m.proc_maps_fd, &none, &u->pm, BPF_ANY))
			pr_warn("unwind: no entry for early walks (%s): a process's samples before kiln reads it are walked by frame pointers",
				strerror(errno));
	}
	u->limits = unwind_default_limits;
	/* Only tables of this machine's code: the walker applies nothing else. */
#ifdef __aarch64__
	u->limits.machine = EM_AARCH64;
#else
	u->limits.machine = EM_X86_64;
#endif
	if (u->limits.max_rows > u->m.rows_cap)
		u->limits.max_rows = u->m.rows_cap;
	u->cache = o ? o->cache : NULL;
	u->table_ttl_ns = o ? o->table_ttl_ns : 0;
	u->todo.tail = &u->todo.head;
	u->done.tail = &u->done.head;
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->cv, NULL);
	if (pthread_create(&u->thread, NULL, builder, u)) {
		unwinder__free(u);
		return NULL;
	}
	u->thread_started = true;
	return u;
}

/* ---- row ranges ---- */

static uint32_t rows_alloc(struct unwinder *u, uint32_t len)
{
	for (size_t i = 0; i < u->nfree; i++) {
		struct extent *e = &u->free[i];
		uint32_t start = e->start;

		if (e->len < len)
			continue;
		e->start += len;
		e->len -= len;
		if (e->len == 0) {
			memmove(e, e + 1, (u->nfree - i - 1) * sizeof(*e));
			u->nfree--;
		}
		u->st.rows_used += len;
		return start;
	}
	return UINT32_MAX;
}

/* Gives [start, start + len) back; -ENOMEM only when a new extent cannot
 * be stored (those rows are then lost to the budget, never reused twice). */
static int rows_release(struct unwinder *u, uint32_t start, uint32_t len)
{
	size_t i = 0;

	while (i < u->nfree && u->free[i].start < start)
		i++;
	u->st.rows_used -= len;
	if (i > 0 && u->free[i - 1].start + u->free[i - 1].len == start) {
		u->free[i - 1].len += len;
		if (i < u->nfree && start + len == u->free[i].start) {
			u->free[i - 1].len += u->free[i].len;
			memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
			u->nfree--;
		}
		return 0;
	}
	if (i < u->nfree && start + len == u->free[i].start) {
		u->free[i].start = start;
		u->free[i].len += len;
		return 0;
	}
	if (u->nfree == u->free_cap) {
		size_t cap = u->free_cap * 2;
		struct extent *p = realloc(u->free, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		u->free = p;
		u->free_cap = cap;
	}
	memmove(&u->free[i + 1], &u->free[i], (u->nfree - i) * sizeof(*u->free));
	u->free[i] = (struct extent){ start, len };
	u->nfree++;
	return 0;
}

/* ---- tables ---- */

/* Tells early walks (file_tables) that e's file has its table loaded. A
 * failure (the map has room for every slot: none expected) leaves its
 * processes' early samples to frame pointers. */
static void files_publish(struct unwinder *u, const struct exe *e)
{
	struct kiln_file_table ft = { .slot = e->slot, .base = e->info.base };

	if (u->m.files_fd < 0 || !e->has_file)
		return;
	for (size_t i = 0; i < e->info.nsegs && i < KILN_FILE_SEGS; i++) {
		ft.segs[i].offset = e->info.segs[i].offset;
		ft.segs[i].vaddr = e->info.segs[i].vaddr;
		ft.segs[i].filesz = e->info.segs[i].filesz;
		ft.nsegs++;
	}
	bpf_map_update_elem(u->m.files_fd, &e->file, &ft, BPF_ANY);
}

/* Takes e's file out of file_tables, unless the same file's entry of
 * another root took it over since. */
static void files_withdraw(struct unwinder *u, const struct exe *e)
{
	struct kiln_file_table cur;

	if (u->m.files_fd >= 0 && e->has_file &&
	    bpf_map_lookup_elem(u->m.files_fd, &e->file, &cur) == 0 && cur.slot == e->slot)
		bpf_map_delete_elem(u->m.files_fd, &e->file);
}

/* Frees e's rows and slot and forgets it: the next process that maps the
 * file builds its table again. Only for a file no live process maps. */
static void exe_evict(struct unwinder *u, struct exe *e)
{
	if (e->state == EXE_LOADED) {
		/* Unpublish first: the walker stops using the rows before
		 * they are handed to another file. */
		files_withdraw(u, e);
		__atomic_store_n(&u->m.tables[e->slot].nrows, 0, __ATOMIC_RELEASE);
		/* and the rows the walkers remember of it */
		__atomic_fetch_add(u->m.tables_gen, 1, __ATOMIC_SEQ_CST);
		rows_release(u, e->first, e->nrows);
		u->st.tables_loaded--;
	}
	u->free_slots[u->nfree_slots++] = e->slot;
	hashmap__del(&u->exes, hash__str(e->key), exe_eq, NULL, e->key);
	u->nexes--;
	u->st.evictions++;
	free(e);
}

struct lru_pick {
	const struct exe *keep;
	struct exe *oldest;
};

static void pick_oldest(uint64_t hash, void *val, void *ctx)
{
	struct lru_pick *p = ctx;
	struct exe *e = val;

	(void)hash;
	if (e != p->keep && e->state != EXE_BUILDING && e->refs == 0 &&
	    (!p->oldest || e->last_used < p->oldest->last_used))
		p->oldest = e;
}

/* Evicts the least recently used file no live process maps (not keep). */
static bool evict_one(struct unwinder *u, const struct exe *keep)
{
	struct lru_pick p = { keep, NULL };

	hashmap__each(&u->exes, pick_oldest, &p);
	if (!p.oldest)
		return false;
	pr_debug("unwind: evicting %s (%u rows)", p.oldest->key, p.oldest->nrows);
	exe_evict(u, p.oldest);
	return true;
}

/* Tables no live process has mapped for --unwind-table-ttl. */
struct expiry {
	uint64_t before;        /* last_used earlier than this */
	struct exe **found;
	size_t n;
};

static void pick_expired(uint64_t hash, void *val, void *ctx)
{
	struct expiry *x = ctx;
	struct exe *e = val;

	(void)hash;
	if (e->state == EXE_LOADED && e->refs == 0 && e->last_used < x->before)
		x->found[x->n++] = e;
}

/* Frees the tables unmapped past the TTL, then gives back the chunks of
 * rows above the last one in use (first fit keeps the low ones full). */
static void expire_tables(struct unwinder *u, uint64_t now)
{
	struct expiry x = { now - u->table_ttl_ns, NULL, 0 };
	uint32_t top = u->m.rows_cap, chunks = (u->m.rows_cap + CHUNK_SLOTS - 1) / CHUNK_SLOTS;

	if (now < u->table_ttl_ns || !u->nexes || !(x.found = malloc(u->nexes * sizeof(*x.found))))
		return;
	hashmap__each(&u->exes, pick_expired, &x);
	for (size_t i = 0; i < x.n; i++) {
		pr_debug("unwind: %s unmapped past --unwind-table-ttl: table freed", x.found[i]->key);
		exe_evict(u, x.found[i]);
		u->st.expired++;
	}
	free(x.found);
	if (!x.n)
		return;
	if (u->nfree && u->free[u->nfree - 1].start + u->free[u->nfree - 1].len == u->m.rows_cap)
		top = u->free[u->nfree - 1].start;
	for (uint32_t c = (top + CHUNK_SLOTS - 1) / CHUNK_SLOTS; c < chunks; c++)
		if (sampler__rows_chunk_drop(u->smp, c))
			u->st.chunks_dropped++;
}

/* The global index of rule r, interned. -1 when KILN_UNWIND_RULES are taken. */
static int rule_intern(struct unwinder *u, const struct kiln_unwind_rule *r)
{
	uint64_t h = hash__bytes(r, sizeof(*r));
	uintptr_t idx = (uintptr_t)hashmap__get(&u->rule_index, h, rule_eq, u, r);

	if (idx)
		return (int)idx - 1;
	if (u->nrules >= KILN_UNWIND_RULES)
		return -1;
	u->rules[u->nrules] = *r;
	if (hashmap__add(&u->rule_index, h, (void *)(uintptr_t)(u->nrules + 1)))
		return -1;
	memcpy(u->m.rules + (size_t)u->nrules * u->m.rule_stride, r, sizeof(*r));
	return (int)u->nrules++;
}

/* Slots written through one mapping of unwind_rows: 256 KiB, so that
 * writing a big table (libLLVM's, 3.4 MB packed) does not map it all into
 * kiln's RSS at once. */
#define SLOTS_WINDOW (65536u)

/* What a table puts in unwind_rows (include/kiln/unwind.h): its rows
 * packed (rule indices through map), then, from an even slot, its page
 * index. */
struct packing {
	const struct kiln_unwind_row *rows;
	size_t nrows;
	const uint16_t *map;
	const uint32_t *pages;
	size_t npages;
};

static size_t packed_slots(size_t nrows, size_t npages)
{
	return ((nrows + 1) & ~(size_t)1) + npages;
}

/* Slot i of what pk puts in unwind_rows, as its 4 bytes. */
static uint32_t packed_slot(const struct packing *pk, size_t i)
{
	union {
		struct kiln_packed_row row;
		uint32_t word;
	} v = { .word = 0 };
	const struct kiln_unwind_row *r;
	size_t rows_slots = (pk->nrows + 1) & ~(size_t)1;

	if (i >= rows_slots)
		return pk->pages[i - rows_slots];
	if (i >= pk->nrows)
		return 0;               /* the pad before an odd count's page index */
	r = &pk->rows[i];
	v.row.off = (uint16_t)(r->pc_off & KILN_ROW_PAGE_MASK);
	v.row.rule = r->rule;
	if (!(r->rule & KILN_UNWIND_CMD))
		v.row.rule = pk->map[r->rule];
	else if ((r->rule & KILN_CMD_MASK) == KILN_CMD_PLT)
		v.row.rule |= (uint16_t)((r->flags & KILN_ROW_PLT_THRESHOLD) << KILN_CMD_ARG_SHIFT);
	return v.word;
}

/* Writes what pk holds at slot first (even) of unwind_rows, a window of
 * its pages at a time (inside one chunk, made on first use), each mapped
 * while it is written. */
static int rows_write(struct unwinder *u, uint32_t first, const struct packing *pk)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), slot = sizeof(uint32_t);
	size_t nslots = packed_slots(pk->nrows, pk->npages);

	for (size_t done = 0; done < nslots;) {
		size_t g = (size_t)first + done, in = g % CHUNK_SLOTS;
		size_t n = nslots - done < SLOTS_WINDOW ? nslots - done : SLOTS_WINDOW;
		size_t at = in * slot, start = at & ~(page - 1), len;
		int fd = sampler__rows_chunk(u->smp, (uint32_t)(g / CHUNK_SLOTS));
		uint8_t *mem;
		uint32_t *dst;

		if (fd < 0) {
			if (!u->chunk_refused)
				pr_warn("unwind: the kernel refused 1 MiB more for unwind rows (%s): tables that do not fit fall back to frame pointers (counted)",
					strerror(-fd));
			u->chunk_refused = true;
			return fd;
		}
		if (n > CHUNK_SLOTS - in)
			n = CHUNK_SLOTS - in;
		len = (at + n * slot - start + page - 1) & ~(page - 1);
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
		if (mem == MAP_FAILED) {
			pr_warn("unwind: cannot map unwind rows: %s", strerror(errno));
			return -errno;
		}
		dst = (uint32_t *)(void *)(mem + (at - start));
		for (size_t i = 0; i < n; i++)
			dst[i] = packed_slot(pk, done + i);
		munmap(mem, len);
		done += n;
	}
	return 0;
}

/* The pages of code rows cover, one page index entry each (struct
 * kiln_exe_table); 0 when the rows are not in increasing order. */
static size_t rows_pages(const struct kiln_unwind_row *rows, size_t nrows)
{
	for (size_t i = 1; i < nrows; i++)
		if (rows[i].pc_off <= rows[i - 1].pc_off)
			return 0;
	return ((size_t)rows[nrows - 1].pc_off >> KILN_ROW_PAGE_SHIFT) + 1;
}

/* The page index of rows, npages entries (rows_pages), malloc'd; NULL
 * when out of memory. */
static uint32_t *page_index(const struct kiln_unwind_row *rows, size_t nrows, size_t npages)
{
	uint32_t *pages = calloc(npages, sizeof(*pages));
	size_t r = 0;

	for (size_t p = 0; pages && p < npages; p++) {
		uint64_t at = (uint64_t)p << KILN_ROW_PAGE_SHIFT;

		while (r + 1 < nrows && rows[r + 1].pc_off <= at)
			r++;
		pages[p] = (uint32_t)r;
	}
	return pages;
}

/* Copies table t into the maps as e: its rows, then their page index
 * (built once the table is known to fit). */
static enum unwinder_fallback exe_load(struct unwinder *u, struct exe *e,
				       const struct unwind_table *t)
{
	size_t nrows, nrules, npages;
	const struct kiln_unwind_row *rows = unwind_table__rows(t, &nrows);
	const struct kiln_unwind_rule *rules = unwind_table__rules(t, &nrules);
	enum unwinder_fallback why = UNWINDER_FB_NO_ROOM;
	uint32_t *pages = NULL;
	uint16_t *map = NULL;
	uint32_t first, len;

	if (nrows == 0 || (npages = rows_pages(rows, nrows)) == 0)
		return UNWINDER_FB_NO_TABLE;
	/* (even: every table starts at an element's first slot) */
	len = (uint32_t)((packed_slots(nrows, npages) + 1) & ~(size_t)1);
	if (len > u->m.rows_cap)
		return UNWINDER_FB_NO_ROOM;
	pages = page_index(rows, nrows, npages);
	if (pages)
		map = malloc((nrules ? nrules : 1) * sizeof(*map));
	if (!map)
		goto out;
	for (size_t i = 0; i < nrules; i++) {
		int g = rule_intern(u, &rules[i]);

		if (g < 0) {
			why = UNWINDER_FB_RULES_FULL;
			goto out;
		}
		map[i] = (uint16_t)g;
	}
	while ((first = rows_alloc(u, len)) == UINT32_MAX)
		if (!evict_one(u, e))
			goto out;
	if (rows_write(u, first, &(struct packing){ rows, nrows, map, pages, npages })) {
		rows_release(u, first, len);
		goto out;
	}
	e->first = first;
	e->nrows = len;
	u->m.tables[e->slot].first_row = first;
	u->m.tables[e->slot].npages = (uint32_t)npages;
	u->m.tables[e->slot].start_off = rows[0].pc_off;
	__atomic_store_n(&u->m.tables[e->slot].nrows, (uint32_t)nrows, __ATOMIC_RELEASE);
	e->state = EXE_LOADED;
	u->st.tables_loaded++;
	u->st.loads++;
	files_publish(u, e);
	why = 0;
out:
	free(map);
	free(pages);
	return why;
}

/* The vDSO is one image per kernel: kiln's own is every process's. Its
 * size is where its section headers end (they come last). */
static const void *own_vdso(size_t *size)
{
	const Elf64_Ehdr *eh = (const void *)getauxval(AT_SYSINFO_EHDR);

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 || eh->e_shoff > (1u << 20))
		return NULL;
	*size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	return eh;
}

/* Hands j over to the loop (jobs_collect); u->mu held. */
static void job_done(struct unwinder *u, struct build_job *j)
{
	if (j->t) {
		struct unwind_table_info in;

		unwind_table__info(j->t, &in);
		u->done_bytes += in.bytes;
	}
	j->next = NULL;
	*u->done.tail = j;
	u->done.tail = &j->next;
}

/* The builder thread: builds the queued tables one at a time, off the
 * loop thread, so process events are handled (and short-lived processes'
 * snapshots taken) while a large file's CFI is interpreted. */
static void *builder(void *arg)
{
	struct unwinder *u = arg;

	pthread_mutex_lock(&u->mu);
	for (;;) {
		struct build_job *j;
		uint64_t start;

		/* A large table not yet collected waits for the loop before
		 * the next build: two large files' peaks never add up. */
		while (!u->stop && (!u->todo.head || u->done_bytes > DONE_BYTES_MAX))
			pthread_cond_wait(&u->cv, &u->mu);
		if (u->stop)
			break;
		j = u->todo.head;
		u->todo.head = j->next;
		if (!u->todo.head)
			u->todo.tail = &u->todo.head;
		pthread_mutex_unlock(&u->mu);
		start = monotonic_ns();
		if (j->fd >= 0) {
			/* (the loop looked in the disk cache before queuing it) */
			j->t = unwind_table__build(j->fd, j->root, j->path, &u->limits);
			table_cache__put(u->cache, j->fd, j->t);
		} else {
			size_t size;
			const void *image = own_vdso(&size);

			if (image)
				j->t = unwind_table__build_mem(image, size, "[vdso]", &u->limits);
		}
		j->ns = monotonic_ns() - start;
		pthread_mutex_lock(&u->mu);
		job_done(u, j);
		/* the loop collects it at once (its poll may be a second) */
		sampler__wake(u->smp);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

static void job_free(struct build_job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	free(j->root);
	free(j->path);
	unwind_table__free(j->t);
	free(j);
}

static void jobs_free(struct build_job *j)
{
	while (j) {
		struct build_job *next = j->next;

		job_free(j);
		j = next;
	}
}

/* Queues the file bin (the vDSO when NULL) for the builder. */
static int job_start(struct unwinder *u, struct exe *e, const struct binary *bin)
{
	struct build_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->e = e;
	j->fd = bin ? fcntl(bin->fd, F_DUPFD_CLOEXEC, 0) : -1;
	j->root = bin && bin->root ? strdup(bin->root) : NULL;
	j->path = bin && bin->path ? strdup(bin->path) : NULL;
	if (bin && (j->fd < 0 || (bin->root && !j->root) || (bin->path && !j->path))) {
		job_free(j);
		return -ENOMEM;
	}
	/* A table on disk is read here, at once (~1 ms for libc's, ~20 for
	 * libLLVM's): queued, it would wait behind the builds before it,
	 * seconds for a large file, while the file's processes are walked by
	 * frame pointers. */
	if (bin) {
		uint64_t start = monotonic_ns();

		j->t = table_cache__get(u->cache, j->fd, j->root, j->path, &u->limits);
		j->cached = j->t != NULL;
		j->ns = monotonic_ns() - start;
	}
	pthread_mutex_lock(&u->mu);
	if (j->cached) {
		job_done(u, j);
	} else {
		*u->todo.tail = j;
		u->todo.tail = &j->next;
		pthread_cond_signal(&u->cv);
	}
	pthread_mutex_unlock(&u->mu);
	u->jobs++;
	return 0;
}

/* Loads the tables the builder finished into their files' slots. */
static void jobs_collect(struct unwinder *u)
{
	struct build_job *j, *next;

	if (!u->jobs)
		return;
	pthread_mutex_lock(&u->mu);
	j = u->done.head;
	u->done.head = NULL;
	u->done.tail = &u->done.head;
	u->done_bytes = 0;
	pthread_cond_signal(&u->cv);    /* the builder may wait on them */
	pthread_mutex_unlock(&u->mu);
	for (; j; j = next) {
		struct exe *e = j->e;

		next = j->next;
		u->jobs--;
		if (j->cached) {
			u->st.cached++;
			u->st.cache_ns += j->ns;
		} else {
			u->st.build_ns += j->ns;
		}
		pr_debug("unwind: %s: %s in %.1f ms", j->path ? j->path : "[vdso]",
			 j->cached ? "loaded from the disk cache" : "built", j->ns / 1e6);
		e->why = j->t ? exe_load(u, e, j->t) : UNWINDER_FB_NO_TABLE;
		if (e->state != EXE_LOADED) {
			e->state = EXE_NO_TABLE;
			if (!e->logged && e->why != UNWINDER_FB_NO_TABLE) {
				e->logged = true;
				pr_warn("unwind: %s: no room for its table (%s; raise --unwind-memory): its stacks are walked by frame pointers; further cases counted only",
					j->path ? j->path : "[vdso]", unwinder_fallback_names[e->why]);
			}
		}
		job_free(j);
	}
	/* A table's build leaves the builder's heap with free pages (libdw's
	 * state, the rows before copying): give them back now. */
	if (!u->jobs)
		malloc_trim(0);
}

/* Gives e its file_tables key from bin, a file a process maps, the first
 * time one can say it (and publishes it when e's table is loaded): the
 * device and inode as the process's mappings list them (the superblock's:
 * stat's device differs on btrfs), size and mtime from the file opened. */
static void exe_identify(struct unwinder *u, struct exe *e, const struct binary *bin)
{
	struct stat st;

	if (e->has_file || !bin || !bin->ino || bin->fd < 0 || fstat(bin->fd, &st))
		return;
	e->file.dev = (uint64_t)major(bin->dev) << 20 | minor(bin->dev);
	e->file.ino = bin->ino;
	e->file.size = (uint64_t)st.st_size;
	e->file.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			   (uint64_t)st.st_mtim.tv_nsec;
	e->has_file = true;
	if (e->state == EXE_LOADED)
		files_publish(u, e);
}

/* The entry of the file bin (the vDSO when NULL), with its slot: a new
 * file's layout is read here and its table queued for the builder. NULL
 * and *why when it gets no slot. */
static struct exe *exe_get(struct unwinder *u, const struct binary *bin,
			   enum unwinder_fallback *why)
{
	const char *key = bin ? bin->key : "vdso";
	uint64_t h = hash__str(key);
	struct exe *e = hashmap__get(&u->exes, h, exe_eq, NULL, key);
	struct unwind_table_info layout;
	size_t size = 0;
	const void *image = bin ? NULL : own_vdso(&size);

	if (e) {
		exe_identify(u, e, bin);
		return e;
	}
	*why = UNWINDER_FB_NO_TABLE;
	if (unwind_table__layout(bin ? bin->fd : -1, image, size, bin ? bin->path : "[vdso]",
				 &layout))
		return NULL;    /* not ELF, not x86-64: no table to build */
	*why = UNWINDER_FB_NO_SLOT;
	if (u->nexes >= EXES_MAX || (u->nfree_slots == 0 && !evict_one(u, NULL)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e || hashmap__add(&u->exes, h, e)) {
		free(e);
		return NULL;
	}
	u->nexes++;
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->info = layout;
	exe_identify(u, e, bin);
	e->slot = u->free_slots[--u->nfree_slots];
	u->m.tables[e->slot] = (struct kiln_exe_table){ 0 };
	e->last_used = monotonic_ns();  /* (a prewarmed file's TTL starts here) */
	e->state = EXE_BUILDING;
	if (job_start(u, e, bin)) {
		e->state = EXE_NO_TABLE;
		e->why = UNWINDER_FB_NO_TABLE;
	}
	return e;
}

void unwinder__prewarm(struct unwinder *u)
{
	struct proc_mapping *maps = NULL;
	uint64_t *devs = NULL, *inos = NULL;
	enum unwinder_fallback why;
	char buf[1 << 16];
	size_t len;
	FILE *f;
	int n;

	exe_get(u, NULL, &why);         /* the vDSO */
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	n = proc_maps__parse(buf, len, &maps, &devs, &inos);
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(maps[i].name, '/');
		/* the device and inode too: the table is published to early
		 * walks as soon as it is loaded, not at the first process
		 * read that maps it */
		struct binary b = { .fd = -1, .path = maps[i].name, .root = "/", .dev = devs[i],
				    .ino = inos[i] };
		struct stat sb;

		if (!base || (strncmp(base, "/libc.so", 8) != 0 && strncmp(base, "/ld-linux", 9) != 0))
			continue;
		b.fd = safe_open__in("/", maps[i].name, ELF_FILE_MAX, &sb);
		if (b.fd < 0)
			continue;
		binary__key(&sb, b.key, sizeof(b.key));
		exe_get(u, &b, &why);
		close(b.fd);
	}
	if (n > 0)
		proc_mappings__free(maps, (size_t)n);
	free(devs);
	free(inos);
}

/* ---- processes ---- */

static void entry_release(struct proc_entry *p)
{
	uint64_t now = monotonic_ns();

	/* last_used: when the last process mapping it went */
	for (size_t i = 0; i < p->nexes; i++)
		if (--p->exes[i]->refs == 0)
			p->exes[i]->last_used = now;
	free(p->exes);
	p->exes = NULL;
	p->nexes = 0;
}

/* The slot and bias of mapping m, or a reason to take frame pointers. */
static enum unwinder_fallback map_one(struct unwinder *u, const struct proc_mapping *m,
				      struct kiln_exec_map *out, struct exe **used)
{
	const struct binary *bin = m->bin;
	bool vdso = !bin && strcmp(m->name, "[vdso]") == 0;
	enum unwinder_fallback why;
	uint64_t bias;
	struct exe *e;

	*out = (struct kiln_exec_map){ .start = m->start, .end = m->end, .slot = KILN_NO_TABLE };
	*used = NULL;
	if (!vdso && (!bin || bin->fd < 0))
		return UNWINDER_FB_NO_FILE;
	e = exe_get(u, bin, &why);
	if (!e)
		return why;
	if (unwind_table__bias(&e->info, m->start, vdso ? 0 : m->pgoff, &bias))
		return UNWINDER_FB_SEGMENT;
	out->bias = bias;
	out->slot = e->slot;
	e->last_used = monotonic_ns();
	*used = e;
	/* A table still being built is not a fallback: it is coming. */
	return e->state == EXE_NO_TABLE ? e->why : UNWINDER_FB_COUNT;
}

void unwinder__mapped(struct unwinder *u, const struct proc_snapshot *s)
{
	if (s->ended || hashmap__get_u64(&u->queued, s->instance))
		return;
	if (u->qlen == QUEUE_MAX || hashmap__put_u64(&u->queued, s->instance, (void *)1)) {
		u->st.queue_full++;
		return;
	}
	u->queue[(u->qhead + u->qlen++) % QUEUE_MAX] = s->instance;
}

/* Deletes the entries of the processes unwinder__ended queued, each while
 * its pid's entry is still that process's (not the pid's next program's). */
static void delete_ended(struct unwinder *u)
{
	uint32_t keys[ENDED_MAX];
	__u32 n = 0, done;

	for (size_t i = 0; i < u->nended; i++) {
		uint32_t key = u->ended_pid[i];

		if (hashmap__get_u64(&u->written, key) != (void *)(uintptr_t)u->ended_instance[i])
			continue;
		hashmap__del_u64(&u->written, key);
		keys[n++] = key;
	}
	u->nended = 0;
	done = n;
	/* the rest one at a time where the batch stopped (or the kernel
	 * has none, before 5.6): done is what it deleted */
	if (n && bpf_map_delete_batch(u->m.proc_maps_fd, keys, &done, NULL))
		for (__u32 i = done; i < n; i++)
			bpf_map_delete_elem(u->m.proc_maps_fd, &keys[i]);
}

/* Writes s's mappings, each with its file's slot (tables still being built
 * are used as soon as they are loaded). */
static int load_process(struct unwinder *u, const struct proc_snapshot *s)
{
	struct proc_entry *p = hashmap__get_u64(&u->procs, s->instance);
	struct exe **exes;
	size_t nexes = 0;
	uint32_t key = (uint32_t)s->pid;
	bool written;

	if (s->ended || s->nmaps == 0)
		return 0;
	exes = calloc(KILN_PROC_MAPS_MAX, sizeof(*exes));
	if (!exes)
		return -ENOMEM;
	memset(&u->pm, 0, offsetof(struct kiln_proc_maps, maps));
	u->pm.instance = s->instance;
	for (size_t i = 0; i < s->nmaps; i++) {
		struct kiln_exec_map *out = &u->pm.maps[u->pm.n];
		enum unwinder_fallback why;
		struct exe *used;

		if (u->pm.n == KILN_PROC_MAPS_MAX) {
			u->pm.flags |= KILN_PROC_INCOMPLETE;
			u->st.fallback[UNWINDER_FB_TOO_MANY] += s->nmaps - i;
			break;
		}
		why = map_one(u, &s->maps[i], out, &used);
		if (why < UNWINDER_FB_COUNT)
			u->st.fallback[why]++;
		if (used) {
			used->refs++;
			exes[nexes++] = used;
		}
		u->pm.n++;
	}
	for (int i = 0; i < KILN_LANG_COUNT; i++)
		if (interp_procs__candidate(u->interp[i], s))
			u->pm.flags |= KILN_PROC_INTERP;
	written = bpf_map_update_elem(u->m.proc_maps_fd, &key, &u->pm, BPF_ANY) == 0;
	if (!written && u->nended) {
		/* full, maybe of ended processes' entries not deleted yet */
		delete_ended(u);
		written = bpf_map_update_elem(u->m.proc_maps_fd, &key, &u->pm, BPF_ANY) == 0;
	}
	if (!written) {
		for (size_t i = 0; i < nexes; i++)
			exes[i]->refs--;
		free(exes);
		if (!p)
			u->st.processes_full++;
		return -ENOSPC;
	}
	/* untracked on ENOMEM (no stale instance left): its end reads the
	 * entry back, as it must */
	if (hashmap__put_u64(&u->written, key, (void *)(uintptr_t)s->instance))
		hashmap__del_u64(&u->written, key);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || hashmap__put_u64(&u->procs, s->instance, p)) {
			free(p);
			for (size_t i = 0; i < nexes; i++)
				exes[i]->refs--;
			free(exes);
			bpf_map_delete_elem(u->m.proc_maps_fd, &key);
			hashmap__del_u64(&u->written, key);
			__atomic_fetch_add(u->m.maps_gen, 1, __ATOMIC_SEQ_CST);
			return -ENOMEM;
		}
		p->instance = s->instance;
		p->pid = s->pid;
		u->st.processes++;
	} else {
		/* after the write: what the walkers remember of the entry
		 * before it is forgotten (maps_gen in bpf/sampler.bpf.c) */
		__atomic_fetch_add(u->m.maps_gen, 1, __ATOMIC_SEQ_CST);
	}
	entry_release(p);
	p->exes = exes;
	p->nexes = nexes;
	p->written_ns = monotonic_ns();
	if (p->miss_pending) {
		p->miss_pending = false;
		u->pending--;
	}
	/* After the mappings: the walker needs both. */
	for (int i = 0; i < KILN_LANG_COUNT; i++)
		interp_procs__mapped(u->interp[i], s);
	return 0;
}

void unwinder__ended(struct unwinder *u, const struct proc_snapshot *s)
{
	struct proc_entry *p = hashmap__del_u64(&u->procs, s->instance);
	struct kiln_proc_maps cur;
	uint32_t key = (uint32_t)s->pid;
	void *held;

	for (int i = 0; i < KILN_LANG_COUNT; i++)
		interp_procs__ended(u->interp[i], s);
	if (!p)
		return;
	/* The pid's entry may already be the next program's (its new instance). */
	held = hashmap__get_u64(&u->written, key);
	if (held == (void *)(uintptr_t)s->instance) {
		if (u->nended == ENDED_MAX)
			delete_ended(u);
		if (!u->nended)
			u->ended_since = monotonic_ns();
		u->ended_pid[u->nended] = key;
		u->ended_instance[u->nended++] = s->instance;
	} else if (!held && bpf_map_lookup_elem(u->m.proc_maps_fd, &key, &cur) == 0 &&
		   cur.instance == s->instance) {
		bpf_map_delete_elem(u->m.proc_maps_fd, &key);
	}
	if (p->miss_pending)
		u->pending--;
	entry_release(p);
	free(p);
	u->st.processes--;
}

void unwinder__miss(struct unwinder *u, struct proc_table *procs, uint32_t instance)
{
	struct proc_entry *p = hashmap__get_u64(&u->procs, instance);
	struct proc_snapshot *s;

	if (!p)
		return;
	s = proc_table__get(procs, instance);
	/* (one whose mapping was replaced is read once its samples so far are
	 * named: proc_table__refresh_replaced) */
	if (s && s->replaced)
		return;
	/* Re-reading too often would cost a /proc read a sample for a pc no
	 * mapping will ever cover; what the side-band logged since (a library
	 * the dynamic loader mapped after the first read) costs none. */
	if (monotonic_ns() - p->written_ns < MISS_REFRESH_NS && !(s && proc_table__log_moved(procs, s))) {
		if (!p->miss_pending) {
			p->miss_pending = true;
			u->pending++;
		}
		return;
	}
	u->st.miss_refreshes++;
	/* A refresh hands the new mappings to unwinder__mapped (the table's
	 * observer), which queues the rewrite that re-arms the walker; a
	 * process gone meanwhile ends through its exit event. */
	if (s)
		proc_table__refresh(procs, s);
}

struct pending_walk {
	uint32_t due[64];
	size_t n;
};

static void collect_due(uint64_t key, void *val, void *ctx)
{
	struct pending_walk *w = ctx;
	struct proc_entry *p = val;

	(void)key;
	if (p->miss_pending && w->n < sizeof(w->due) / sizeof(w->due[0]) &&
	    monotonic_ns() - p->written_ns >= MISS_REFRESH_NS)
		w->due[w->n++] = p->instance;
}

void unwinder__tick(struct unwinder *u, struct proc_table *procs)
{
	struct pending_walk w = { .n = 0 };
	uint64_t now;

	if (!u)
		return;
	if (u->pending) {
		hashmap__each(&u->procs, collect_due, &w);
		for (size_t i = 0; i < w.n; i++)
			unwinder__miss(u, procs, w.due[i]);
	}
	now = monotonic_ns();
	if (u->nended && now - u->ended_since >= ENDED_FLUSH_NS)
		delete_ended(u);
	if (u->table_ttl_ns && now >= u->expiry_due) {
		expire_tables(u, now);
		u->expiry_due = now + EXPIRY_CHECK_NS;
	}
	jobs_collect(u);
	/* Oldest first; a process gone meanwhile is skipped. */
	while (u->qlen) {
		uint32_t inst = u->queue[u->qhead];
		struct proc_snapshot *s = proc_table__get(procs, inst);

		if (s && !s->ended)
			load_process(u, s);
		u->qhead = (u->qhead + 1) % QUEUE_MAX;
		u->qlen--;
		hashmap__del_u64(&u->queued, inst);
	}
	/* The tables these processes' files found in the disk cache are
	 * done already: loaded now, not at the next tick, which a drain
	 * may hold back for a few hundred ms while their samples are
	 * walked by frame pointers. */
	jobs_collect(u);
}

int unwinder__poll_ms(const struct unwinder *u, int timeout_ms)
{
	if (!u)
		return timeout_ms;
	if (u->qlen)
		return 0;
	for (int i = 0; i < KILN_LANG_COUNT; i++)
		if (interp_procs__pending(u->interp[i]))
			return timeout_ms < INTERP_POLL_MS ? timeout_ms : INTERP_POLL_MS;
	return timeout_ms;
}

struct interp_procs *unwinder__interp(const struct unwinder *u, enum kiln_interp_lang lang)
{
	return u ? u->interp[lang] : NULL;
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *out)
{
	*out = u->st;
	out->maps_bytes = u->m.bytes + sampler__rows_bytes(u->smp);
	out->rules = u->nrules;
	table_cache__stats(u->cache, &out->cache);
	out->cache_dir = table_cache__dir(u->cache);
}

static void free_exe(uint64_t hash, void *val, void *ctx)
{
	(void)hash;
	(void)ctx;
	free(val);
}

static void free_entry(uint64_t hash, void *val, void *ctx)
{
	struct proc_entry *p = val;

	(void)hash;
	(void)ctx;
	free(p->exes);
	free(p);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->thread_started) {
		pthread_mutex_lock(&u->mu);
		u->stop = true;
		pthread_cond_signal(&u->cv);
		pthread_mutex_unlock(&u->mu);
		pthread_join(u->thread, NULL);
	}
	jobs_free(u->todo.head);
	jobs_free(u->done.head);
	hashmap__each(&u->procs, free_entry, NULL);
	hashmap__clear(&u->procs);
	hashmap__each(&u->exes, free_exe, NULL);
	hashmap__clear(&u->exes);
	hashmap__clear(&u->rule_index);
	hashmap__clear(&u->queued);
	hashmap__clear(&u->written);
	free(u->queue);
	free(u->free);
	free(u->free_slots);
	free(u->rules);
	for (int i = 0; i < KILN_LANG_COUNT; i++)
		interp_procs__free(u->interp[i]);
	free(u);
}
