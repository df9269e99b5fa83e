// SPDX-License-Identifier: BSD-2-Clause
/* JIT symbol files per process (see jit.h).
 *
 * DESIGN: one entry per process instance with JIT code (seen in its
 * mappings, or in a frame), holding per source (perf map, jitdump) the
 * file kept open, its table, and what the file was when it was read
 * (device, inode, size, mtime). A check, when the process's next one is
 * due (its mappings were read, or a frame in JIT code found no name):
 * while the process runs, each file is opened again by its path (safe
 * opener, size cap, owner) and kept when it is another file than the one
 * held; then the file held is parsed again if it changed. After the
 * process ended only the second step runs, once at least, but for a
 * process that writes its perf map as it exits (a JVM run with
 * -XX:+DumpPerfMapAtExit): its /tmp, opened while it ran, is where its
 * map is opened then, even when that /tmp was a mount of its own mount
 * namespace, gone with its last process. The next check
 * waits JIT_RECHECK_NS, or 100 times what this one cost, or
 * JIT_REFUSED_RECHECK_NS after a refusal, so a process rewriting a
 * hostile file costs at most 1 % of the loop. The entries holding tables
 * form an LRU list; a new table evicts the least recently used other
 * processes' tables until every table fits max_bytes. Entries go with
 * their snapshots (jit_cache__age). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hashmap.h"
#include "core/log.h"
#include "core/lru.h"
#include "core/safe_open.h"
#include "symbolize/jit.h"
#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"

#define JIT_RECHECK_NS 1000000000ull /* a process's files at most once a second */
#define JIT_REFUSED_RECHECK_NS 30000000000ull /* after a refusal, every 30 s */
#define JIT_COST_FACTOR 100 /* wait 100 times what a check cost */
#define STATUS_MAX 8192 /* bytes of /proc/PID/status read */
#define CMDLINE_MAX 65536 /* bytes of /proc/PID/cmdline searched (a JVM's classpath may be long) */
#define EXIT_MAP_FLAG "-XX:+DumpPerfMapAtExit"
#define NO_EXIT_MAP_FLAG "-XX:-DumpPerfMapAtExit"

/* What a file was when it was read: a change re-reads it. */
struct file_id {
	uint64_t dev, ino, size, mtime_ns;
};

struct jit_file {
	struct jit_table *table;
	int fd; /* the file kept open, or -1 */
	bool read; /* table is what fd held as id says */
	struct file_id id;
	char name[256]; /* for logs */
};

struct jit_proc {
	uint32_t instance;
	bool ids_read, ids_ok;
	pid_t nspid; /* the pid in its own namespace */
	uid_t uids[4]; /* real, effective, saved, filesystem */
	uint64_t next_check;
	bool ended_checked; /* checked since the snapshot ended */
	bool exit_map; /* writes its perf map as it exits */
	int tmp_fd; /* exit_map: its /tmp (O_PATH), or -1 */
	struct jit_file files[JIT_SOURCE_COUNT];
	struct lru_node lru;
	bool in_lru; /* holds a table */
};

struct jit_cache {
	char *proc_root;
	size_t max_bytes;
	struct hashmap procs; /* instance -> jit_proc */
	struct lru lru; /* jit_procs holding tables */
	struct jit_stats stats;
};

struct jit_cache *jit_cache__new(const char *proc_root, size_t max_bytes)
{
	struct jit_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->proc_root = strdup(proc_root);
	if (!c->proc_root) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->max_bytes = max_bytes;
	c->stats.max_bytes = max_bytes;
	return c;
}

bool jit__code_mapping(const struct proc_mapping *m)
{
	if (strncmp(m->name, "/memfd:", 7) == 0)
		return true;
	return !m->bin && (strcmp(m->name, "[anon]") == 0 || strncmp(m->name, "[anon:", 6) == 0);
}

static void file_id(const struct stat *st, struct file_id *id)
{
	*id = (struct file_id){ (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
				(uint64_t)st->st_mtim.tv_sec * 1000000000ull +
					(uint64_t)st->st_mtim.tv_nsec };
}

static void free_table(struct jit_cache *c, struct jit_file *f)
{
	if (!f->table)
		return;
	c->stats.bytes -= jit_table__bytes(f->table);
	c->stats.symbols -= jit_table__count(f->table);
	jit_table__free(f->table);
	f->table = NULL;
}

/* Frees p's tables; the files stay open, to be read again. */
static void drop_tables(struct jit_cache *c, struct jit_proc *p)
{
	for (int s = 0; s < JIT_SOURCE_COUNT; s++) {
		free_table(c, &p->files[s]);
		p->files[s].read = false;
	}
	if (p->in_lru)
		lru__unlink(&c->lru, &p->lru);
	p->in_lru = false;
}

/* The process's pid in its own namespace (the last NSpid field: the
 * namespaces nest) and its user ids, from /proc/PID/status. */
static bool read_ids(const struct jit_cache *c, pid_t pid, struct jit_proc *p)
{
	char path[4200], buf[STATUS_MAX], *save = NULL;
	size_t len = 0;
	ssize_t r;
	bool nspid = false, uids = false;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/status", c->proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (len < sizeof(buf) - 1 &&
	       ((r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0 || (r < 0 && errno == EINTR)))
		len += r > 0 ? (size_t)r : 0;
	close(fd);
	buf[len] = '\0';
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned u[4];
		char *t, *last = NULL, *end = NULL, *fields;
		long v;

		if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4) {
			for (int i = 0; i < 4; i++)
				p->uids[i] = (uid_t)u[i];
			uids = true;
		} else if (strncmp(line, "NSpid:", 6) == 0) {
			for (t = strtok_r(line + 6, " \t", &fields); t;
			     t = strtok_r(NULL, " \t", &fields))
				last = t;
			v = last ? strtol(last, &end, 10) : 0;
			nspid = v > 0 && v <= INT32_MAX && !*end;
			p->nspid = (pid_t)v;
		}
	}
	return nspid && uids;
}

bool jit__asks_exit_map(const char *cmdline, size_t len)
{
	bool on = false;

	/* arguments end with a NUL; a cut last one is not looked at */
	for (size_t i = 0; i < len;) {
		const char *arg = cmdline + i;
		size_t n = strnlen(arg, len - i);

		if (i + n == len)
			break;
		if (strcmp(arg, EXIT_MAP_FLAG) == 0)
			on = true;
		else if (strcmp(arg, NO_EXIT_MAP_FLAG) == 0)
			on = false;
		i += n + 1;
	}
	return on;
}

/* jit__asks_exit_map of the process's command line, of which only the
 * first CMDLINE_MAX bytes are read. */
static bool read_exit_map(const struct jit_cache *c, pid_t pid)
{
	char path[4200], *buf = malloc(CMDLINE_MAX);
	size_t len = 0;
	ssize_t r;
	bool on;
	int fd;

	if (!buf)
		return false;
	snprintf(path, sizeof(path), "%s/%d/cmdline", c->proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return false;
	}
	while (len < CMDLINE_MAX &&
	       ((r = read(fd, buf + len, CMDLINE_MAX - len)) > 0 || (r < 0 && errno == EINTR)))
		len += r > 0 ? (size_t)r : 0;
	close(fd);
	on = jit__asks_exit_map(buf, len);
	free(buf);
	return on;
}

static bool owned(const struct jit_proc *p, const struct stat *st)
{
	for (int i = 0; i < 4; i++)
		if (st->st_uid == p->uids[i])
			return true;
	return false;
}

/* The jitdump the process maps, opened: through its map_files link, else
 * by its path inside its root (a symlink there refused). fd or -errno;
 * -ENOENT when it maps none. */
static int open_jitdump(const struct jit_cache *c, const struct proc_snapshot *snap, char *name,
			size_t name_len, struct stat *st)
{
	for (size_t i = 0; i < snap->nmaps; i++) {
		const struct proc_mapping *m = &snap->maps[i];
		const char *base = strrchr(m->name, '/');
		size_t n;
		char root[4200];
		int fd;

		if (!base || strncmp(base + 1, "jit-", 4) != 0)
			continue;
		n = strlen(base);
		if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
			n -= 10;
		if (n < 9 || strncmp(base + n - 5, ".dump", 5) != 0)
			continue;
		snprintf(name, name_len, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, c->proc_root,
			 snap->pid, m->start, m->end);
		fd = safe_open__proc_link(name, JITDUMP_FILE_MAX, st);
		if (fd != -ENOENT && fd != -EACCES && fd != -EPERM)
			return fd;
		snprintf(root, sizeof(root), "%s/%d/root", c->proc_root, snap->pid);
		snprintf(name, name_len, "%.*s", (int)(base + n - m->name), m->name);
		return safe_open__in_nofollow(root, name, JITDUMP_FILE_MAX, st);
	}
	return -ENOENT;
}

/* Adds t as p's table of source s, read from the file st describes, then
 * evicts other processes' tables, least recently used first, until all
 * fit. */
static void install(struct jit_cache *c, struct jit_proc *p, enum jit_source s, struct jit_table *t,
		    const struct stat *st)
{
	struct jit_file *f = &p->files[s];

	free_table(c, f);
	f->table = t;
	f->read = true;
	file_id(st, &f->id);
	c->stats.bytes += jit_table__bytes(t);
	c->stats.symbols += jit_table__count(t);
	if (p->in_lru)
		lru__touch(&c->lru, &p->lru);
	else
		lru__push(&c->lru, &p->lru);
	p->in_lru = true;
	while (c->stats.bytes > c->max_bytes && c->lru.tail && c->lru.tail != &p->lru) {
		drop_tables(c, LRU_ENTRY(c->lru.tail, struct jit_proc, lru));
		c->stats.evictions++;
	}
}

/* Opens source s of a live process by its path (or the perf map of one
 * that ended, in the /tmp it had) and makes it the file kept open, unless
 * it is that file already. True when it was refused. */
static bool reopen(struct jit_cache *c, struct jit_proc *p, const struct proc_snapshot *snap,
		   enum jit_source s)
{
	struct jit_file *f = &p->files[s];
	char name[4200], root[4200];
	struct stat st;
	size_t n;
	int fd;

	snprintf(root, sizeof(root), "%s/%d/root", c->proc_root, snap->pid);
	if (s == JIT_PERF_MAP && snap->ended) {
		if (p->tmp_fd < 0)
			return false;
		snprintf(name, sizeof(name), "/perf-%d.map", p->nspid);
		fd = safe_open__at_nofollow(p->tmp_fd, name, PERF_MAP_FILE_MAX, &st);
		if (snprintf(name, sizeof(name), "%s/tmp/perf-%d.map (at its exit)", root, p->nspid) < 0)
			name[0] = '\0';
	} else if (s == JIT_PERF_MAP) {
		snprintf(name, sizeof(name), "/tmp/perf-%d.map", p->nspid);
		fd = safe_open__in_nofollow(root, name, PERF_MAP_FILE_MAX, &st);
		/* the name logs show: the file from kiln's side */
		if (snprintf(name, sizeof(name), "%s/tmp/perf-%d.map", root, p->nspid) < 0)
			name[0] = '\0';
	} else {
		fd = open_jitdump(c, snap, name, sizeof(name), &st);
	}
	if (fd < 0)
		return fd == -EINVAL || fd == -EFBIG || fd == -ELOOP || fd == -ENAMETOOLONG;
	if (!owned(p, &st)) {
		c->stats.refused[JIT_REFUSED_OWNER]++;
		safe_open__log_refusal(name, jit_refusal_names[JIT_REFUSED_OWNER],
				       "owned by a user the process does not run as");
		close(fd);
		return true;
	}
	if (f->fd >= 0 && f->id.dev == (uint64_t)st.st_dev && f->id.ino == (uint64_t)st.st_ino) {
		close(fd);
		return false;
	}
	if (f->fd >= 0)
		close(f->fd);
	f->fd = fd;
	f->read = false;
	file_id(&st, &f->id);
	/* (a longer name is cut: it is for logs) */
	n = strnlen(name, sizeof(f->name) - 1);
	memcpy(f->name, name, n);
	f->name[n] = '\0';
	return false;
}

/* Reads source s of p again from the file kept open when it changed
 * since it was read. True when it was refused. */
static bool reread(struct jit_cache *c, struct jit_proc *p, enum jit_source s)
{
	struct jit_file *f = &p->files[s];
	uint64_t cap = s == JIT_PERF_MAP ? PERF_MAP_FILE_MAX : JITDUMP_FILE_MAX;
	struct jit_builder b;
	struct jit_table *t;
	struct file_id now;
	struct stat st;
	int err;

	if (f->fd < 0)
		return false;
	err = safe_open__check_fd(f->fd, f->name, cap, &st);
	if (err)
		return err == -EINVAL || err == -EFBIG;
	file_id(&st, &now);
	if (f->read && memcmp(&now, &f->id, sizeof(now)) == 0)
		return false;
	jit_builder__init(&b, f->name, c->max_bytes / 4);
	err = s == JIT_PERF_MAP ? perf_map__read(&b, f->fd, (uint64_t)st.st_size) :
				  jitdump__read(&b, f->fd, (uint64_t)st.st_size);
	c->stats.reads[s]++;
	for (int r = 0; r < JIT_REFUSAL_COUNT; r++)
		c->stats.refused[r] += b.refused[r];
	if (err) {
		pr_debug("%s: %s", f->name, strerror(-err));
		jit_builder__release(&b);
		return false;
	}
	t = jit_builder__finish(&b);
	if (!t) {
		pr_debug("%s: out of memory", f->name);
		return false;
	}
	pr_debug("%s: %zu JIT symbols", f->name, jit_table__count(t));
	install(c, p, s, t, &st);
	return false;
}

/* A live process's files are opened again by their paths (a perf map may
 * appear late or be replaced); the files kept open are read again when
 * they changed, after the process ended too (a JIT that buffers its
 * writes has flushed them then). */
static void refresh(struct jit_cache *c, struct jit_proc *p, const struct proc_snapshot *snap,
		    uint64_t now)
{
	uint64_t t0 = monotonic_ns(), wait = JIT_RECHECK_NS, cost;
	bool refused = false;

	if (!p->ids_read && !snap->ended) {
		p->ids_read = true;
		p->ids_ok = read_ids(c, snap->pid, p);
		p->exit_map = p->ids_ok && read_exit_map(c, snap->pid);
		if (p->exit_map) {
			char root[4200];

			snprintf(root, sizeof(root), "%s/%d/root", c->proc_root, snap->pid);
			p->tmp_fd = safe_open__dir_in(root, "/tmp");
			if (p->tmp_fd < 0)
				pr_debug("pid %d: no /tmp to find its perf map in at its exit: %s",
					 snap->pid, strerror(-p->tmp_fd));
		}
	}
	for (int s = 0; s < JIT_SOURCE_COUNT; s++) {
		if (p->ids_ok && (!snap->ended || s == JIT_PERF_MAP))
			refused |= reopen(c, p, snap, (enum jit_source)s);
		refused |= reread(c, p, (enum jit_source)s);
	}
	cost = monotonic_ns() - t0;
	if (refused)
		wait = JIT_REFUSED_RECHECK_NS;
	if (cost > wait / JIT_COST_FACTOR)
		wait = cost * JIT_COST_FACTOR;
	p->next_check = now + wait;
}

static const char *lookup(struct jit_cache *c, struct jit_proc *p, uint64_t addr)
{
	for (int s = 0; s < JIT_SOURCE_COUNT; s++) {
		const char *name =
			p->files[s].table ? jit_table__lookup(p->files[s].table, addr) : NULL;

		if (name) {
			lru__touch(&c->lru, &p->lru);
			return name;
		}
	}
	return NULL;
}

/* snap's entry, made on first use; NULL when out of memory. */
static struct jit_proc *proc_get(struct jit_cache *c, const struct proc_snapshot *snap)
{
	struct jit_proc *p = hashmap__get_u64(&c->procs, snap->instance);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->instance = snap->instance;
	p->tmp_fd = -1;
	for (int s = 0; s < JIT_SOURCE_COUNT; s++)
		p->files[s].fd = -1;
	if (hashmap__put_u64(&c->procs, snap->instance, p)) {
		free(p);
		return NULL;
	}
	return p;
}

void jit_cache__mapped(struct jit_cache *c, const struct proc_snapshot *snap, uint64_t now)
{
	struct jit_proc *p;
	size_t i;

	if (!c->max_bytes || snap->ended)
		return;
	for (i = 0; i < snap->nmaps && !jit__code_mapping(&snap->maps[i]); i++)
		;
	if (i == snap->nmaps)
		return;
	p = proc_get(c, snap);
	if (p && now >= p->next_check)
		refresh(c, p, snap, now);
}

const char *jit_cache__name(struct jit_cache *c, const struct proc_snapshot *snap, uint64_t addr,
			    uint64_t now)
{
	struct jit_proc *p;
	const char *name;

	if (!c->max_bytes)
		return NULL;
	p = proc_get(c, snap);
	if (!p)
		return NULL;
	name = lookup(c, p, addr);
	/* Once more as soon as the process has ended: its last writes are out. */
	if (name || (now < p->next_check && (!snap->ended || p->ended_checked)))
		return name;
	p->ended_checked = snap->ended;
	refresh(c, p, snap, now);
	return lookup(c, p, addr);
}

bool jit_cache__names_at_exit(struct jit_cache *c, const struct proc_snapshot *snap)
{
	struct jit_proc *p = snap && !snap->ended ? hashmap__get_u64(&c->procs, snap->instance) : NULL;

	return p && p->exit_map;
}

struct age_walk {
	struct proc_table *procs;
	uint32_t *gone;
	size_t n;
};

static void collect_gone(uint64_t key, void *val, void *ctx)
{
	struct age_walk *w = ctx;

	if (!proc_table__get(w->procs, (uint32_t)key))
		w->gone[w->n++] = ((struct jit_proc *)val)->instance;
}

static void proc_free(struct jit_cache *c, struct jit_proc *p)
{
	drop_tables(c, p);
	for (int s = 0; s < JIT_SOURCE_COUNT; s++)
		if (p->files[s].fd >= 0)
			close(p->files[s].fd);
	if (p->tmp_fd >= 0)
		close(p->tmp_fd);
	free(p);
}

void jit_cache__age(struct jit_cache *c, struct proc_table *procs)
{
	struct age_walk w = { .procs = procs };

	if (!c->procs.len)
		return;
	w.gone = malloc(c->procs.len * sizeof(*w.gone));
	if (!w.gone)
		return;
	hashmap__each(&c->procs, collect_gone, &w);
	for (size_t i = 0; i < w.n; i++)
		proc_free(c, hashmap__del_u64(&c->procs, w.gone[i]));
	free(w.gone);
}

void jit_cache__stats(const struct jit_cache *c, struct jit_stats *out)
{
	*out = c->stats;
	out->processes = c->procs.len;
}

static void free_cb(uint64_t key, void *val, void *ctx)
{
	(void)key;
	proc_free(ctx, val);
}

void jit_cache__free(struct jit_cache *c)
{
	if (!c)
		return;
	hashmap__each(&c->procs, free_cb, c);
	hashmap__clear(&c->procs);
	free(c->proc_root);
	free(c);
}
