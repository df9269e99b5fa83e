// SPDX-License-Identifier: BSD-2-Clause
/* Kernel function symbols from the /proc/kallsyms text format.
 *
 * DESIGN: one pass over the text collects (address, name, module) entries;
 * names and module names go into one string arena (modules interned through
 * a small hash, one copy each); the entries are then sorted by address,
 * deduplicated and turned into the public struct ksym array, whose pointers
 * point into the arena. Lookups are a binary search. Nothing points into the
 * caller's buffer after kallsyms__parse returns. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/file.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "symbolize/kallsyms.h"

/* Longest line we accept: KSYM_NAME_LEN is 512 since Linux 6.1, module
 * names are below 64; anything longer is junk. */
#define KSYM_LINE_MAX	1024
#define KSYM_NAME_MAX	511
#define KSYM_MOD_MAX	255
/* No kernel function is this long: an address further past its nearest
 * symbol is outside any known function (e.g. past the last module symbol,
 * or in a hole between the core image and the module area). */
#define KSYM_MAX_SPAN	(1u << 20)
/* /proc/kallsyms is about 10 MB on large hosts; refuse absurd files. */
#define KSYM_FILE_MAX	(256u << 20)

struct kallsyms {
	const struct kent *syms;
	size_t count;
	const char *arena;	/* NUL-terminated names and module names */
	size_t arena_len;
	const struct kmod *mods;	/* sorted; only a cached table has them */
	size_t nmods;
	size_t skipped;
	size_t uncovered;
	bool restricted;
	void *own_syms, *own_arena;	/* parsed: malloc'd */
	void *map;			/* cached: the file, mmap()ed */
	size_t map_len;
};

/* A symbol: its name and module (arena offset + 1; 0: the core image) as
 * offsets into the arena, so that a table on disk is used as it is. */
struct kent {
	uint64_t addr;
	uint32_t name;
	uint32_t mod;
};

/* A loaded module's memory, [start, end), from /proc/modules. */
struct kmod {
	uint64_t start, end;
};

/* An entry while parsing: strings are arena offsets until the arena stops
 * moving. */
struct kentry {
	uint64_t addr;
	size_t name;
	size_t mod;		/* arena offset + 1; 0 for the core image */
	size_t line;		/* input order, the last tie-breaker */
	unsigned rank;
};

struct builder {
	struct kentry *v;
	size_t n, cap;
	char *arena;
	size_t arena_len, arena_cap;
	struct hashmap mods;	/* module name -> its arena offset + 1 */
};

static int arena_add(struct builder *b, const char *s, size_t len, size_t *off)
{
	if (b->arena_len + len + 1 > b->arena_cap) {
		size_t cap = b->arena_cap ? b->arena_cap * 2 : 4096;
		char *p;

		while (cap < b->arena_len + len + 1)
			cap *= 2;
		p = realloc(b->arena, cap);
		if (!p)
			return -ENOMEM;
		b->arena = p;
		b->arena_cap = cap;
	}
	memcpy(b->arena + b->arena_len, s, len);
	b->arena[b->arena_len + len] = '\0';
	*off = b->arena_len;
	b->arena_len += len + 1;
	return 0;
}

struct mod_key {
	const char *s;
	size_t len;
};

static bool mod_is(const void *ctx, const void *val, const void *key)
{
	const struct builder *b = ctx;
	const struct mod_key *k = key;
	const char *m = b->arena + (uintptr_t)val - 1;

	return strncmp(m, k->s, k->len) == 0 && m[k->len] == '\0';
}

/* Interns a module name: *off gets its arena offset + 1. */
static int mod_intern(struct builder *b, const char *s, size_t len, size_t *off)
{
	struct mod_key k = { s, len };
	uint64_t h = hash__bytes(s, len);
	void *v = hashmap__get(&b->mods, h, mod_is, b, &k);
	size_t o;
	int err;

	if (v) {
		*off = (uintptr_t)v;
		return 0;
	}
	err = arena_add(b, s, len, &o);
	if (err)
		return err;
	if (hashmap__add(&b->mods, h, (void *)(uintptr_t)(o + 1)))
		return -ENOMEM;
	*off = o + 1;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Global before weak before local: the name a reader expects when several
 * symbols share an address. */
static int type_rank(char t)
{
	switch (t) {
	case 'T': return 0;
	case 'W': return 1;
	case 't': return 2;
	case 'w': return 3;
	default:  return -1;
	}
}

struct parsed {
	uint64_t addr;
	char type;
	const char *name, *mod;
	size_t name_len, mod_len;
};

/* "ADDR TYPE NAME" optionally followed by "\t[MODULE]". false: junk. */
static bool parse_line(const char *s, size_t len, struct parsed *p)
{
	size_t i = 0, digits = 0;
	int v;

	if (len > KSYM_LINE_MAX)
		return false;
	p->addr = 0;
	while (i < len && (v = hexval(s[i])) >= 0) {
		p->addr = p->addr << 4 | (uint64_t)v;
		i++;
		digits++;
	}
	if (digits == 0 || digits > 16 || i + 3 > len || s[i] != ' ' ||
	    s[i + 1] == ' ' || s[i + 1] == '\t' || s[i + 2] != ' ')
		return false;
	p->type = s[i + 1];
	i += 3;
	p->name = s + i;
	while (i < len && s[i] != '\t' && s[i] != ' ')
		i++;
	p->name_len = (size_t)(s + i - p->name);
	if (p->name_len == 0 || p->name_len > KSYM_NAME_MAX ||
	    memchr(p->name, '\0', p->name_len))
		return false;
	p->mod = NULL;
	p->mod_len = 0;
	if (i == len)
		return true;
	if (s[i] != '\t' || i + 3 > len || s[i + 1] != '[' || s[len - 1] != ']')
		return false;
	p->mod = s + i + 2;
	p->mod_len = len - i - 3;
	if (p->mod_len == 0 || p->mod_len > KSYM_MOD_MAX ||
	    memchr(p->mod, ']', p->mod_len) || memchr(p->mod, '[', p->mod_len) ||
	    memchr(p->mod, ' ', p->mod_len) || memchr(p->mod, '\t', p->mod_len) ||
	    memchr(p->mod, '\0', p->mod_len))
		return false;
	return true;
}

static int add_entry(struct builder *b, const struct parsed *p, size_t line)
{
	struct kentry *e;
	int err;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct kentry *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	e = &b->v[b->n];
	e->addr = p->addr;
	e->line = line;
	e->rank = (unsigned)type_rank(p->type);
	e->mod = 0;
	err = arena_add(b, p->name, p->name_len, &e->name);
	if (!err && p->mod)
		err = mod_intern(b, p->mod, p->mod_len, &e->mod);
	if (err)
		return err;
	b->n++;
	return 0;
}

static int kentry_cmp(const void *a, const void *b)
{
	const struct kentry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sorts, keeps the best-ranked entry per address, and moves the arena
 * into ks. */
static int finish(struct builder *b, struct kallsyms *ks)
{
	struct kent *out;
	size_t n = 0;

	if (b->arena_len && b->arena_len < b->arena_cap) {
		char *a = realloc(b->arena, b->arena_len);

		if (a)
			b->arena = a;
	}
	if (b->arena_len > UINT32_MAX)
		return -EFBIG;
	ks->own_arena = b->arena;
	ks->arena = b->arena;
	ks->arena_len = b->arena_len;
	b->arena = NULL;
	if (!b->n)
		return 0;
	qsort(b->v, b->n, sizeof(*b->v), kentry_cmp);
	/* Convert in place (a kent is smaller than a kentry, and entry i is
	 * copied out before slot n <= i is written), so the two arrays never
	 * coexist: kallsyms is kiln's largest allocation at start. */
	out = (struct kent *)b->v;
	for (size_t i = 0; i < b->n; i++) {
		struct kentry e = b->v[i];

		if (n && out[n - 1].addr == e.addr)
			continue;
		out[n].addr = e.addr;
		out[n].name = (uint32_t)e.name;
		out[n].mod = (uint32_t)e.mod;
		n++;
	}
	ks->own_syms = realloc(b->v, n * sizeof(*out));
	if (!ks->own_syms)
		ks->own_syms = b->v;
	b->v = NULL;
	ks->syms = ks->own_syms;
	ks->count = n;
	return 0;
}

/* Parsing state shared by the buffer and the file readers. */
struct reader {
	struct builder b;
	struct kallsyms *ks;
	size_t line;
	bool any_addr, any_line;
};

static int reader_line(struct reader *r, const char *s, size_t l)
{
	struct parsed p;

	r->line++;
	if (l == 0)
		return 0;
	if (!parse_line(s, l, &p)) {
		r->ks->skipped++;
		return 0;
	}
	r->any_line = true;
	if (p.addr)
		r->any_addr = true;
	if (type_rank(p.type) < 0 || p.addr == 0)
		return 0;
	return add_entry(&r->b, &p, r->line);
}

static int reader_start(struct reader *r)
{
	memset(r, 0, sizeof(*r));
	r->ks = calloc(1, sizeof(*r->ks));
	return r->ks ? 0 : -ENOMEM;
}

/* Builds the table (err == 0) or frees everything, a failed
 * reader_start included; NULL + errno. */
static struct kallsyms *reader_finish(struct reader *r, int err)
{
	if (!err) {
		r->ks->restricted = r->any_line && !r->any_addr;
		err = finish(&r->b, r->ks);
	}
	free(r->b.v);
	hashmap__clear(&r->b.mods);
	free(r->b.arena);
	if (err) {
		kallsyms__free(r->ks);
		errno = -err;
		return NULL;
	}
	return r->ks;
}

struct kallsyms *kallsyms__parse(const char *buf, size_t len)
{
	struct reader r;
	size_t pos = 0;
	int err;

	if (!buf && len) {
		errno = EINVAL;
		return NULL;
	}
	err = reader_start(&r);
	while (pos < len && !err) {
		const char *s = buf + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;

		pos += l + 1;
		err = reader_line(&r, s, l);
	}
	return reader_finish(&r, err);
}

/* Streams the file line by line: /proc/kallsyms is several MiB, and holding
 * it whole would double kiln's peak memory at start. */
struct kallsyms *kallsyms__load(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, total = 0;
	struct reader r;
	ssize_t n;
	int err;

	if (!f)
		return NULL;
	err = reader_start(&r);
	while (!err && (n = getline(&line, &cap, f)) > 0) {
		total += (size_t)n;
		if (total > KSYM_FILE_MAX) {
			err = -EFBIG;
			break;
		}
		if (line[n - 1] == '\n')
			n--;
		err = reader_line(&r, line, (size_t)n);
	}
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	fclose(f);
	return reader_finish(&r, err);
}

/* The loaded module whose memory holds addr, if any. */
static const struct kmod *module_at(const struct kallsyms *ks, uint64_t addr)
{
	size_t lo = 0, hi = ks->nmods;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->mods[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ks->nmods && ks->mods[lo].start <= addr ? &ks->mods[lo] : NULL;
}

bool kallsyms__lookup(struct kallsyms *ks, uint64_t addr, struct ksym *out)
{
	size_t lo = 0, hi;
	const struct kent *e;

	if (!ks || !ks->count || addr < ks->syms[0].addr)
		return false;
	/* Last symbol with syms[i].addr <= addr. */
	hi = ks->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	e = &ks->syms[lo];
	/* A cached table lacks what was loaded since (BPF programs, ftrace
	 * trampolines): an address past a module's memory, or far past any
	 * symbol, may be one of those. */
	if (addr - e->addr >= KSYM_MAX_SPAN || (e->mod && ks->map && !module_at(ks, addr))) {
		ks->uncovered += ks->map != NULL;
		return false;
	}
	out->addr = e->addr;
	out->name = ks->arena + e->name;
	out->module = e->mod ? ks->arena + e->mod - 1 : NULL;
	return true;
}

size_t kallsyms__count(const struct kallsyms *ks)
{
	return ks ? ks->count : 0;
}

size_t kallsyms__skipped_lines(const struct kallsyms *ks)
{
	return ks ? ks->skipped : 0;
}

bool kallsyms__restricted(const struct kallsyms *ks)
{
	return ks && ks->restricted;
}

size_t kallsyms__uncovered(const struct kallsyms *ks)
{
	return ks ? ks->uncovered : 0;
}

size_t kallsyms__bytes(const struct kallsyms *ks)
{
	if (!ks || ks->map)
		return ks ? sizeof(*ks) : 0;
	return sizeof(*ks) + ks->count * sizeof(*ks->syms) + ks->arena_len;
}

void kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return;
	if (ks->map)
		munmap(ks->map, ks->map_len);
	free(ks->own_syms);
	free(ks->own_arena);
	free(ks);
}

/* ---- the table kept on disk between runs ----
 *
 * DESIGN: formatting /proc/kallsyms costs the kernel ~35 ms at every start
 * and parsing it ~20 ms more, for the same symbols every time until a
 * reboot or a module (un)load. The parsed table is written to CACHE_NAME
 * in the cache directory, keyed by the boot id and each module's name,
 * address and size, and mmap()ed by the next run: its pages are the page
 * cache's, not kiln's heap. Symbols that come and go without a module
 * (BPF programs, ftrace and kprobe trampolines) are left out of it; a
 * lookup past a module's memory counts as uncovered, and the caller reads
 * /proc/kallsyms again. The file is checked whole before use: sizes,
 * checksum, sorted addresses, offsets inside the strings. */

#define CACHE_NAME	"kernel.ksym"
#define CACHE_MAGIC	"KILNKSY1"
#define CACHE_SYMS_MAX	(8u << 20)
#define CACHE_MODS_MAX	65536u
#define MODULES_FILE_MAX (4u << 20)

struct cache_hdr {
	char magic[8];
	uint64_t key;
	uint64_t count, nmods, arena_len;
	uint32_t crc;		/* of everything after the header */
	uint32_t pad;
};

static int kmod_cmp(const void *a, const void *b)
{
	const struct kmod *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads the whole (small, procfs) file; NULL + errno. */
static char *slurp(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = max + 1 < 4096 ? max + 1 : 4096, n = 0;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (!buf || n + 1 >= cap) {
			bool full = buf && cap > max;
			char *p = full ? NULL : realloc(buf, buf ? cap * 2 : cap);

			if (!p) {
				free(buf);
				close(fd);
				errno = full ? EFBIG : ENOMEM;
				return NULL;
			}
			cap = buf ? cap * 2 : cap;
			buf = p;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The cache key of this boot and its modules, and the modules' memory
 * (sorted). -errno: no key (no boot id, addresses hidden, junk). */
static int cache_key(const char *boot_id_path, const char *modules_path, uint64_t *key,
		     struct kmod **mods, size_t *nmods)
{
	size_t len, n = 0;
	char *boot = slurp(boot_id_path, 64, &len), *text, *line, *save = NULL;
	struct kmod *v = NULL;
	uint64_t h;

	*mods = NULL;
	*nmods = 0;
	if (!boot)
		return -errno;
	h = hash__add(hash__str(CACHE_MAGIC), hash__bytes(boot, len));
	free(boot);
	text = slurp(modules_path, MODULES_FILE_MAX, &len);
	if (!text)
		/* a kernel without modules has no file */
		return errno == ENOENT ? (*key = h, 0) : -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[KSYM_MOD_MAX + 1];
		unsigned long long size, addr;

		if (sscanf(line, "%255s %llu %*s %*s %*s %llx", name, &size, &addr) != 3 ||
		    n >= CACHE_MODS_MAX || addr + size < addr) {
			free(text);
			free(v);
			return -EINVAL;
		}
		if (addr == 0) {
			/* kptr_restrict: nothing to key by, nothing to serve */
			free(text);
			free(v);
			return -EPERM;
		}
		if ((n & (n - 1)) == 0) {
			struct kmod *nv = realloc(v, (n ? 2 * n : 1) * sizeof(*v));

			if (!nv) {
				free(text);
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n].start = addr;
		v[n].end = addr + size;
		n++;
		h = hash__add(hash__add(hash__add(h, hash__str(name)), size), addr);
	}
	free(text);
	qsort(v, n, sizeof(*v), kmod_cmp);
	for (size_t i = 1; i < n; i++)
		if (v[i].start < v[i - 1].end) {
			free(v);
			return -EINVAL;
		}
	*key = h;
	*mods = v;
	*nmods = n;
	return 0;
}

static uint32_t body_crc(const uint8_t *p, size_t len)
{
	return (uint32_t)crc32_z(crc32_z(0, NULL, 0), p, len);
}

/* Checks a cached table in buf[0, len) against key and points ks into it.
 * 0, -ESTALE (another boot or other modules) or -EBADMSG. */
static int cache_check(struct kallsyms *ks, const uint8_t *buf, size_t len, uint64_t key)
{
	struct cache_hdr h;
	const struct kent *syms;
	const struct kmod *mods;
	const char *arena;

	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) != 0)
		return -EBADMSG;
	if (h.key != key)
		return -ESTALE;
	if (h.count == 0 || h.count > CACHE_SYMS_MAX || h.nmods > CACHE_MODS_MAX ||
	    h.arena_len == 0 || h.arena_len > KSYM_FILE_MAX ||
	    len != sizeof(h) + h.count * sizeof(*syms) + h.nmods * sizeof(*mods) + h.arena_len ||
	    h.crc != body_crc(buf + sizeof(h), len - sizeof(h)))
		return -EBADMSG;
	syms = (const struct kent *)(buf + sizeof(h));
	mods = (const struct kmod *)(syms + h.count);
	arena = (const char *)(mods + h.nmods);
	if (arena[h.arena_len - 1] != '\0')
		return -EBADMSG;
	for (size_t i = 0; i < h.count; i++)
		if ((i && syms[i].addr <= syms[i - 1].addr) || syms[i].name >= h.arena_len ||
		    (syms[i].mod && syms[i].mod - 1 >= h.arena_len))
			return -EBADMSG;
	for (size_t i = 0; i < h.nmods; i++)
		if (mods[i].start >= mods[i].end || (i && mods[i].start < mods[i - 1].end))
			return -EBADMSG;
	ks->syms = syms;
	ks->count = h.count;
	ks->mods = mods;
	ks->nmods = h.nmods;
	ks->arena = arena;
	ks->arena_len = h.arena_len;
	return 0;
}

/* The cache file's table, if it is kiln's own (same owner, a regular file,
 * no link) and holds this boot's symbols. */
static int cache_open(int dirfd, uint64_t key, struct kallsyms **out)
{
	int fd = openat(dirfd, CACHE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct kallsyms *ks;
	struct stat st;
	void *map;
	int err;

	*out = NULL;
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_size <= 0 || (uint64_t)st.st_size > 2ull * KSYM_FILE_MAX) {
		close(fd);
		return -EPERM;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		munmap(map, (size_t)st.st_size);
		return -ENOMEM;
	}
	ks->map = map;
	ks->map_len = (size_t)st.st_size;
	err = cache_check(ks, map, ks->map_len, key);
	if (err) {
		kallsyms__free(ks);
		return err;
	}
	/* The check read every page; lookups touch few: let them go from
	 * kiln's resident set (they stay in the page cache). */
	madvise(map, ks->map_len, MADV_DONTNEED);
	*out = ks;
	return 0;
}

/* Symbols that belong to no module but come and go: never cached. */
static bool dynamic_module(const char *mod)
{
	return mod && (strcmp(mod, "bpf") == 0 || strncmp(mod, "__builtin__", 11) == 0);
}

struct cache_write {
	const struct kallsyms *ks;
	const struct kmod *mods;
	size_t nmods;
	uint64_t key;
};

static int cache_fill(FILE *f, void *ctx)
{
	const struct cache_write *cw = ctx;
	const struct kallsyms *ks = cw->ks;
	struct cache_hdr h = { .key = cw->key, .nmods = cw->nmods, .arena_len = ks->arena_len };
	uint32_t crc = body_crc(NULL, 0);

	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	for (size_t i = 0; i < ks->count; i++)
		if (!dynamic_module(ks->syms[i].mod ? ks->arena + ks->syms[i].mod - 1 : NULL)) {
			crc = (uint32_t)crc32_z(crc, (const void *)&ks->syms[i], sizeof(ks->syms[i]));
			h.count++;
		}
	if (!h.count || !ks->arena_len)
		return -ENODATA;
	if (cw->nmods)  /* (zlib restarts at 0 for a NULL buffer) */
		crc = (uint32_t)crc32_z(crc, (const void *)cw->mods, cw->nmods * sizeof(*cw->mods));
	h.crc = (uint32_t)crc32_z(crc, (const void *)ks->arena, ks->arena_len);
	if (fwrite(&h, sizeof(h), 1, f) != 1)
		return -EIO;
	for (size_t i = 0; i < ks->count; i++)
		if (!dynamic_module(ks->syms[i].mod ? ks->arena + ks->syms[i].mod - 1 : NULL) &&
		    fwrite(&ks->syms[i], sizeof(ks->syms[i]), 1, f) != 1)
			return -EIO;
	if ((cw->nmods && fwrite(cw->mods, sizeof(*cw->mods), cw->nmods, f) != cw->nmods) ||
	    fwrite(ks->arena, 1, ks->arena_len, f) != ks->arena_len)
		return -EIO;
	return 0;
}

/* Whether the file's first line shows a real address (kptr_restrict hides
 * them from whoever may not see them: such a reader gets no cache). */
static bool addresses_visible(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[128];
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strspn(buf, "0") < strspn(buf, "0123456789abcdefABCDEF");
}

struct kallsyms *kallsyms__load_cached(const struct kallsyms_paths *paths, int dirfd,
				       enum kallsyms_cache_result *res)
{
	struct cache_write cw = { 0 };
	struct kmod *mods = NULL;
	struct kallsyms *ks = NULL;
	int err = -ENOENT;

	*res = KALLSYMS_CACHE_OFF;
	if (dirfd >= 0 && addresses_visible(paths->kallsyms) &&
	    cache_key(paths->boot_id, paths->modules, &cw.key, &mods, &cw.nmods) == 0) {
		err = cache_open(dirfd, cw.key, &ks);
		if (err == 0) {
			free(mods);
			*res = KALLSYMS_CACHE_HIT;
			return ks;
		}
		*res = err == -ENOENT || err == -ESTALE ? KALLSYMS_CACHE_MISS :
						       KALLSYMS_CACHE_REFUSED;
		if (*res == KALLSYMS_CACHE_REFUSED)
			unlinkat(dirfd, CACHE_NAME, 0);
	}
	ks = kallsyms__load(paths->kallsyms);
	if (ks && *res != KALLSYMS_CACHE_OFF && !ks->restricted) {
		uint64_t bytes;

		cw.ks = ks;
		cw.mods = mods;
		if (file__write_at(dirfd, CACHE_NAME, CACHE_NAME, 0600, cache_fill, &cw, &bytes))
			*res = KALLSYMS_CACHE_UNWRITTEN;
	}
	free(mods);
	return ks;
}
