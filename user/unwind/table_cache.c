// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: a cache file is a fixed header, the key, the rows, the rules and
 * a CRC-32 of everything before it (table_cache.h says why each check).
 * Every field is checked, and the counts against the reader's bounds and
 * the file's size, before rows or rules are allocated; then the rows are
 * checked as the BPF walker will use them. The directory is the only
 * state: its size is counted when the cache is opened and after each
 * eviction pass, so two kiln processes sharing it stay within the bound
 * between them, give or take a pass. */
#include <dirent.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/crc_writer.h"
#include "core/elf.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/log.h"
#include "unwind/table_cache.h"

#ifndef KILN_UNWIND_BUILDER
/* The Makefile sets it from the table builder's sources. */
#define KILN_UNWIND_BUILDER 0ull
#endif

#define MAGIC "KILNUWT\n"
#define FORMAT 2u /* this layout */
#define SUFFIX ".uwt"
#define SYMBOLS_SUFFIX ".sym" /* symbol tables (table_cache__read_symbols); as long */
#define TMP_STALE_NS (600ull * 1000000000ull) /* a temporary file older than this is a crash's */

const char *const table_cache_refusal_names[TABLE_CACHE_REFUSAL_COUNT] = {
	[TABLE_CACHE_DIR] = "dir",
	[TABLE_CACHE_NOT_OURS] = "not_ours",
	[TABLE_CACHE_CORRUPT] = "corrupt",
	[TABLE_CACHE_VERSION] = "version",
	[TABLE_CACHE_STALE] = "stale",
	[TABLE_CACHE_DEBUG_FILE] = "debug_file",
	[TABLE_CACHE_TOO_LARGE] = "too_large",
	[TABLE_CACHE_WRITE] = "write_error",
};

static const char *const debug_sources[] = { "none", "file", "debug-file" };
static const char *const go_sources[] = { "", "section", "symbol", "scan" };

struct header {
	char magic[8];
	uint32_t format; /* FORMAT */
	uint32_t row_size, rule_size; /* of this build's structs */
	uint32_t key_len; /* key bytes after the header, no NUL */
	uint64_t builder; /* builder_version() */
	uint32_t nrows, nrules;
	uint64_t base;
	uint16_t nsegs, machine;
	uint8_t debug_source, go_source, debug_lookup, pad0;
	struct {
		uint64_t offset, vaddr, filesz;
	} segs[UNWIND_SEGMENTS_MAX];
	uint64_t fdes_eh, fdes_debug, go_funcs, cfi_bytes, work, build_ns;
	uint64_t stop_rows, plt_rows, signal_rows, invalid_rows;
	uint64_t unsupported[8];
};
_Static_assert(sizeof(struct header) == 296, "cache header layout");
/* The figures of a build kept as they are (struct unwind_table_info). */
#define INFO_COUNTS(X)                                                                      \
	X(fdes_eh)                                                                          \
	X(fdes_debug) X(go_funcs) X(cfi_bytes) X(work) X(build_ns) X(stop_rows) X(plt_rows) \
		X(signal_rows) X(invalid_rows)
_Static_assert(UNWIND_UNSUP_COUNT <= 8, "header holds the unsupported counts");

struct table_cache {
	char *dir;
	int dirfd;
	uint64_t max_bytes;
	atomic_bool counted; /* st.bytes is the directory's (scan) */
	struct {
		_Atomic uint64_t hits, misses, writes, write_bytes, evictions, bytes;
		_Atomic uint64_t refused[TABLE_CACHE_REFUSAL_COUNT];
	} st;
};

#define ADD(c, f, n) atomic_fetch_add_explicit(&(c)->st.f, (n), memory_order_relaxed)

/* What a cached table was built by: this builder's sources (the Makefile's
 * fingerprint) and the libdw that interpreted the CFI. */
static uint64_t builder_version(void)
{
	const char *dw = dwfl_version(NULL);

	return hash__add(KILN_UNWIND_BUILDER, hash__str(dw ? dw : ""));
}

static unsigned index_of(const char *s, const char *const *names, unsigned n)
{
	for (unsigned i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return 0;
}

int table_cache__key(int fd, char *key, size_t len)
{
	char id[2 * ELF_BUILD_ID_MAX + 1];
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (elf__build_id(fd, id, sizeof(id)))
		id[0] = '\0';
	snprintf(key, len, "f:%llu:%llu:%lld:%lld.%09ld b:%s", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec, id);
	return 0;
}

/* The cache file of t under key, in pieces: the header, the key, the rows
 * and the rules as they are in t (no copy of its megabytes), and the crc
 * over them. len: the file's size, known before the first piece. */
struct encoding {
	struct header h;
	const char *key;
	size_t klen;
	const struct kiln_unwind_row *rows;
	const struct kiln_unwind_rule *rules;
	size_t nrows, nrules, len;
};

static void encoding_of(const struct unwind_table *t, const char *key, struct encoding *e)
{
	struct unwind_table_info in;
	struct header *h = &e->h;

	/* (zeroed whole: the padding goes into the crc and the file) */
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->klen = strlen(key);
	e->rows = unwind_table__rows(t, &e->nrows);
	e->rules = unwind_table__rules(t, &e->nrules);
	h->format = FORMAT;
	unwind_table__info(t, &in);
	memcpy(h->magic, MAGIC, sizeof(h->magic));
	h->row_size = sizeof(*e->rows);
	h->rule_size = sizeof(*e->rules);
	h->key_len = (uint32_t)e->klen;
	h->builder = builder_version();
	h->nrows = (uint32_t)e->nrows;
	h->nrules = (uint32_t)e->nrules;
	h->base = in.base;
	h->nsegs = (uint16_t)in.nsegs;
	h->machine = in.machine;
	for (size_t i = 0; i < in.nsegs && i < UNWIND_SEGMENTS_MAX; i++) {
		h->segs[i].offset = in.segs[i].offset;
		h->segs[i].vaddr = in.segs[i].vaddr;
		h->segs[i].filesz = in.segs[i].filesz;
	}
	h->debug_source = (uint8_t)index_of(in.debug_source, debug_sources, 3);
	h->go_source = (uint8_t)index_of(in.go_source, go_sources, 4);
	h->debug_lookup = (uint8_t)in.debug_lookup;
#define TO_HEADER(f) h->f = in.f;
	INFO_COUNTS(TO_HEADER)
#undef TO_HEADER
	for (int i = 0; i < UNWIND_UNSUP_COUNT; i++)
		h->unsupported[i] = in.unsupported[i];
	e->len = sizeof(*h) + e->klen + e->nrows * sizeof(*e->rows) +
		 e->nrules * sizeof(*e->rules) + sizeof(uint32_t);
}

/* Writes the file of encoding e through w. 0 or -EIO. */
static int emit_encoding(const struct encoding *e, struct crc_writer *w)
{
	int err = crc_writer__put(w, &e->h, sizeof(e->h));

	if (!err)
		err = crc_writer__put(w, e->key, e->klen);
	if (!err)
		err = crc_writer__put(w, e->rows, e->nrows * sizeof(*e->rows));
	if (!err)
		err = crc_writer__put(w, e->rules, e->nrules * sizeof(*e->rules));
	return err ? err : crc_writer__end(w);
}

int table_cache__encode(const struct unwind_table *t, const char *key, uint8_t **buf, size_t *len)
{
	struct crc_writer w;
	struct encoding e;
	uint8_t *p;

	encoding_of(t, key, &e);
	p = malloc(e.len);
	if (!p)
		return -ENOMEM;
	crc_writer__init(&w, NULL, p);
	emit_encoding(&e, &w);
	*buf = p;
	*len = e.len;
	return 0;
}

/* The rows as the walker applies them: sorted, rules in range, known
 * commands, the last one INVALID; the rules' fields within their enums. */
static bool rows_valid(const struct kiln_unwind_row *rows, size_t nrows,
		       const struct kiln_unwind_rule *rules, size_t nrules)
{
	for (size_t i = 0; i < nrules; i++) {
		const struct kiln_unwind_rule *r = &rules[i];

		if (r->cfa_reg > KILN_REG_FP || r->fp_rule > KILN_FP_AT_FP ||
		    r->ra_rule > KILN_RA_IN_LR || (r->flags & ~KILN_RULE_CFA_DEREF))
			return false;
	}
	for (size_t i = 0; i < nrows; i++) {
		unsigned rule = rows[i].rule;

		if (i && rows[i].pc_off <= rows[i - 1].pc_off)
			return false;
		if (rule & KILN_UNWIND_CMD ? (rule & ~KILN_UNWIND_CMD) > KILN_CMD_FP_SWITCH :
					     rule >= nrules)
			return false;
	}
	return nrows && rows[nrows - 1].rule == (KILN_UNWIND_CMD | KILN_CMD_INVALID);
}

/* table_cache__decode; with own (buf malloc'd, and freed here whatever
 * happens) the rows are moved to buf's start and buf becomes their array:
 * a table from the disk is in memory once, not twice (clang's libraries:
 * 6.5-7 MB of rows). */
static int decode(uint8_t *buf, size_t len, bool own, const char *key,
		  const struct unwind_limits *lim, struct unwind_table **out)
{
	struct unwind_table_info in = { 0 };
	struct kiln_unwind_row *rows = NULL;
	struct kiln_unwind_rule *rules = NULL;
	size_t klen = strlen(key), rows_bytes, rules_bytes;
	const uint8_t *p;
	struct header h;
	uint32_t crc;
	int err;

	*out = NULL;
	lim = lim ? lim : &unwind_default_limits;
	err = -EBADMSG;
	if (len < sizeof(h) + sizeof(crc))
		goto fail;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, MAGIC, sizeof(h.magic)) != 0)
		goto fail;
	err = -ESTALE;
	if (h.format != FORMAT || h.row_size != sizeof(*rows) || h.rule_size != sizeof(*rules) ||
	    h.builder != builder_version())
		goto fail;
	/* Every count against its bound and the size before a byte is
	 * allocated; the sizes cannot overflow below these bounds. */
	err = -EBADMSG;
	if (h.key_len > TABLE_CACHE_KEY_MAX || h.nrows > UNWIND_ROWS_MAX ||
	    h.nrules > UNWIND_RULES_MAX || h.nsegs > UNWIND_SEGMENTS_MAX || h.debug_source >= 3 ||
	    h.go_source >= 4 || h.debug_lookup > UNWIND_DEBUG_FOUND ||
	    (h.machine != EM_X86_64 && h.machine != EM_AARCH64) ||
	    (lim->machine && h.machine != lim->machine))
		goto fail;
	rows_bytes = (size_t)h.nrows * sizeof(*rows);
	rules_bytes = (size_t)h.nrules * sizeof(*rules);
	if (len != sizeof(h) + h.key_len + rows_bytes + rules_bytes + sizeof(crc))
		goto fail;
	memcpy(&crc, buf + len - sizeof(crc), sizeof(crc));
	if (crc != (uint32_t)crc32_z(crc32_z(0, NULL, 0), buf, len - sizeof(crc)))
		goto fail;
	err = -ENOENT;
	if (h.key_len != klen || memcmp(buf + sizeof(h), key, klen) != 0)
		goto fail;
	err = -E2BIG;
	if (h.nrows > lim->max_rows || h.nrules > lim->max_rules)
		goto fail;
	p = buf + sizeof(h) + h.key_len;
	rules = h.nrules ? malloc(rules_bytes) : NULL;
	if (h.nrules && !rules)
		goto nomem;
	if (rules_bytes)
		memcpy(rules, p + rows_bytes, rules_bytes);
	if (own) {
		memmove(buf, p, rows_bytes);
		rows = realloc(buf, rows_bytes ? rows_bytes : 1);
		if (!rows)
			goto nomem;     /* (buf is still ours) */
		buf = NULL;
	} else {
		rows = malloc(rows_bytes ? rows_bytes : 1);
		if (!rows)
			goto nomem;
		memcpy(rows, p, rows_bytes);
	}
	if (!rows_valid(rows, h.nrows, rules, h.nrules)) {
		free(rows);
		free(rules);
		return -EBADMSG;
	}
	in.machine = h.machine;
	in.base = h.base;
	in.nsegs = h.nsegs;
	for (size_t i = 0; i < h.nsegs; i++) {
		in.segs[i].offset = h.segs[i].offset;
		in.segs[i].vaddr = h.segs[i].vaddr;
		in.segs[i].filesz = h.segs[i].filesz;
	}
	in.debug_source = debug_sources[h.debug_source];
	in.go_source = h.go_source ? go_sources[h.go_source] : NULL;
	in.debug_lookup = h.debug_lookup;
#define FROM_HEADER(f) in.f = h.f;
	INFO_COUNTS(FROM_HEADER)
#undef FROM_HEADER
	for (int i = 0; i < UNWIND_UNSUP_COUNT; i++)
		in.unsupported[i] = h.unsupported[i];
	*out = unwind_table__adopt(rows, h.nrows, rules, h.nrules, &in);
	return *out ? 0 : -ENOMEM;
nomem:
	free(rules);
	err = -ENOMEM;
fail:
	if (own)
		free(buf);
	return err;
}

int table_cache__decode(const uint8_t *buf, size_t len, const char *key,
			const struct unwind_limits *lim, struct unwind_table **out)
{
	/* (not own: buf is only read) */
	return decode((uint8_t *)buf, len, false, key, lim, out);
}

/* ---- the directory ---- */

static void refuse(struct table_cache *c, enum table_cache_refusal r)
{
	ADD(c, refused[r], 1);
}

/* A cache file name that a read or its decoder refused with err: counted
 * and deleted. Not there, another key (a hash collision), over the
 * reader's bounds: a miss, nothing to do. */
static void refuse_file(struct table_cache *c, const char *name, const char *path, int err)
{
	enum table_cache_refusal r;

	switch (err) {
	case -EPERM:
		r = TABLE_CACHE_NOT_OURS;
		break;
	case -EBADMSG:
		r = TABLE_CACHE_CORRUPT;
		break;
	case -ESTALE:
		r = TABLE_CACHE_VERSION;
		break;
	case -EAGAIN:
		r = TABLE_CACHE_STALE;
		break;
	default:
		return;
	}
	refuse(c, r);
	pr_debug("table cache: %s: %s refused (%s), deleted", path ? path : "?", name,
		 strerror(-err));
	unlinkat(c->dirfd, name, 0);
}

static bool cache_name(const char *name)
{
	size_t n = strlen(name);

	return n == 16 + strlen(SUFFIX) && strspn(name, "0123456789abcdef") == 16 &&
	       (strcmp(name + 16, SUFFIX) == 0 || strcmp(name + 16, SYMBOLS_SUFFIX) == 0);
}

static bool tmp_name(const char *name)
{
	size_t n = strlen(name);

	return strncmp(name, ".kiln-", 6) == 0 && n > 10 && strcmp(name + n - 4, ".tmp") == 0;
}

struct entry {
	struct timespec atime;
	uint64_t bytes;
	char name[24];
};

static int cmp_atime(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->atime.tv_sec != y->atime.tv_sec)
		return x->atime.tv_sec < y->atime.tv_sec ? -1 : 1;
	if (x->atime.tv_nsec != y->atime.tv_nsec)
		return x->atime.tv_nsec < y->atime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Counts the directory's cache files; with evict, deletes the least
 * recently used until they take at most three quarters of the bound (so
 * the next pass is some writes away); removes temporary files a crash
 * left. */
static void scan(struct table_cache *c, bool evict)
{
	struct entry *e = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0, now = (uint64_t)time(NULL) * 1000000000ull;
	struct dirent *d;
	int fd = dup(c->dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(dir);
	while ((d = readdir(dir))) {
		struct stat st;

		if (fstatat(c->dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (tmp_name(d->d_name)) {
			uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull;

			if (S_ISREG(st.st_mode) && mtime + TMP_STALE_NS < now)
				unlinkat(c->dirfd, d->d_name, 0);
			continue;
		}
		if (!cache_name(d->d_name) || !S_ISREG(st.st_mode))
			continue;
		total += (uint64_t)st.st_size;
		if (!evict || n >= TABLE_CACHE_FILES_MAX)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct entry *ne = realloc(e, ncap * sizeof(*e));

			if (!ne)
				break;
			e = ne;
			cap = ncap;
		}
		e[n].atime = st.st_atim;
		e[n].bytes = (uint64_t)st.st_size;
		/* cache_name: 16 hex digits and SUFFIX, its NUL too */
		memcpy(e[n].name, d->d_name, 16 + sizeof(SUFFIX));
		n++;
	}
	closedir(dir);
	if (evict && total > c->max_bytes) {
		qsort(e, n, sizeof(*e), cmp_atime);
		for (size_t i = 0; i < n && total > c->max_bytes / 4 * 3; i++) {
			if (unlinkat(c->dirfd, e[i].name, 0))
				continue;
			total -= e[i].bytes;
			ADD(c, evictions, 1);
			pr_debug("unwind cache: evicted %s (%llu bytes)", e[i].name,
				 (unsigned long long)e[i].bytes);
		}
	}
	free(e);
	atomic_store_explicit(&c->st.bytes, total, memory_order_relaxed);
}

/* The first scan: the directory's bytes, kept within the bound. Later
 * writes add to the count, and scan again once it is over. */
static void count_files(struct table_cache *c)
{
	if (atomic_exchange_explicit(&c->counted, true, memory_order_relaxed))
		return;
	scan(c, true);
	pr_debug("unwind cache %s: %llu bytes", c->dir,
		 (unsigned long long)atomic_load_explicit(&c->st.bytes, memory_order_relaxed));
}

/* Creates dir (mode 0700) and, when missing, its parent. */
static int make_dir(const char *dir)
{
	char parent[4096];
	char *slash;

	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT || snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent))
		return -errno;
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -ENOENT;
	*slash = '\0';
	if (mkdir(parent, 0700) && errno != EEXIST)
		return -errno;
	return mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

/* dir (created when missing, its parent too, mode 0700) opened as a cache
 * directory: owned by kiln's user, closed to others (made so when kiln's
 * own), on a trusted path (core/file.h). The fd, or -1 and *why. */
static int open_dir(const char *dir, const char **why)
{
	struct stat st;
	int fd, err;

	*why = NULL;
	/* The last directory kiln's alone, and the ones on its path trusted
	 * (core/file.h): a cache file is never read from a place another
	 * user could write. */
	err = make_dir(dir);
	fd = err ? err : open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st))
		*why = strerror(fd < 0 && err ? -err : errno);
	else if (st.st_uid != geteuid())
		*why = "not owned by kiln's user";
	else if ((st.st_mode & 077) && fchmod(fd, 0700))
		*why = "open to other users, and chmod 700 failed";
	else if (st.st_mode & 077)
		/* kiln's own (an emptyDir is made 0777): closed now; a file
		 * another user put there meanwhile is not kiln's, never read. */
		pr_info("unwind cache %s: was open to other users: now 0700", dir);
	if (fd >= 0)
		close(fd);
	fd = -1;
	if (!*why && (fd = file__open_dir(dir)) < 0)
		*why = strerror(-fd);
	else if (!*why && (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077)))
		*why = "changed while opened";
	if (*why && fd >= 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

struct table_cache *table_cache__open(const char *dir, uint64_t max_bytes, bool quiet, bool count)
{
	struct table_cache *c;
	const char *why;

	if (!dir || !*dir || strcmp(dir, "none") == 0) {
		errno = 0;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->max_bytes = max_bytes;
	c->dirfd = open_dir(dir, &why);
	if (c->dirfd < 0) {
		/* Kept, unusable, for its count. */
		refuse(c, TABLE_CACHE_DIR);
		if (quiet)
			pr_debug("unwind cache %s: %s: not used", dir, why);
		else
			pr_warn("unwind cache %s: %s: tables are not cached", dir, why);
		return c;
	}
	if (count)
		count_files(c);
	return c;
}

int table_cache__default_dir(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, len, "/var/cache/kiln");
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/kiln", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/kiln", home);
	else
		return -ENOENT;
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static void file_name(const char *key, const char *suffix, char *name, size_t len)
{
	snprintf(name, len, "%016llx%s", (unsigned long long)hash__str(key), suffix);
}

/* Reads the cache file name: fd's bytes into a malloc'd *buf. 0, -ENOENT
 * (none), or -EPERM (not a file of kiln's own under max bytes). */
static int read_file(struct table_cache *c, const char *name, uint64_t max, uint8_t **buf,
		     size_t *len)
{
	int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	size_t got = 0;
	uint8_t *p;

	if (fd < 0)
		return errno == ELOOP ? -EPERM : -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size > max) {
		close(fd);
		return -EPERM;
	}
	p = malloc(st.st_size ? (size_t)st.st_size : 1);
	while (p && got < (size_t)st.st_size) {
		ssize_t r = read(fd, p + got, (size_t)st.st_size - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (p) {
		/* The least recently used go first: this one was used now. */
		struct timespec ts[2] = { { .tv_nsec = UTIME_NOW }, { .tv_nsec = UTIME_OMIT } };

		futimens(fd, ts);
	}
	close(fd);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*len = got;
	return 0;
}

struct unwind_table *table_cache__get(struct table_cache *c, int fd, const char *root,
				      const char *path, const struct unwind_limits *lim)
{
	char key[TABLE_CACHE_KEY_MAX], name[32];
	struct unwind_table *t = NULL;
	struct unwind_table_info in;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	if (!c || c->dirfd < 0)
		return NULL;
	if (table_cache__key(fd, key, sizeof(key))) {
		ADD(c, misses, 1);
		return NULL;
	}
	file_name(key, SUFFIX, name, sizeof(name));
	err = read_file(c, name, TABLE_CACHE_FILE_MAX, &buf, &len);
	if (!err)
		err = decode(buf, len, true, key, lim, &t);
	if (!err) {
		unwind_table__info(t, &in);
		if (in.debug_lookup == UNWIND_DEBUG_NOT_FOUND &&
		    unwind_table__debug_file_found(fd, root, path)) {
			unwind_table__free(t);
			t = NULL;
			err = -EAGAIN;
		}
	}
	if (!err) {
		ADD(c, hits, 1);
		pr_debug("unwind cache: %s: %s", path ? path : "?", name);
		return t;
	}
	refuse_file(c, name, path, err);
	ADD(c, misses, 1);
	return NULL;
}

/* Writes len bytes, which fill writes to its FILE, as key's file, unless
 * they are over a quarter of the bound (counted: too_large, write_error
 * when it fails), then evicts while the directory is over its bound. 0 or
 * -errno. */
static int write_file(struct table_cache *c, const char *key, const char *suffix, size_t len,
		      int (*fill)(FILE *f, void *ctx), void *ctx)
{
	uint64_t wrote = 0, total;
	char name[32];
	int err;

	if (len > c->max_bytes / 4) {
		refuse(c, TABLE_CACHE_TOO_LARGE);
		return -EFBIG;
	}
	/* (a run that only reads the cache never scans the directory: with
	 * thousands of files, a tenth of a short record's start-up) */
	count_files(c);
	file_name(key, suffix, name, sizeof(name));
	err = file__write_at(c->dirfd, name, name, 0600, fill, ctx, &wrote);
	if (err) {
		refuse(c, TABLE_CACHE_WRITE);
		return err;
	}
	ADD(c, write_bytes, wrote);
	total = ADD(c, bytes, wrote) + wrote;
	if (total > c->max_bytes)
		scan(c, true);
	return 0;
}

static int write_encoding(FILE *f, void *ctx)
{
	struct crc_writer w;

	crc_writer__init(&w, f, NULL);
	return emit_encoding(ctx, &w);
}

void table_cache__put(struct table_cache *c, int fd, const struct unwind_table *t)
{
	char key[TABLE_CACHE_KEY_MAX];
	struct unwind_table_info in;
	struct encoding e;

	if (!c || c->dirfd < 0 || !t)
		return;
	unwind_table__info(t, &in);
	if (in.debug_lookup == UNWIND_DEBUG_FOUND) {
		refuse(c, TABLE_CACHE_DEBUG_FILE);
		return;
	}
	if (table_cache__key(fd, key, sizeof(key)))
		return;
	encoding_of(t, key, &e);
	if (write_file(c, key, SUFFIX, e.len, write_encoding, &e) == 0)
		ADD(c, writes, 1);
}

int table_cache__read_symbols(struct table_cache *c, const char *key, uint64_t max,
			      uint8_t **buf, size_t *len)
{
	char name[32];

	if (!c || c->dirfd < 0)
		return -ENOENT;
	file_name(key, SYMBOLS_SUFFIX, name, sizeof(name));
	return read_file(c, name, max, buf, len);
}

void table_cache__refuse_symbols(struct table_cache *c, const char *key, const char *path,
				 int err)
{
	char name[32];

	if (!c || c->dirfd < 0)
		return;
	file_name(key, SYMBOLS_SUFFIX, name, sizeof(name));
	refuse_file(c, name, path, err);
}

int table_cache__write_symbols(struct table_cache *c, const char *key, size_t len,
			       int (*fill)(FILE *f, void *ctx), void *ctx)
{
	if (!c || c->dirfd < 0)
		return -ENOENT;
	return write_file(c, key, SYMBOLS_SUFFIX, len, fill, ctx);
}

void table_cache__stats(const struct table_cache *c, struct table_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	out->hits = atomic_load_explicit(&c->st.hits, memory_order_relaxed);
	out->misses = atomic_load_explicit(&c->st.misses, memory_order_relaxed);
	out->writes = atomic_load_explicit(&c->st.writes, memory_order_relaxed);
	out->write_bytes = atomic_load_explicit(&c->st.write_bytes, memory_order_relaxed);
	out->evictions = atomic_load_explicit(&c->st.evictions, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&c->st.bytes, memory_order_relaxed);
	out->counted = atomic_load_explicit(&c->counted, memory_order_relaxed);
	for (int i = 0; i < TABLE_CACHE_REFUSAL_COUNT; i++)
		out->refused[i] = atomic_load_explicit(&c->st.refused[i], memory_order_relaxed);
}

const char *table_cache__dir(const struct table_cache *c)
{
	return c && c->dirfd >= 0 ? c->dir : NULL;
}

int table_cache__dirfd(const struct table_cache *c)
{
	return c ? c->dirfd : -1;
}

void table_cache__close(struct table_cache *c)
{
	if (!c)
		return;
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->dir);
	free(c);
}
