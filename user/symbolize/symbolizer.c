// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hash.h"
#include "core/log.h"
#include "symbolize/bpf_ksyms.h"
#include "symbolize/frame_memo.h"
#include "symbolize/jit.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolizer.h"
#include "unwind/table_cache.h"

/* Longest frame name kept; longer (template-heavy C++) names are cut. */
#define NAME_MAX_BYTES 1024
/* A frame takes at most two names (function, file); past this a name is
 * cut, never written beyond. */
#define SCRATCH_BYTES (2 * SYMBOLIZER_MAX_FRAMES * NAME_MAX_BYTES)
/* A live process is re-read for an address in no mapping at most this
 * often (JIT code and freed mappings would otherwise re-read it per frame). */
#define REFRESH_MIN_NS 1000000000ull
/* The BPF programs' names are read again for an address they lack at most
 * this often (BPF programs come and go). */
#define BPF_KSYMS_MIN_NS 1000000000ull
/* Kernel addresses recur from stack to stack (the same syscall and
 * interrupt paths): the last lookups are remembered, direct-mapped by
 * address, each valid while ks is the table that answered it. */
#define KMEMO_SHIFT 10

struct kmemo {
	uint64_t addr;          /* 0: unused */
	struct ksym k;
};

struct symbolizer {
	struct kallsyms *ks;
	struct kmemo kmemo[1u << KMEMO_SHIFT];  /* ks's recent answers */
	const char *ks_path;    /* where ks was read, for a read after the cache */
	bool ks_cached;         /* ks came from the cache directory */
	struct bpf_ksyms *bpf;  /* the BPF programs' functions, or NULL */
	uint64_t bpf_read_ns;   /* when they were read (0: never) */
	bool bpf_refused;       /* bpf() would not list them: not asked again */
	struct symcache *cache;
	size_t table_max;       /* a quarter of the cache: a bigger table is refused */
	uint64_t cache_ttl_ns;
	uint64_t now;           /* monotonic ns of the current drain */
	uint64_t loads_aged;    /* stats.symtab_loads at the last symbolizer__age */
	struct proc_table *procs;
	struct debuginfod *dbgi;        /* NULL: no debuginfod lookups */
	struct table_cache *tables;     /* symbol tables on disk; NULL: none */
	uint64_t found_seen;            /* debug files fetched at the last age */
	uint64_t lookups_ended;         /* lookups ended, any way, at the last age */
	unsigned waiting;               /* SYMBOLIZER_WAIT_*: the last stack's frames wait */
	struct symbolizer_stats before; /* stats before the last stack */
	struct jit_cache *jit;
	struct symtab *vdso;
	struct frame_memo *memo;        /* the user frames named this drain */
	/* per language (kiln/interp.h): its processes (NULL: its frames
	 * stay unnamed) and its names */
	struct interp_procs *interp[KILN_LANG_COUNT];
	struct code_names *names[KILN_LANG_COUNT];
	char *scratch;          /* names of the current stack */
	size_t scratch_len;
	/* The mapping of the current stack's last user frame, its symbol
	 * table and the copy of its path that frame got: the next frame in
	 * that mapping looks no table up, and shares the copy, and
	 * profile__add then its mapping (same_mapping compares the pointers)
	 * instead of hashing the path again. */
	const struct proc_mapping *last_map;
	const struct symtab *last_st;   /* its symbol table, or NULL */
	bool last_vdso;                 /* it is the vDSO (addresses from its start) */
	const char *last_map_file;
	bool last_waits;                /* its names may change this drain (a debug file due) */
	size_t inlined_room;    /* inlined frames the current stack may still get */
	struct symbolizer_stats stats;
};

/* Every process maps the same vDSO image as kiln: read kiln's own. */
static struct symtab *load_own_vdso(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct proc_mapping *maps = NULL;
	struct symtab *st = NULL;
	char buf[65536];
	FILE *f;
	size_t len;
	int n;

	if (!base)
		return NULL;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return NULL;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	n = proc_maps__parse(buf, len, &maps, NULL, NULL);
	for (int i = 0; i < n; i++)
		if (maps[i].start == base && strcmp(maps[i].name, "[vdso]") == 0)
			st = symtab__load_mem((const void *)base, maps[i].end - maps[i].start);
	if (n > 0)
		proc_mappings__free(maps, (size_t)n);
	return st;
}

struct symbolizer *symbolizer__new(size_t cache_bytes, uint64_t cache_ttl_ns, size_t jit_bytes,
				   struct proc_table *procs)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));

	if (!sym)
		return NULL;
	sym->procs = procs;
	sym->cache_ttl_ns = cache_ttl_ns;
	/* One table may not take more than a quarter of the cache: a file
	 * cannot push every other process's symbols out, and the loader
	 * refuses it before allocating it. */
	sym->table_max = cache_bytes / 4;
	sym->scratch = malloc(SCRATCH_BYTES);
	sym->memo = frame_memo__new();
	sym->cache = symcache__new(cache_bytes);
	sym->jit = jit_cache__new(proc_table__root(procs), jit_bytes);
	sym->names[KILN_LANG_PY] = code_names__new(&py_names_lang, CODE_NAMES_BYTES);
	sym->names[KILN_LANG_RB] = code_names__new(&rb_names_lang, CODE_NAMES_BYTES);
	if (!sym->scratch || !sym->memo || !sym->cache || !sym->jit || !sym->names[KILN_LANG_PY] ||
	    !sym->names[KILN_LANG_RB]) {
		symbolizer__free(sym);
		errno = ENOMEM;
		return NULL;
	}
	sym->vdso = load_own_vdso();
	return sym;
}

static void kernel_symbols_loaded(struct symbolizer *sym, const char *path)
{
	if (!sym->ks)
		pr_warn("%s: cannot read kernel symbols (%s): kernel frames stay unnamed",
			path, strerror(errno));
	else if (kallsyms__restricted(sym->ks))
		pr_warn("%s: every address is zero (kernel.kptr_restrict hides them): run as root, or set sysctl kernel.kptr_restrict=0, to name kernel frames",
			path);
}

/* ks replaced by a table read anew: its remembered answers go with it. */
static void kernel_table_drop(struct symbolizer *sym)
{
	kallsyms__free(sym->ks);
	sym->ks = NULL;
	memset(sym->kmemo, 0, sizeof(sym->kmemo));
}

void symbolizer__load_kernel_symbols(struct symbolizer *sym, const struct kallsyms_paths *paths,
				     const char *cache_dir)
{
	int dirfd = cache_dir ? open(cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	enum kallsyms_cache_result res;

	kernel_table_drop(sym);
	sym->ks = kallsyms__load_cached(paths, dirfd, &res);
	if (dirfd >= 0)
		close(dirfd);
	sym->ks_path = paths->kallsyms;
	sym->ks_cached = res == KALLSYMS_CACHE_HIT;
	sym->stats.kallsyms_cached += sym->ks_cached;
	sym->stats.kallsyms_read += !sym->ks_cached;
	sym->stats.kallsyms_cache_refused += res == KALLSYMS_CACHE_REFUSED;
	if (res == KALLSYMS_CACHE_REFUSED)
		pr_warn("%s/kernel.ksym: not kiln's own or corrupt: kernel symbols read again and the file rewritten",
			cache_dir);
	kernel_symbols_loaded(sym, paths->kallsyms);
}

/* A BPF program's function holding addr, from the programs' list read
 * through bpf(): again when it lacks addr, at most every BPF_KSYMS_MIN_NS. */
static bool bpf_lookup(struct symbolizer *sym, uint64_t addr, struct ksym *k)
{
	uint64_t now;

	if (bpf_ksyms__lookup(sym->bpf, addr, k))
		return true;
	now = monotonic_ns();
	if (sym->bpf_refused || (sym->bpf_read_ns && now - sym->bpf_read_ns < BPF_KSYMS_MIN_NS))
		return false;
	bpf_ksyms__free(sym->bpf);
	sym->bpf = bpf_ksyms__load();
	sym->bpf_read_ns = now;
	sym->stats.kallsyms_bpf++;
	if (!sym->bpf && errno != ENOENT) {
		sym->bpf_refused = true;
		pr_debug("BPF programs not listed (%s): their frames are named from /proc/kallsyms",
			 strerror(errno));
	}
	sym->stats.bpf_programs_skipped += bpf_ksyms__skipped(sym->bpf);
	return bpf_ksyms__lookup(sym->bpf, addr, k);
}

/* A cached table lacks the symbols loaded since it was written (BPF
 * programs, trampolines): at an address it cannot name for that reason,
 * the BPF programs are listed, and if none holds it the kernel's own table
 * is read, once a run. */
static bool kernel_lookup(struct symbolizer *sym, uint64_t addr, struct ksym *k)
{
	struct kmemo *m = &sym->kmemo[hash__mix(addr) & ((1u << KMEMO_SHIFT) - 1)];

	if (!sym->ks || kallsyms__restricted(sym->ks))
		return false;
	if (addr && m->addr == addr) {
		*k = m->k;
		return true;
	}
	if (kallsyms__lookup(sym->ks, addr, k)) {
		m->addr = addr;
		m->k = *k;
		return true;
	}
	if (!sym->ks_cached || !kallsyms__uncovered(sym->ks))
		return false;
	if (bpf_lookup(sym, addr, k))
		return true;
	kernel_table_drop(sym);
	sym->ks = kallsyms__load(sym->ks_path);
	sym->ks_cached = false;
	sym->stats.kallsyms_read++;
	kernel_symbols_loaded(sym, sym->ks_path);
	return sym->ks && kallsyms__lookup(sym->ks, addr, k);
}

/* Copies a formatted name into the stack's scratch space (cut to what is
 * left of it). */
__attribute__((format(printf, 2, 3)))
static const char *scratch_name(struct symbolizer *sym, const char *fmt, ...)
{
	size_t room = SCRATCH_BYTES - sym->scratch_len;
	char *dst = sym->scratch + sym->scratch_len;
	va_list ap;
	int n;

	if (room > NAME_MAX_BYTES)
		room = NAME_MAX_BYTES;
	if (room < 2)
		return "";
	va_start(ap, fmt);
	n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= room)
		n = (int)room - 1;
	sym->scratch_len += (size_t)n + 1;
	return dst;
}

/* Copies a name into the stack's scratch space, cut as scratch_name cuts
 * (the common case, without vsnprintf's parsing). */
static const char *scratch_copy(struct symbolizer *sym, const char *name)
{
	size_t room = SCRATCH_BYTES - sym->scratch_len, n;
	char *dst = sym->scratch + sym->scratch_len;

	if (room > NAME_MAX_BYTES)
		room = NAME_MAX_BYTES;
	if (room < 2)
		return "";
	n = strnlen(name, room - 1);
	memcpy(dst, name, n);
	dst[n] = '\0';
	sym->scratch_len += n + 1;
	return dst;
}

/* "name+0x<off in hex>" in the scratch space, as scratch_name would write
 * it (a frame no symbol names, at every drain). */
static const char *scratch_offset_name(struct symbolizer *sym, const char *name, uint64_t off)
{
	char buf[NAME_MAX_BYTES + sizeof("+0x") + 16];
	size_t n = strnlen(name, NAME_MAX_BYTES), digits = 1;

	for (uint64_t v = off >> 4; v; v >>= 4)
		digits++;
	memcpy(buf, name, n);
	memcpy(buf + n, "+0x", 3);
	n += 3;
	for (size_t i = digits; i-- > 0; off >>= 4)
		buf[n + i] = "0123456789abcdef"[off & 0xf];
	buf[n + digits] = '\0';
	return scratch_copy(sym, buf);
}

static void kernel_frame(struct symbolizer *sym, uint64_t ip, uint64_t lookup_ip,
			 uint64_t count, struct frame *f)
{
	struct ksym ks, *k = kernel_lookup(sym, lookup_ip, &ks) ? &ks : NULL;

	*f = (struct frame){ .kind = FRAME_KERNEL, .addr = ip };
	sym->stats.kernel_frames += count;
	if (!k) {
		f->name = "[unknown]";
		f->unnamed = true;
		f->map_file = "[kernel.kallsyms]";
		return;
	}
	sym->stats.kernel_resolved += count;
	if (k->module) {
		f->name = scratch_name(sym, "%s [%s]", k->name, k->module);
		f->map_file = scratch_name(sym, "[%s]", k->module);
	} else {
		f->name = scratch_copy(sym, k->name);
		f->map_file = "[kernel.kallsyms]";
	}
}

/* A table with no debug symbols: only .dynsym's, or none. */
static bool lacks_debug(const struct symtab *st)
{
	const char *src = symtab__source(st);

	return strcmp(src, "dynsym") == 0 || strcmp(src, "none") == 0;
}

/* b's table from the cache directory (key: what it is filed under there,
 * "" when it cannot be: no directory, or b not ELF), or NULL: refused
 * ones counted and deleted there. */
static struct symtab *from_disk(struct symbolizer *sym, const struct binary *b, char *key,
				size_t len)
{
	char debug_id[SYMBOLIZER_DISK_KEY_MAX / 2];
	struct symtab *st = NULL;
	uint8_t *buf;
	size_t n;
	int err;

	if (!sym->tables || table_cache__dir(sym->tables) == NULL ||
	    table_cache__key(b->fd, key, len) ||
	    symtab__debug_file_id(b->fd, b->root, b->path, debug_id, sizeof(debug_id))) {
		key[0] = '\0';
		return NULL;
	}
	n = strlen(key);
	snprintf(key + n, len - n, " d:%s", debug_id);
	/* (the file holds the table's bytes, a header and the key besides) */
	err = table_cache__read_symbols(sym->tables, key, sym->table_max + 4096, &buf, &n);
	if (!err)
		err = symtab__adopt(buf, n, key, sym->table_max, &st);
	if (!err) {
		sym->stats.symtab_disk_hits++;
		return st;
	}
	table_cache__refuse_symbols(sym->tables, key, b->path, err);
	return NULL;
}

struct symtab_file {
	const struct symtab *st;
	const char *key;
};

static int write_symtab(FILE *f, void *ctx)
{
	const struct symtab_file *sf = ctx;

	return symtab__cache_write(sf->st, sf->key, f);
}

/* Files a table just loaded under key, when it is one that can be. */
static void to_disk(struct symbolizer *sym, const char *key, const struct symtab *st)
{
	struct symtab_file sf = { st, key };
	size_t n;

	if (symtab__cache_size(st, key, &n))
		return; /* a Go binary's: not cached */
	if (table_cache__write_symbols(sym->tables, key, n, write_symtab, &sf) == 0)
		sym->stats.symtab_disk_writes++;
}

/* b's table, from the debug file a debuginfod client fetched for it when
 * there is one; otherwise, when no local source had debug symbols, a
 * lookup is asked for (its file is used once it arrived: symbolizer__age). */
static struct symtab *load_table(struct symbolizer *sym, const struct binary *b)
{
	char fetched[PATH_MAX], key[SYMBOLIZER_DISK_KEY_MAX] = "";
	bool have = sym->dbgi && b->build_id[0] &&
		    debuginfod__fetched(sym->dbgi, b->build_id, fetched, sizeof(fetched));
	struct symtab *st = have ? NULL : from_disk(sym, b, key, sizeof(key));

	if (!st) {
		st = symtab__load_with(b->fd, b->root, b->path, sym->table_max,
				       have ? fetched : NULL);
		if (st && key[0])
			to_disk(sym, key, st);
	}
	if (!st || !sym->dbgi || !b->build_id[0] || !lacks_debug(st))
		return st;
	if (have) {
		/* Refused (logged and counted by the readers): asked again
		 * once the miss is forgotten. */
		sym->stats.debuginfod_unusable++;
		debuginfod__unusable(sym->dbgi, b->build_id, monotonic_ns());
	} else {
		debuginfod__request(sym->dbgi, b->build_id, monotonic_ns());
	}
	return st;
}

/* b's table lacks debug symbols and a debug file is on its way, or came
 * after the drain began (symbolizer__age loads the table again with it at
 * the next): its samples wait, rather than be named without it. */
static bool debug_file_due(struct symbolizer *sym, const struct binary *b)
{
	char path[PATH_MAX];

	return debuginfod__waiting(sym->dbgi, b->build_id) ||
	       debuginfod__fetched(sym->dbgi, b->build_id, path, sizeof(path));
}

/* The symbol table of a mapped file, loaded once per binary. */
static const struct symtab *binary_symtab(struct symbolizer *sym, struct binary *b)
{
	const struct symtab *st = symcache__get(sym->cache, b->key, sym->now);
	struct symtab *loaded;

	if (st || b->fd < 0)
		return st;
	loaded = load_table(sym, b);
	if (!loaded) {
		pr_debug("%s: no symbols: %s", b->path, strerror(errno));
		sym->stats.symtab_failures++;
		/* Do not retry a file that is not ELF. */
		close(b->fd);
		b->fd = -1;
		b->unreadable = true;
		return NULL;
	}
	sym->stats.symtab_loads++;
	pr_debug("%s: %zu symbols from %s", b->path, symtab__count(loaded),
		 symtab__source(loaded));
	return symcache__put(sym->cache, b->key, loaded, sym->now);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The mapping of ip; a live process whose snapshot lacks it is read again
 * (at most every REFRESH_MIN_NS), but not one whose mapping was replaced:
 * this drain names its samples with the mappings they were taken in, and
 * it is read after (proc_table__refresh_replaced). */
static const struct proc_mapping *find_mapping(struct symbolizer *sym,
					       struct proc_snapshot *snap, uint64_t ip)
{
	const struct proc_mapping *m = snap ? proc_snapshot__find(snap, ip) : NULL;

	if (!m && snap && !snap->ended && !snap->replaced &&
	    monotonic_ns() - snap->taken_ns > REFRESH_MIN_NS &&
	    proc_table__refresh(sym->procs, snap) == 0) {
		sym->last_map = NULL;   /* the snapshot's mappings were replaced */
		frame_memo__forget(sym->memo);
		m = proc_snapshot__find(snap, ip);
	}
	return m;
}

/* The name of JIT code from the process's perf map or jitdump, or NULL. */
static const char *jit_frame(struct symbolizer *sym, const struct proc_snapshot *snap,
			     uint64_t ip, uint64_t count)
{
	const char *name = jit_cache__name(sym->jit, snap, ip, sym->now);

	sym->stats.jit_frames += count;
	if (name)
		sym->stats.jit_resolved += count;
	else if (jit_cache__names_at_exit(sym->jit, snap))
		sym->waiting |= SYMBOLIZER_WAIT_JIT;
	return name;
}

/* How a user frame was named: a symbol named it, with a source file and
 * line; keep: the memo may keep it (the same frame named again this drain
 * would come out the same). */
struct named_frame {
	bool resolved, source, keep;
};

/* The source frames at vaddr of st (Go's), as frames after f (already
 * the machine frame, named): f becomes the outermost, the function, and
 * the calls inlined there follow it, innermost last, while the stack's
 * budget of inlined frames lasts. Returns the frames added after f. */
static size_t source_frames(struct symbolizer *sym, const struct symtab *st, uint64_t vaddr,
			    uint64_t count, struct frame *f, struct named_frame *how)
{
	struct src_frame src[16];
	size_t n = symtab__source_frames(st, vaddr, src, sizeof(src) / sizeof(src[0]));

	if (!n)
		return 0;
	sym->stats.source_frames += count;
	how->source = true;
	f->file = src[n - 1].file ? scratch_copy(sym, src[n - 1].file) : NULL;
	f->line = src[n - 1].line;
	if (n - 1 > sym->inlined_room) {
		sym->stats.inlined_dropped += (n - 1) * count;
		how->keep = false;      /* another stack may have room for them */
		return 0;
	}
	sym->inlined_room -= n - 1;
	sym->stats.inlined_frames += (n - 1) * count;
	for (size_t i = 1; i < n; i++) {
		const struct src_frame *in = &src[n - 1 - i];

		f[i] = f[0];
		f[i].name = scratch_copy(sym, in->name);
		f[i].file = in->file ? scratch_copy(sym, in->file) : NULL;
		f[i].line = in->line;
		f[i].inlined = true;
	}
	/* each frame is inlined into the one before it, the outermost into
	 * none */
	return n - 1;
}

/* A stack's frame in mapping m after one in another: m's symbol table
 * (the vDSO's has no file) and a copy of its path, which the next frames
 * in m share. */
static void enter_mapping(struct symbolizer *sym, const struct proc_mapping *m)
{
	const struct symtab *st = NULL;

	sym->last_waits = false;
	if (m->bin) {
		st = binary_symtab(sym, m->bin);
		sym->last_waits = st && sym->dbgi && m->bin->build_id[0] && lacks_debug(st) &&
				  debug_file_due(sym, m->bin);
		if (sym->last_waits)
			sym->waiting |= SYMBOLIZER_WAIT_DEBUG_FILE;
	}
	sym->last_vdso = !m->bin && strcmp(m->name, "[vdso]") == 0;
	if (sym->last_vdso)
		st = sym->vdso;
	sym->last_map = m;
	sym->last_st = st;
	sym->last_map_file = scratch_copy(sym, m->bin ? m->bin->path : m->name);
}

/* Names the user frame at ip into f, and the calls inlined there after
 * it; returns the frames written, and how in *how. */
static size_t name_user_frame(struct symbolizer *sym, struct proc_snapshot *snap, uint64_t ip,
			      uint64_t lookup_ip, uint64_t count, struct frame *f,
			      struct named_frame *how)
{
	const struct proc_mapping *m = find_mapping(sym, snap, lookup_ip);
	const struct symtab *st = NULL;
	const struct sym *s = NULL;
	struct sym found;
	const char *jit_name = NULL;
	uint64_t off, vaddr = 0;

	*f = (struct frame){ .kind = FRAME_USER, .addr = ip, .name = "[unknown]", .unnamed = true };
	*how = (struct named_frame){ 0 };
	sym->stats.user_frames += count;
	if (!m)
		return 1;       /* (a live process's mappings are read again for it) */
	if (m != sym->last_map)
		enter_mapping(sym, m);
	how->keep = !sym->last_waits;
	st = sym->last_st;
	off = lookup_ip - m->start + (sym->last_vdso ? 0 : m->pgoff);
	f->map_file = sym->last_map_file;
	f->map_build_id = m->bin && m->bin->build_id[0] ? m->bin->build_id : NULL;
	f->map_start = m->start;
	f->map_limit = m->end;
	f->map_offset = m->pgoff;
	if (st)
		s = symtab__lookup(st, off, &vaddr, &found);
	if (!s && jit__code_mapping(m)) {
		jit_name = jit_frame(sym, snap, lookup_ip, count);
		how->keep = false;      /* a JIT's code and names change */
	}
	if (s || jit_name) {
		f->name = scratch_copy(sym, s ? s->name : jit_name);
		f->unnamed = false;
		sym->stats.user_resolved += count;
		how->resolved = true;
		return s ? 1 + source_frames(sym, st, vaddr, count, f, how) : 1;
	}
	f->name = scratch_offset_name(sym, base_name(f->map_file), st && vaddr ? vaddr : off);
	return 1;
}

static struct frame_memo_key memo_key(const struct proc_snapshot *snap, uint64_t ip,
				      bool innermost)
{
	return (struct frame_memo_key){ .snap = snap, .instance = snap->instance,
					.innermost = innermost, .ip = ip };
}

/* The frames of a run the memo kept, counted as name_user_frame counts
 * them; the calls inlined there left out past the stack's budget. */
static size_t remembered_frames(struct symbolizer *sym, const struct frame_memo_run *run,
				uint64_t count, struct frame *f)
{
	size_t inlined = run->n - 1;

	sym->stats.frame_memo_hits++;
	sym->stats.user_frames += count;
	sym->stats.user_resolved += run->resolved ? count : 0;
	sym->stats.source_frames += run->source ? count : 0;
	if (inlined > sym->inlined_room) {
		sym->stats.inlined_dropped += inlined * count;
		inlined = 0;
	}
	sym->inlined_room -= inlined;
	sym->stats.inlined_frames += inlined * count;
	memcpy(f, run->frames, (inlined + 1) * sizeof(*f));
	return inlined + 1;
}

/* Names the user frame at ip into f, and the calls inlined there after
 * it, as this drain named it already when it did; returns the frames
 * written. */
static size_t user_frame(struct symbolizer *sym, struct proc_snapshot *snap, uint64_t ip,
			 uint64_t lookup_ip, uint64_t count, struct frame *f)
{
	struct frame_memo_key k;
	struct frame_memo_run run;
	struct named_frame how;
	size_t n;

	if (!snap)
		return name_user_frame(sym, snap, ip, lookup_ip, count, f, &how);
	k = memo_key(snap, ip, lookup_ip == ip);
	if (frame_memo__find(sym->memo, &k, &run))
		return remembered_frames(sym, &run, count, f);
	n = name_user_frame(sym, snap, ip, lookup_ip, count, f, &how);
	sym->stats.frame_memo_misses++;
	run = (struct frame_memo_run){ .frames = f, .n = (uint32_t)n, .resolved = how.resolved,
				       .source = how.source };
	/* the kept copy's strings outlive the stack, and its frames in one
	 * file share their path */
	if (how.keep && frame_memo__put(sym->memo, &k, &run))
		memcpy(f, run.frames, n * sizeof(*f));
	return n;
}

#define SLOT_VALUE(ip) ((ip) & ((1ull << KILN_INTERP_TAG_SHIFT) - 1))
#define SLOT_AUX(ip) ((ip) >> KILN_INTERP_TAG_SHIFT == KILN_INTERP_TAG_AUX)

/* The language of an interpreter slot (kiln/interp.h: each language's
 * tags are 0xc1 + 2 * lang, code then where), -1 for a native pc or an
 * aux slot; *where: the slot is the second of its frame. */
static int interp_slot(uint64_t ip, bool *where)
{
	unsigned tag = (unsigned)(ip >> KILN_INTERP_TAG_SHIFT);

	if (tag < KILN_PY_TAG_CODE || tag >= KILN_PY_TAG_CODE + 2 * KILN_LANG_COUNT)
		return -1;
	*where = (tag - KILN_PY_TAG_CODE) & 1;
	return (int)(tag - KILN_PY_TAG_CODE) / 2;
}

/* An interpreter frame's slots: code and where, and aux (the value of its
 * third slot, 0 without). */
struct interp_slots {
	int lang;
	uint64_t code_slot, where_slot, aux;
};

/* What slot *i of a user stack, read root first, starts: a native pc (0),
 * an interpreter frame (1: its slots in *fr, *i moved to its innermost
 * slot), or no frame (-1: a slot without its pair). */
static int frame_slots(const uint64_t *uips, uint32_t *i, struct interp_slots *fr)
{
	bool where, code_where;
	uint64_t aux = 0;
	int lang = interp_slot(uips[*i], &where);

	if (SLOT_AUX(uips[*i]) && *i > 0) {
		/* a frame's third slot: its pair follows */
		aux = SLOT_VALUE(uips[*i]);
		lang = interp_slot(uips[--*i], &where);
	}
	if (lang >= 0 && where) {
		if (*i == 0 || interp_slot(uips[*i - 1], &code_where) != lang || code_where)
			return -1;
		*fr = (struct interp_slots){ lang, uips[*i - 1], uips[*i], aux };
		--*i;
		return 1;
	}
	return lang >= 0 || SLOT_AUX(uips[*i]) ? -1 : 0;
}

/* The interpreter frame of slots fr. */
static void interp_frame(struct symbolizer *sym, const struct proc_snapshot *snap,
			 const struct interp_slots *fr, uint64_t count, struct frame *f)
{
	static const char *const unnamed[KILN_LANG_COUNT] = { "[python code 0x%" PRIx64 "]",
							       "[ruby iseq 0x%" PRIx64 "]" };
	int lang = fr->lang;
	uint64_t code = SLOT_VALUE(fr->code_slot);
	const void *facts = snap ? interp_procs__get(sym->interp[lang], snap->instance) : NULL;
	struct code_frame_name cn;

	*f = (struct frame){ .kind = FRAME_USER, .addr = code };
	sym->stats.user_frames += count;
	if (snap && code_names__frame(sym->names[lang], facts, snap->pid, snap->instance, code,
				      fr->aux, (uint32_t)(fr->where_slot >> 32) & KILN_INTERP_CHECK_MASK,
				      (uint32_t)fr->where_slot, &cn) == 0) {
		f->name = scratch_copy(sym, cn.name);
		f->file = scratch_copy(sym, cn.file);
		f->line = cn.line;
		sym->stats.user_resolved += count;
		return;
	}
	f->name = scratch_name(sym, unnamed[lang], code);
	f->unnamed = true;
}

/* Whether return address ip is one this drain named (in a mapping, then). */
static bool remembered(struct symbolizer *sym, const struct proc_snapshot *snap, uint64_t ip)
{
	struct frame_memo_key k;
	struct frame_memo_run run;

	if (!snap)
		return false;
	k = memo_key(snap, ip, false);
	return frame_memo__find(sym->memo, &k, &run);
}

size_t symbolizer__stack(struct symbolizer *sym, const char *comm,
			 struct proc_snapshot *snap, const uint64_t *kips, uint32_t kn,
			 const uint64_t *uips, uint32_t un, uint32_t uflags, uint64_t count,
			 struct frame *frames)
{
	size_t n = 0;

	sym->scratch_len = 0;
	sym->last_map = NULL;
	sym->inlined_room = SYMBOLIZER_MAX_INLINED;
	sym->waiting = 0;
	sym->before = sym->stats;
	frames[n++] = (struct frame){ .kind = FRAME_ROOT,
				      .name = scratch_copy(sym, comm) };
	if (un && (uflags & KILN_STACK_TRUNCATED))
		frames[n++] = (struct frame){ .kind = FRAME_USER, .name = "[truncated]" };
	/* Stacks come innermost first. Every frame but the innermost holds a
	 * return address, which may already be past the end of the calling
	 * function: look up the byte before it. */
	/* A return address outside every mapping means the frame-pointer walk
	 * left the stack (a caller built without frame pointers): what lies
	 * beyond it is noise, shown as one [unknown] caller. */
	for (uint32_t i = 1; i < un; i++) {
		bool where;

		if (interp_slot(uips[i], &where) >= 0 || SLOT_AUX(uips[i]))
			continue;
		if (!remembered(sym, snap, uips[i]) && !find_mapping(sym, snap, uips[i] - 1)) {
			n += user_frame(sym, snap, uips[i], uips[i] - 1, count, &frames[n]);
			sym->stats.user_stacks_cut += count;
			un = i;
			break;
		}
	}
	for (uint32_t i = un; i-- > 0;) {
		struct interp_slots fr;
		int kind = frame_slots(uips, &i, &fr);

		if (kind > 0)
			interp_frame(sym, snap, &fr, count, &frames[n++]);
		else if (kind == 0)
			n += user_frame(sym, snap, uips[i], i ? uips[i] - 1 : uips[i], count,
					&frames[n]);
	}
	for (uint32_t i = kn; i-- > 0;)
		kernel_frame(sym, kips[i], i ? kips[i] - 1 : kips[i], count, &frames[n++]);
	return n;
}

/* symcache__drop_if: a table without debug symbols whose debug file has
 * been fetched since. */
static bool fetched_since(const struct symtab *st, void *ctx)
{
	struct symbolizer *sym = ctx;
	char path[PATH_MAX];

	return lacks_debug(st) && symtab__build_id(st)[0] &&
	       debuginfod__fetched(sym->dbgi, symtab__build_id(st), path, sizeof(path));
}

/* Tables whose debug file arrived since the last drain are dropped: the
 * next stack that needs one loads it again, with that file. */
static void take_arrivals(struct symbolizer *sym)
{
	struct debuginfod_stats ds;
	uint64_t ended = 0;
	size_t n;

	debuginfod__stats(sym->dbgi, &ds);
	for (int i = 0; i < DEBUGINFOD_RESULT_COUNT; i++)
		ended += ds.results[i];
	sym->lookups_ended = ended;
	if (ds.results[DEBUGINFOD_FOUND] == sym->found_seen)
		return;
	sym->found_seen = ds.results[DEBUGINFOD_FOUND];
	n = symcache__drop_if(sym->cache, fetched_since, sym);
	sym->stats.debuginfod_reloads += n;
	if (n)
		pr_debug("debuginfod: %zu symbol tables to load again with their debug files", n);
}

bool symbolizer__age(struct symbolizer *sym, uint64_t now)
{
	size_t n = symcache__expire(sym->cache, now, sym->cache_ttl_ns);
	bool loaded = sym->stats.symtab_loads != sym->loads_aged;

	if (sym->dbgi)
		take_arrivals(sym);

	if (n)
		pr_debug("symbol cache: %zu tables unused for %.0fs freed", n,
			 sym->cache_ttl_ns / 1e9);
	jit_cache__age(sym->jit, sym->procs);
	frame_memo__clear(sym->memo);
	sym->now = now;
	sym->loads_aged = sym->stats.symtab_loads;
	return n || loaded;
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	*out = sym->stats;
	out->frame_memo_full = frame_memo__full(sym->memo);
}

void symbolizer__use_debuginfod(struct symbolizer *sym, const struct debuginfod_opts *opts)
{
	sym->dbgi = debuginfod__new(opts);
}

unsigned symbolizer__waiting(const struct symbolizer *sym)
{
	return sym->waiting;
}

void symbolizer__uncount(struct symbolizer *sym)
{
	sym->stats.kernel_frames = sym->before.kernel_frames;
	sym->stats.kernel_resolved = sym->before.kernel_resolved;
	sym->stats.user_frames = sym->before.user_frames;
	sym->stats.user_resolved = sym->before.user_resolved;
	sym->stats.user_stacks_cut = sym->before.user_stacks_cut;
	sym->stats.jit_frames = sym->before.jit_frames;
	sym->stats.jit_resolved = sym->before.jit_resolved;
	sym->stats.source_frames = sym->before.source_frames;
	sym->stats.inlined_frames = sym->before.inlined_frames;
	sym->stats.inlined_dropped = sym->before.inlined_dropped;
}

uint64_t symbolizer__lookups_ended(const struct symbolizer *sym)
{
	return sym->lookups_ended;
}

size_t symbolizer__wait_lookups(struct symbolizer *sym, uint64_t timeout_ns)
{
	return debuginfod__wait(sym->dbgi, timeout_ns);
}

void symbolizer__debuginfod_stats(const struct symbolizer *sym, struct debuginfod_stats *out)
{
	debuginfod__stats(sym->dbgi, out);
}

void symbolizer__cache_stats(const struct symbolizer *sym, struct symcache_stats *out)
{
	symcache__stats(sym->cache, out);
}

void symbolizer__mapped(struct symbolizer *sym, const struct proc_snapshot *snap)
{
	jit_cache__mapped(sym->jit, snap, monotonic_ns());
}

void symbolizer__jit_stats(const struct symbolizer *sym, struct jit_stats *out)
{
	jit_cache__stats(sym->jit, out);
}

void symbolizer__use_interp(struct symbolizer *sym, enum kiln_interp_lang lang,
			   struct interp_procs *procs)
{
	sym->interp[lang] = procs;
}

void symbolizer__use_table_cache(struct symbolizer *sym, struct table_cache *tables)
{
	sym->tables = tables;
}

bool symbolizer__interp_stack(struct symbolizer *sym, uint32_t instance, const uint64_t *uips,
			      uint32_t un)
{
	const struct proc_snapshot *snap = NULL;
	struct interp_slots fr;
	bool read = false;

	for (uint32_t i = un; i-- > 0;) {
		const void *facts;

		if (frame_slots(uips, &i, &fr) <= 0)
			continue;
		facts = interp_procs__get(sym->interp[fr.lang], instance);
		if (!facts)
			continue;
		if (!snap)
			snap = proc_table__get(sym->procs, instance);
		if (!snap || snap->ended)
			return false;   /* every frame is this process's */
		/* (a name cached already is not read again) */
		read |= code_names__prefetch(sym->names[fr.lang], facts, snap->pid, instance,
					     SLOT_VALUE(fr.code_slot), fr.aux);
	}
	return read;
}

void symbolizer__interp_stats(const struct symbolizer *sym, enum kiln_interp_lang lang,
			      struct code_names_stats *out)
{
	code_names__stats(sym->names[lang], out);
}

void symbolizer__free(struct symbolizer *sym)
{
	if (!sym)
		return;
	for (int i = 0; i < KILN_LANG_COUNT; i++)
		code_names__free(sym->names[i]);
	debuginfod__free(sym->dbgi);
	kallsyms__free(sym->ks);
	bpf_ksyms__free(sym->bpf);
	jit_cache__free(sym->jit);
	symcache__free(sym->cache);
	symtab__free(sym->vdso);
	frame_memo__free(sym->memo);
	free(sym->scratch);
	free(sym);
}
