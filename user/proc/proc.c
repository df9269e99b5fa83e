// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/hashmap.h"
#include "core/lru.h"
#include "proc/mmap_log.h"
#include "proc/proc.h"
#include "core/elf.h"
#include "core/safe_open.h"

/* /proc/PID/maps of a large JVM is a few MiB; past this it is truncated. */
#define MAPS_MAX_BYTES (16u << 20)
#define CGROUP_MAX_BYTES (64u << 10)

struct proc_table {
	char *proc_root;
	size_t max_processes;
	size_t max_mappings;
	size_t mappings;                 /* executable mappings of all snapshots */
	bool warned_cap;                 /* the first cap hit is a warning */
	struct hashmap snapshots;        /* instance -> proc_snapshot */
	struct hashmap live;             /* pid -> its newest snapshot not ended */
	/* Instances of the snapshots young refreshes may still be due for
	 * (at most max_processes): polls walk these, not every snapshot. */
	uint32_t *young;
	size_t nyoung;
	/* Instances whose known mappings another file was mapped over, to
	 * be read again (proc_table__refresh_replaced) */
	uint32_t replaced[PROC_REPLACED_MAX];
	size_t nreplaced;
	struct hashmap binaries;         /* mix(dev, ino, root) -> binary */
	uint64_t host_root;              /* root_id of pid 1's root (or kiln's) */
	/* ns a /proc/PID/stat clock tick; 0 when an event's start time cannot
	 * stand for that file's (kiln in a time namespace of its own) */
	uint64_t event_tick_ns;
	uint64_t drains;
	bool maps_query;                 /* PROCMAP_QUERY works (Linux 6.11) */
	struct mmap_log *log;            /* side-band mappings, NULL: none */
	/* cgroup v2's mount (proc_table__cache_cgroups), NULL: texts not
	 * cached; the texts by cgroup id, least recently used at the tail */
	char *cgroup2_root;
	const volatile uint64_t *cgroup_epoch; /* the sampler's, NULL: none */
	struct hashmap cgroup_texts;
	struct lru cgroup_lru;
	struct proc_stats stats;
	struct proc_observer obs;
};

/* A /proc/PID/cgroup text of cgroup v2 alone ("0::/path\n"), by id. */
struct cgroup_text {
	uint64_t id;
	struct lru_node node;
	char text[];
};

static void notify_mapped(struct proc_table *t, struct proc_snapshot *s)
{
	if (t->obs.mapped)
		t->obs.mapped(t->obs.ctx, s);
}

/* s ends (exit, exec, pid found reused): frozen from now on. */
static void snapshot_end(struct proc_table *t, struct proc_snapshot *s)
{
	if (hashmap__get_u64(&t->live, (uint64_t)s->pid) == s)
		hashmap__del_u64(&t->live, (uint64_t)s->pid);
	s->ended = true;
	s->ended_drain = t->drains;
	if (t->obs.ended)
		t->obs.ended(t->obs.ctx, s);
}

void proc_table__observe(struct proc_table *t, const struct proc_observer *o)
{
	t->obs = *o;
}

/* Reads a whole (proc) file, at most max bytes, NUL terminated. NULL +
 * errno. */
static char *read_file(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap || !buf) {
			char *b;

			if (buf)
				cap *= 2;
			b = realloc(buf, cap);
			if (!b)
				goto fail;
			buf = b;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (r == 0 || n + r >= max)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
fail:
	n = errno;
	close(fd);
	free(buf);
	errno = n;
	return NULL;
}

void proc_mappings__free(struct proc_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(maps[i].name);
	free(maps);
}

/* Whether a maps line's permissions (the field after the first space)
 * allow execution: "55d0c000-55d0d000 r-xp ..." */
static bool line_is_exec(const char *p, size_t ll)
{
	const char *sp = memchr(p, ' ', ll);

	return sp && (size_t)(sp - p) + 4 < ll && sp[3] == 'x';
}

int proc_maps__parse(const char *text, size_t len, struct proc_mapping **out,
		     uint64_t **devs_out, uint64_t **inos_out)
{
	return proc_maps__parse_max(text, len, PROC_MAPS_PER_PROCESS, out, devs_out, inos_out,
				    NULL);
}

/* The executable mappings being gathered, by either reader. */
struct maps_out {
	struct proc_mapping *maps;
	uint64_t *devs, *inos;
	size_t n, cap;
};

static int maps_add(struct maps_out *o, uint64_t start, uint64_t end, uint64_t pgoff,
		    uint64_t dev, uint64_t ino, const char *name)
{
	if (o->n == o->cap) {
		size_t c = o->cap ? o->cap * 2 : 32;
		struct proc_mapping *m = realloc(o->maps, c * sizeof(*m));
		uint64_t *d, *i;

		if (!m)
			return -ENOMEM;
		o->maps = m;
		d = realloc(o->devs, c * sizeof(*d));
		if (!d)
			return -ENOMEM;
		o->devs = d;
		i = realloc(o->inos, c * sizeof(*i));
		if (!i)
			return -ENOMEM;
		o->inos = i;
		o->cap = c;
	}
	o->maps[o->n] = (struct proc_mapping){ .start = start, .end = end, .pgoff = pgoff };
	o->maps[o->n].name = strdup(*name ? name : "[anon]");
	if (!o->maps[o->n].name)
		return -ENOMEM;
	o->devs[o->n] = dev;
	o->inos[o->n] = ino;
	o->n++;
	return 0;
}

/* Hands the gathered mappings out (the callers' out-parameters), or frees
 * them on error (err < 0). Returns their number, or err. */
static int maps_finish(struct maps_out *o, int err, struct proc_mapping **out,
		       uint64_t **devs_out, uint64_t **inos_out)
{
	if (err < 0) {
		proc_mappings__free(o->maps, o->n);
		free(o->devs);
		free(o->inos);
		return err;
	}
	*out = o->maps;
	if (devs_out)
		*devs_out = o->devs;
	else
		free(o->devs);
	if (inos_out)
		*inos_out = o->inos;
	else
		free(o->inos);
	return (int)o->n;
}

int proc_maps__parse_max(const char *text, size_t len, size_t max, struct proc_mapping **out,
			 uint64_t **devs_out, uint64_t **inos_out, size_t *dropped)
{
	struct maps_out o = { 0 };
	size_t over = 0;
	const char *p = text, *end = text + len;
	int err = 0;

	while (p < end && !err) {
		const char *eol = memchr(p, '\n', end - p);
		unsigned long long start, stop, off, ino;
		unsigned maj, min;
		char perms[8];
		int consumed = 0;
		char line[4200];
		size_t ll = (eol ? eol : end) - p;
		bool exec = line_is_exec(p, ll);

		if (o.n >= max || !exec) {
			/* Only executable mappings are kept (most lines are not);
			 * when full, the rest are counted, not parsed. */
			over += exec && o.n >= max;
			p = eol ? eol + 1 : end;
			continue;
		}
		if (ll >= sizeof(line))
			ll = sizeof(line) - 1;
		memcpy(line, p, ll);
		line[ll] = '\0';
		p = eol ? eol + 1 : end;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &stop, perms,
			   &off, &maj, &min, &ino, &consumed) < 7 || stop <= start)
			continue;       /* junk line: skip */
		if (strlen(perms) < 4 || perms[2] != 'x')
			continue;
		err = maps_add(&o, start, stop, off, makedev(maj, min), ino, line + consumed);
	}
	if (dropped)
		*dropped = over;
	return maps_finish(&o, err, out, devs_out, inos_out);
}

/* PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): one executable
 * mapping at or after an address per ioctl on the open maps file, in
 * binary, without the kernel formatting every line as text. */
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};

#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10

int proc_maps__query(int fd, size_t max, struct proc_mapping **out, uint64_t **devs_out,
		     uint64_t **inos_out, size_t *dropped)
{
	struct maps_out o = { 0 };
	uint64_t addr = 0;
	size_t over = 0;
	char name[4096];
	int err = 0;

	for (;;) {
		struct procmap_query q = {
			.size = sizeof(q),
			.query_flags = PROCMAP_QUERY_VMA_EXECUTABLE |
				       PROCMAP_QUERY_COVERING_OR_NEXT_VMA,
			.query_addr = addr,
			.vma_name_size = sizeof(name),
			.vma_name_addr = (uintptr_t)name,
		};

		if (ioctl(fd, PROCMAP_QUERY, &q)) {
			/* ENOENT: no mapping past addr, the end */
			err = errno == ENOENT ? 0 : -errno;
			break;
		}
		if (q.vma_end <= q.vma_start || q.vma_end <= addr) {
			err = -EIO;     /* not going forward: never loop */
			break;
		}
		addr = q.vma_end;
		if (o.n >= max) {
			over++;
			continue;
		}
		if (q.vma_name_size == 0)
			name[0] = '\0';
		name[sizeof(name) - 1] = '\0';
		err = maps_add(&o, q.vma_start, q.vma_end, q.vma_offset,
			       makedev(q.dev_major, q.dev_minor), q.inode, name);
		if (err)
			break;
	}
	if (dropped)
		*dropped = over;
	return maps_finish(&o, err, out, devs_out, inos_out);
}

const struct proc_mapping *proc_snapshot__find(const struct proc_snapshot *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < s->maps[mid].start)
			hi = mid;
		else if (addr >= s->maps[mid].end)
			lo = mid + 1;
		else
			return &s->maps[mid];
	}
	return NULL;
}

/* What pid's root directory is (device and inode, mixed; 0 when it cannot
 * be read): processes of one root share a binary, with its debug files. */
static uint64_t root_id(const struct proc_table *t, pid_t pid)
{
	char path[4200];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%d/root", t->proc_root, pid);
	if (stat(path, &sb) && (pid != 1 || stat("/", &sb)))
		return 0;
	return ((uint64_t)sb.st_dev * 0x9e3779b97f4a7c15ull) ^ (uint64_t)sb.st_ino;
}

/* The inode of the initial time namespace (the kernel's PROC_TIME_INIT_INO). */
#define TIME_NS_INIT_INO 0xeffffffaull

/* Whether kiln reads /proc from the initial time namespace (or a kernel
 * without them): there /proc/PID/stat's start time is the kernel's
 * start_boottime, which the process events carry, in clock ticks; a
 * namespace of its own shifts what kiln reads by its offset. */
static bool initial_time_ns(void)
{
	struct stat st;

	if (stat("/proc/self/ns/time", &st))
		return errno == ENOENT;
	return (uint64_t)st.st_ino == TIME_NS_INIT_INO;
}

struct proc_table *proc_table__new(const char *proc_root, size_t max_processes,
				   size_t max_mappings)
{
	struct proc_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->proc_root = strdup(proc_root);
	if (!t->proc_root) {
		free(t);
		return NULL;
	}
	t->max_processes = max_processes;
	t->max_mappings = max_mappings;
	t->maps_query = true;
	/* without it no young refreshes, nothing else lost */
	t->young = calloc(max_processes ? max_processes : 1, sizeof(*t->young));
	/* without it no fallback for processes gone before their read */
	t->log = mmap_log__new(max_mappings / PROC_LOG_SHARE);
	t->host_root = root_id(t, 1);
	t->event_tick_ns = initial_time_ns() && sysconf(_SC_CLK_TCK) > 0 ?
				   1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK) : 0;
	return t;
}

static uint64_t binary_slot(uint64_t dev, uint64_t ino, uint64_t root)
{
	uint64_t k = (dev * 0xff51afd7ed558ccdull) ^ ino ^ (root * 0xc4ceb9fe1a85ec53ull);

	return k ? k : 1;
}

static void binary_put(struct proc_table *t, struct binary *b)
{
	if (!b || --b->refs)
		return;
	if (hashmap__get_u64(&t->binaries, binary_slot(b->dev, b->ino, b->root_id)) == b)
		hashmap__del_u64(&t->binaries, binary_slot(b->dev, b->ino, b->root_id));
	if (b->fd >= 0)
		close(b->fd);
	free(b->path);
	free(b->root);
	free(b);
}

/* The shared binary for a mapped file, opened through map_files (works for
 * deleted and replaced files and across mount namespaces), else by its path
 * inside the process's root; both through the safe opener: a regular file
 * under ELF_FILE_MAX, never a FIFO, never a symlink out of the root.
 *
 * The symbol cache key names the file itself, from fstat of what was
 * opened: device, inode, size and mtime. Never the build id the file
 * claims: a container mapping a forged file with a victim's build id would
 * otherwise choose the names of the victim's frames in every other
 * container. (A debuginfod client may key by build id the files it fetched
 * itself, as their content is what the server vouches for.) */
void binary__key(const struct stat *sb, char *key, size_t len)
{
	snprintf(key, len, "f:%" PRIu64 ":%" PRIu64 ":%lld:%lld.%09ld", (uint64_t)sb->st_dev,
		 (uint64_t)sb->st_ino, (long long)sb->st_size, (long long)sb->st_mtim.tv_sec,
		 sb->st_mtim.tv_nsec);
}

/* A process of the host's root that exited after its mappings were read
 * (a short-lived one) left neither map_files nor a root to open its files
 * through: its path on the host, taken only when it is the very file
 * mapped (device and inode as the kernel listed them); debug files are
 * then looked up on the host as well. */
static void host_open(struct binary *b, struct stat *sb)
{
	char *root;
	int fd = safe_open__in("/", b->path, ELF_FILE_MAX, sb);

	if (fd < 0)
		return;
	root = strdup("/");
	if ((uint64_t)sb->st_dev != b->dev || (uint64_t)sb->st_ino != b->ino || !root) {
		free(root);
		close(fd);
		return;
	}
	free(b->root);
	b->root = root;
	b->fd = fd;
}

/* Opens the mapped file m through pid (its map_files link, else the path
 * inside its root) and sets b's fd, build id and cache key. A failure
 * leaves fd -1 and the "i:" key. */
static void binary_open(struct binary *b, struct proc_table *t, pid_t pid,
			const struct proc_mapping *m)
{
	char path[4200];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64, t->proc_root,
		 pid, m->start, m->end);
	b->fd = safe_open__proc_link(path, ELF_FILE_MAX, &sb);
	if (b->fd == -ENOENT || b->fd == -EACCES || b->fd == -EPERM)
		b->fd = safe_open__in(b->root, b->path, ELF_FILE_MAX, &sb);
	if (b->fd == -ENOENT && b->root_id == t->host_root)
		host_open(b, &sb);
	if (b->fd < 0) {
		pr_debug("pid %d: cannot open %s: %s", pid, b->path, strerror(-b->fd));
		b->fd = -1;
	}
	if (b->fd >= 0)
		elf__build_id_of(b->fd, b->path, b->build_id, sizeof(b->build_id));
	if (b->fd >= 0)
		binary__key(&sb, b->key, sizeof(b->key));
	else
		snprintf(b->key, sizeof(b->key), "i:%" PRIu64 ":%" PRIu64, b->dev, b->ino);
	/* A table built with a debug file found inside this root is this
	 * root's: another root's processes never share it. */
	if (b->root_id != t->host_root)
		snprintf(b->key + strlen(b->key), sizeof(b->key) - strlen(b->key), ":r%" PRIx64,
			 b->root_id);
}


static struct binary *binary_get(struct proc_table *t, pid_t pid,
				 const struct proc_mapping *m, uint64_t dev, uint64_t ino,
				 uint64_t root)
{
	uint64_t slot = binary_slot(dev, ino, root);
	struct binary *b = hashmap__get_u64(&t->binaries, slot);
	char path[4200];
	size_t plen;

	if (b && b->dev == dev && b->ino == ino && b->root_id == root) {
		b->refs++;
		/* The process that mapped it first may have been gone before we
		 * could open it: this one, alive now, may do better. Otherwise
		 * one short-lived process would leave the file unnamed for all. */
		if (b->fd < 0 && !b->unreadable) {
			snprintf(path, sizeof(path), "%s/%d/root", t->proc_root, pid);
			free(b->root);
			b->root = strdup(path);
			if (b->root)
				binary_open(b, t, pid, m);
		}
		return b;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->dev = dev;
	b->ino = ino;
	b->root_id = root;
	b->refs = 1;
	plen = strlen(m->name);
	/* " (deleted)" is the kernel's marker, not part of the name. */
	if (plen > 10 && strcmp(m->name + plen - 10, " (deleted)") == 0)
		plen -= 10;
	b->path = strndup(m->name, plen);
	snprintf(path, sizeof(path), "%s/%d/root", t->proc_root, pid);
	b->root = strdup(path);
	if (!b->path || !b->root) {
		binary_put(t, b);
		return NULL;
	}
	binary_open(b, t, pid, m);
	if (!hashmap__get_u64(&t->binaries, slot))
		hashmap__put_u64(&t->binaries, slot, b);
	return b;
}

static void snapshot_release_maps(struct proc_table *t, struct proc_snapshot *s)
{
	for (size_t i = 0; i < s->nmaps; i++)
		binary_put(t, s->maps[i].bin);
	proc_mappings__free(s->maps, s->nmaps);
	t->mappings -= s->nmaps;
	s->maps = NULL;
	s->nmaps = 0;
}

/* Field 22 of /proc/PID/stat: start time in clock ticks since boot. */
static int read_starttime(struct proc_table *t, pid_t pid, uint64_t *out)
{
	char path[128], *buf, *p;
	unsigned long long v;

	snprintf(path, sizeof(path), "%s/%d/stat", t->proc_root, pid);
	buf = read_file(path, 4096, NULL);
	if (!buf)
		return -errno;
	/* comm may hold spaces and ')': fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &v) != 1) {
		free(buf);
		return -EINVAL;
	}
	free(buf);
	*out = v;
	return 0;
}

static int read_exe_identity(struct proc_table *t, pid_t pid, uint64_t *dev, uint64_t *ino)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d/exe", t->proc_root, pid);
	if (stat(path, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* Counts the mappings a read could not keep: those beyond the process's
 * cap, then those beyond the table's; the snapshot is marked capped. */
static void count_dropped(struct proc_table *t, struct proc_snapshot *s, size_t kept,
			  size_t dropped)
{
	size_t total = kept + dropped;
	size_t over_process = total > PROC_MAPS_PER_PROCESS ? total - PROC_MAPS_PER_PROCESS : 0;

	s->capped = true;
	t->stats.maps_dropped_process += over_process;
	t->stats.maps_dropped_table += dropped - over_process;
	if (!t->warned_cap) {
		t->warned_cap = true;
		pr_warn("pid %d (%s): %zu executable mappings, %zu kept (at most %d a process, %zu in all: raise --max-mappings); its frames beyond them stay unsymbolized and it is not read again; further cases counted only",
			s->pid, s->comm, total, kept, PROC_MAPS_PER_PROCESS, t->max_mappings);
	} else {
		pr_debug("pid %d (%s): %zu executable mappings, %zu kept", s->pid, s->comm, total,
			 kept);
	}
}

/* s's mappings become maps (n of them, sorted), replacing its own. */
static void snapshot_set_maps(struct proc_table *t, struct proc_snapshot *s,
			      struct proc_mapping *maps, size_t n)
{
	snapshot_release_maps(t, s);
	s->maps = maps;
	s->nmaps = n;
	t->mappings += n;
	s->taken_ns = monotonic_ns();
}

/* Reads the executable mappings of pid into s (replacing older ones),
 * at most PROC_MAPS_PER_PROCESS and what the table's max_mappings leaves
 * (s's own current mappings count as free: they are replaced). pid is
 * s->pid but for a forked process read through its parent. */
static int snapshot_read_maps_of(struct proc_table *t, struct proc_snapshot *s, pid_t pid)
{
	size_t others = t->mappings - s->nmaps, room, dropped = 0;
	struct proc_mapping *maps;
	uint64_t *devs, *inos, root;
	char path[128], *text;
	size_t len;
	int n;

	room = t->max_mappings > others ? t->max_mappings - others : 0;
	if (room > PROC_MAPS_PER_PROCESS)
		room = PROC_MAPS_PER_PROCESS;
	/* The root first: read after the mappings, it could be gone with a
	 * process that exited in between, and its files keyed as another
	 * root's. */
	root = root_id(t, pid);
	snprintf(path, sizeof(path), "%s/%d/maps", t->proc_root, pid);
	n = -ENOTTY;
	if (t->maps_query) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		n = proc_maps__query(fd, room, &maps, &devs, &inos, &dropped);
		close(fd);
		if (n == -ENOTTY) {
			t->maps_query = false;  /* before Linux 6.11: the text */
			pr_debug("%s: no PROCMAP_QUERY; reading maps as text", path);
		}
	}
	/* A name longer than PATH_MAX fails the whole query: the text, which
	 * cuts it, for this process. */
	if (n == -ENOTTY || n == -ENAMETOOLONG) {
		text = read_file(path, MAPS_MAX_BYTES, &len);
		if (!text)
			return -errno;
		n = proc_maps__parse_max(text, len, room, &maps, &devs, &inos, &dropped);
		free(text);
	}
	if (n < 0)
		return n;
	if (pid == s->pid)
		s->root_id = root;
	if (n == 0) {
		/* An exited process (or a kernel thread) has no mappings. */
		free(maps);
		free(devs);
		free(inos);
		return -ESRCH;
	}
	for (int i = 0; i < n; i++)
		if (inos[i] && maps[i].name[0] == '/')
			maps[i].bin = binary_get(t, pid, &maps[i], devs[i], inos[i], root);
	free(devs);
	free(inos);
	snapshot_set_maps(t, s, maps, (size_t)n);
	if (dropped)
		count_dropped(t, s, (size_t)n, dropped);
	return 0;
}

static int snapshot_read_maps(struct proc_table *t, struct proc_snapshot *s)
{
	return snapshot_read_maps_of(t, s, s->pid);
}

/* s, a forked process running its parent's image, gets the mappings of
 * parent's snapshot (sharing its binaries). 0, or -ENOMEM, or -E2BIG when
 * they do not fit the table (s is then read as any other process). */
static int snapshot_copy_maps(struct proc_table *t, struct proc_snapshot *s,
			      const struct proc_snapshot *parent)
{
	struct proc_mapping *maps;

	if (parent->capped || t->mappings + parent->nmaps > t->max_mappings)
		return -E2BIG;
	maps = calloc(parent->nmaps, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	for (size_t i = 0; i < parent->nmaps; i++) {
		maps[i] = parent->maps[i];
		maps[i].name = strdup(parent->maps[i].name);
		if (!maps[i].name) {
			proc_mappings__free(maps, i);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < parent->nmaps; i++)
		if (maps[i].bin)
			maps[i].bin->refs++;
	snapshot_set_maps(t, s, maps, parent->nmaps);
	s->exe_dev = parent->exe_dev;
	s->exe_ino = parent->exe_ino;
	return 0;
}

/* The mappings of a process that runs its parent's image (forked, no exec
 * since): the parent's snapshot's, else the parent's /proc files, which
 * unlike the process's own cannot be the next program's when the process
 * execs before they are read, nor be gone with a process that lived a few
 * milliseconds. 0 when s has them (s->forked set), else -errno. */
static int snapshot_of_parent(struct proc_table *t, struct proc_snapshot *s, pid_t ppid)
{
	struct proc_snapshot *parent = ppid > 0 ? hashmap__get_u64(&t->live, (uint64_t)ppid) : NULL;
	int err;

	if (parent && parent->nmaps && snapshot_copy_maps(t, s, parent) == 0) {
		t->stats.forked_copies++;
	} else {
		err = snapshot_read_maps_of(t, s, ppid);
		if (err)
			return err;
		if (read_exe_identity(t, ppid, &s->exe_dev, &s->exe_ino))
			s->exe_dev = s->exe_ino = 0;
		t->stats.forked_reads++;
	}
	s->forked = true;
	return 0;
}

/* s's mappings become the n logged ones (replacing its own). Each file is
 * opened through s->pid, inside the root whose id is root; for a process
 * gone, root is the host's and only the host's file of that very device
 * and inode is taken (host_open). 0, -E2BIG past the table's bound,
 * -ENOMEM. */
static int snapshot_set_logged(struct proc_table *t, struct proc_snapshot *s,
			       const struct logged_mapping *logged, size_t n, uint64_t root)
{
	struct proc_mapping *maps;

	if (t->mappings - s->nmaps + n > t->max_mappings) {
		t->stats.maps_dropped_table += n;
		return -E2BIG;
	}
	maps = calloc(n, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		maps[i] = (struct proc_mapping){ logged[i].start, logged[i].end, logged[i].pgoff,
						 strdup(logged[i].name), NULL };
		if (!maps[i].name) {
			proc_mappings__free(maps, i);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (maps[i].name[0] == '/')
			maps[i].bin = binary_get(t, s->pid, &maps[i], logged[i].dev, logged[i].ino,
						 root);
	snapshot_set_maps(t, s, maps, n);
	return 0;
}

/* The mappings of a process gone before its /proc files could be read
 * (or a zombie's, whose maps are empty), from what the side-band records
 * logged. Its root is gone with it: each file is the host's binary of
 * that device and inode, or the file at its path on the host when it is
 * that very inode (a container's file that the host does not have stays
 * unnamed). 0, or -ENOENT when nothing was logged, -E2BIG past the
 * table's bound, -ENOMEM. */
static int snapshot_from_log(struct proc_table *t, struct proc_snapshot *s)
{
	const struct logged_mapping *logged;
	int since_exec, err;
	size_t n = t->log ? mmap_log__get(t->log, (uint32_t)s->pid, &logged, &since_exec) : 0;

	if (!n)
		return -ENOENT;
	err = snapshot_set_logged(t, s, logged, n, t->host_root);
	if (err)
		return err;
	t->stats.from_log++;
	t->stats.from_log_partial += !since_exec;
	return 0;
}

/* The program's file is the first one execve mapped; taken only when it
 * is also the lowest-addressed of the files mapped since, which the
 * dynamic loader (mapped second) is not: records read out of order leave
 * it to /proc/PID/exe. */
static void exe_from_log(struct proc_table *t, struct proc_snapshot *s,
			 const struct logged_mapping *logged, size_t n,
			 const struct mmap_log_version *v)
{
	size_t i = 0;

	while (i < n && !logged[i].ino)
		i++;
	if (i == n || !v->exe_ino || logged[i].dev != v->exe_dev || logged[i].ino != v->exe_ino)
		return;
	s->exe_dev = v->exe_dev;
	s->exe_ino = v->exe_ino;
	s->exe_logged = true;
	t->stats.exes_logged++;
}

/* The mappings of a live process whose every executable mapping since its
 * exec, an exec at or before at_ns (its first sample), the side-band
 * logged: perf's way, /proc/PID/maps not read. The log is read after the
 * sampler's events, which follow the records of what the process did
 * before them; a later exec's log is refused by its time. 0, or -ENOENT
 * (no whole log: read /proc), -ESRCH (gone: its exit logged, or its root
 * unreadable; a root passed on from the parent is not read), -E2BIG,
 * -ENOMEM. */
static int snapshot_from_live_log(struct proc_table *t, struct proc_snapshot *s, uint64_t at_ns)
{
	const struct logged_mapping *logged;
	struct mmap_log_version v;
	size_t n = t->log ? mmap_log__complete(t->log, (uint32_t)s->pid, at_ns, &logged, &v) : 0;
	uint64_t root;
	int err;

	if (!n)
		return -ENOENT;
	if (v.exited)
		return -ESRCH;
	root = s->root_id ? s->root_id : root_id(t, s->pid);
	if (!root)
		return -ESRCH;
	err = snapshot_set_logged(t, s, logged, n, root);
	if (err)
		return err;
	s->root_id = root;
	s->logged = true;
	s->log_version = v;
	exe_from_log(t, s, logged, n, &v);
	return 0;
}

static void snapshot_free(struct proc_table *t, struct proc_snapshot *s)
{
	if (!s)
		return;
	snapshot_release_maps(t, s);
	free(s->cgroup);
	free(s);
}

/* The process's name is its main thread's; the event carries the name of
 * whichever thread was sampled. */
static void read_comm(struct proc_table *t, struct proc_snapshot *s)
{
	char path[128], *text;
	size_t len;

	snprintf(path, sizeof(path), "%s/%d/comm", t->proc_root, s->pid);
	text = read_file(path, sizeof(s->comm) + 1, &len);
	if (!text)
		return;
	while (len && text[len - 1] == '\n')
		len--;
	if (len && len < sizeof(s->comm)) {
		memcpy(s->comm, text, len);
		s->comm[len] = '\0';
	}
	free(text);
}

/* Keeps text, pid's cgroup file, as the text of every process of cgroup
 * id: only a v2-only host's one line, and only when the directory it
 * names is that id's (the id is the cgroup's inode): the leader of a
 * process whose sampled thread sits in another cgroup (v2's threaded
 * mode) gives no text to the thread's id. */
static void cache_cgroup(struct proc_table *t, uint64_t id, const char *text)
{
	size_t len = strlen(text);
	struct cgroup_text *c;
	char dir[PROC_CGROUP_TEXT_MAX + 256];
	struct stat st;

	if (len < 5 || len > PROC_CGROUP_TEXT_MAX || strncmp(text, "0::/", 4) ||
	    strchr(text, '\n') != text + len - 1)
		return;
	snprintf(dir, sizeof(dir), "%s%.*s", t->cgroup2_root, (int)(len - 4), text + 3);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || (uint64_t)st.st_ino != id)
		return;
	if (t->cgroup_texts.len >= PROC_CGROUP_TEXTS) {
		struct cgroup_text *old = LRU_ENTRY(t->cgroup_lru.tail, struct cgroup_text, node);

		lru__unlink(&t->cgroup_lru, &old->node);
		hashmap__del_u64(&t->cgroup_texts, old->id);
		free(old);
		t->stats.cgroup_texts_evicted++;
	}
	c = malloc(sizeof(*c) + len + 1);
	if (!c)
		return;
	c->id = id;
	memcpy(c->text, text, len + 1);
	if (hashmap__put_u64(&t->cgroup_texts, id, c)) {
		free(c);
		return;
	}
	lru__push(&t->cgroup_lru, &c->node);
}

/* pid's /proc/PID/cgroup (NULL: unreadable); from the cache when its
 * cgroup's id was read before. */
static char *read_cgroup(struct proc_table *t, pid_t pid, uint64_t id)
{
	struct cgroup_text *c = t->cgroup2_root && id ? hashmap__get_u64(&t->cgroup_texts, id) :
							 NULL;
	char path[128], *text;

	if (c) {
		lru__touch(&t->cgroup_lru, &c->node);
		t->stats.cgroup_texts_cached++;
		return strdup(c->text);
	}
	snprintf(path, sizeof(path), "%s/%d/cgroup", t->proc_root, pid);
	text = read_file(path, CGROUP_MAX_BYTES, NULL);
	if (text && t->cgroup2_root && id)
		cache_cgroup(t, id, text);
	return text;
}

void proc_table__cache_cgroups(struct proc_table *t, const char *cgroup2_root)
{
	free(t->cgroup2_root);
	t->cgroup2_root = cgroup2_root ? strdup(cgroup2_root) : NULL;
}

void proc_table__use_cgroup_epoch(struct proc_table *t, const volatile uint64_t *epoch)
{
	t->cgroup_epoch = epoch;
}

/* A forked process gone before its cgroup was read was in its parent's
 * when both have the same cgroup (v2) id. */
static void inherit_cgroup(struct proc_table *t, struct proc_snapshot *s, pid_t ppid)
{
	struct proc_snapshot *parent = hashmap__get_u64(&t->live, (uint64_t)ppid);

	if (parent && parent->cgroup && parent->cgroup_id == s->cgroup_id)
		s->cgroup = strdup(parent->cgroup);
}

/* What s, new, need not read from /proc because its parent's snapshot
 * has it: the root's id when both roots are one (the keys are of kernel
 * objects both live processes hold), the cgroup text when both are in one
 * set of cgroups and no task moved between the parent's read and s's
 * event (the epochs, which only grow, are equal). */
static void inherit_from_parent(struct proc_table *t, struct proc_snapshot *s, pid_t ppid)
{
	const struct proc_snapshot *parent =
		ppid > 0 ? hashmap__get_u64(&t->live, (uint64_t)ppid) : NULL;

	if (!parent)
		return;
	if (s->root_key && parent->root_id && parent->root_key == s->root_key) {
		s->root_id = parent->root_id;
		t->stats.roots_inherited++;
	}
	if (parent->cgroup && parent->cgroup_keyed && parent->cgroup_key == s->cgroup_key &&
	    parent->cgroup_epoch == s->cgroup_epoch) {
		s->cgroup = strdup(parent->cgroup);
		s->cgroup_keyed = s->cgroup != NULL;
		t->stats.cgroups_inherited += s->cgroup_keyed;
	}
}

/* s's cgroup text, read; keyed when no task moved since its event. */
static void snapshot_read_cgroup(struct proc_table *t, struct proc_snapshot *s)
{
	s->cgroup = read_cgroup(t, s->pid, s->cgroup_id);
	s->cgroup_keyed = s->cgroup && t->cgroup_epoch && *t->cgroup_epoch == s->cgroup_epoch;
}

static void snapshot_take(struct proc_table *t, const struct kiln_event *ev)
{
	struct proc_snapshot *s;
	bool gone = false;
	int err;

	if (hashmap__get_u64(&t->snapshots, ev->instance))
		return;
	if (t->snapshots.len >= t->max_processes) {
		t->stats.table_full++;
		if (t->stats.table_full == 1)
			pr_warn("process table full (%zu processes): raise --max-processes; samples of new processes stay unsymbolized",
				t->max_processes);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->instance = ev->instance;
	s->pid = (pid_t)ev->pid;
	s->cgroup_id = ev->cgroup_id;
	s->root_key = ev->root_key;
	s->cgroup_key = ev->cgroup_key;
	s->cgroup_epoch = ev->cgroup_epoch;
	memcpy(s->comm, ev->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
	memcpy(s->sampled_comm, s->comm, sizeof(s->comm));
	s->ended_drain = UINT64_MAX;
	/* What the event carries is not read again: the start time, and the
	 * process's name (its main thread's; the event's thread may be
	 * another). */
	if (ev->leader_comm[0]) {
		memcpy(s->comm, ev->leader_comm, sizeof(s->comm));
		s->comm[sizeof(s->comm) - 1] = '\0';
	}
	if (ev->start_boottime_ns && t->event_tick_ns) {
		s->starttime = ev->start_boottime_ns / t->event_tick_ns;
		err = 0;
	} else {
		err = read_starttime(t, s->pid, &s->starttime);
	}
	if (err == 0) {
		inherit_from_parent(t, s, (pid_t)ev->ppid);
		err = -ENOENT;
		if (ev->flags & KILN_EVENT_F_FORKED)
			err = snapshot_of_parent(t, s, (pid_t)ev->ppid);
		if (err) {
			err = snapshot_from_live_log(t, s, ev->time_ns);
			t->stats.logged_live += err == 0;
		}
		if (err && err != -ESRCH) {
			err = snapshot_read_maps(t, s);
			if (err == 0 && t->log)
				mmap_log__done(t->log, (uint32_t)s->pid);
		}
		/* Gone (or a zombie, whose maps are empty): what the side-band
		 * logged. */
		if (err && snapshot_from_log(t, s) == 0) {
			gone = true;
			err = 0;
		}
		/* A kernel thread has a stat file but empty maps: a snapshot too. */
		if (err == -ESRCH)
			err = 0;
	}
	if (err == 0 && gone) {
		t->stats.snapshots++;
		s->ended = true;
		s->ended_drain = t->drains;
	} else if (err == 0) {
		if (!s->cgroup)
			snapshot_read_cgroup(t, s);
		if (!s->cgroup && s->forked)
			inherit_cgroup(t, s, (pid_t)ev->ppid);
		if (!s->forked && !s->exe_logged)
			read_exe_identity(t, s->pid, &s->exe_dev, &s->exe_ino);
		if (!ev->leader_comm[0])
			read_comm(t, s);
		t->stats.snapshots++;
	} else {
		/* Gone already: keep the name, so its samples still say who. */
		pr_debug("pid %d: no snapshot (%s)", s->pid, strerror(-err));
		t->stats.snapshot_failures++;
		s->ended = true;
		s->ended_drain = t->drains;
	}
	if (hashmap__put_u64(&t->snapshots, s->instance, s)) {
		snapshot_free(t, s);
		return;
	}
	if (s->ended)
		return;
	if (hashmap__put_u64(&t->live, (uint64_t)s->pid, s)) {
		snapshot_end(t, s);     /* no memory: frozen, as if gone */
		return;
	}
	if (t->young && t->nyoung < t->max_processes)
		t->young[t->nyoung++] = s->instance;
	notify_mapped(t, s);
}

void proc_table__on_event(struct proc_table *t, const struct kiln_event *ev)
{
	struct proc_snapshot *s;

	switch (ev->type) {
	case KILN_EVENT_NEW:
		snapshot_take(t, ev);
		break;
	case KILN_EVENT_EXEC:
		s = hashmap__get_u64(&t->snapshots, ev->instance);
		/* Its first sample came just before the exec, and /proc was read
		 * after it: those are the next program's mappings and name (not
		 * so for a forked process's, read through its parent, nor for
		 * one from the log, which was of the sampled program). */
		if (s && !s->ended && s->nmaps && !s->forked && !s->logged &&
		    s->taken_ns > ev->time_ns) {
			snapshot_release_maps(t, s);
			memcpy(s->comm, s->sampled_comm, sizeof(s->comm));
			t->stats.read_after_exec++;
		}
		/* fall through */
	case KILN_EVENT_EXIT:
		s = hashmap__get_u64(&t->snapshots, ev->instance);
		if (s && !s->ended)
			snapshot_end(t, s);
		break;
	default:
		break;
	}
}

struct proc_snapshot *proc_table__get(struct proc_table *t, uint32_t instance)
{
	return hashmap__get_u64(&t->snapshots, instance);
}

/* A snapshot from the log, read again from it: rebuilt when the log
 * logged a mapping since; told to the observer either way, as a read of
 * /proc would be (an interpreter's detection retried, the walker
 * re-armed). 0, or -ENOENT: the log no longer holds this program's every
 * mapping. */
static int refresh_from_log(struct proc_table *t, struct proc_snapshot *s)
{
	const struct logged_mapping *logged;
	struct mmap_log_version v;
	size_t n = t->log ? mmap_log__complete(t->log, (uint32_t)s->pid, UINT64_MAX, &logged, &v) :
			    0;

	if (!n || v.exec_ns != s->log_version.exec_ns)
		return -ENOENT;
	if (v.gen == s->log_version.gen) {
		t->stats.logged_unchanged++;
		s->taken_ns = monotonic_ns();
		notify_mapped(t, s);
		return 0;
	}
	if (snapshot_from_live_log(t, s, UINT64_MAX))
		return -ENOENT;
	t->stats.logged_refreshes++;
	notify_mapped(t, s);
	return 0;
}

bool proc_table__log_moved(const struct proc_table *t, const struct proc_snapshot *s)
{
	const struct logged_mapping *logged;
	struct mmap_log_version v;

	return s->logged && !s->ended && t->log &&
	       mmap_log__complete(t->log, (uint32_t)s->pid, UINT64_MAX, &logged, &v) &&
	       v.exec_ns == s->log_version.exec_ns && v.gen != s->log_version.gen;
}

int proc_table__refresh(struct proc_table *t, struct proc_snapshot *s)
{
	uint64_t start, dev, ino;

	if (s->ended)
		return -ESRCH;
	if (s->logged) {
		if (refresh_from_log(t, s) == 0)
			return 0;
		s->logged = false;      /* /proc from now on */
	}
	/* An identity from the log is the mapped file's device, which stat
	 * may report otherwise (btrfs, overlayfs): stat's from now on. An
	 * exec since would have ended s (KILN_EVENT_EXEC), a new process
	 * under its pid changed its start time. */
	if (s->exe_logged && read_exe_identity(t, s->pid, &s->exe_dev, &s->exe_ino) == 0)
		s->exe_logged = false;
	/* Re-reading would cost as much as the first read, for mappings the
	 * caps would drop again. */
	if (s->capped) {
		t->stats.refreshes_skipped++;
		return -E2BIG;
	}
	/* Same process, same program? Otherwise the pid was reused or the
	 * process exec'd before we heard of it. */
	if (read_starttime(t, s->pid, &start) || start != s->starttime ||
	    read_exe_identity(t, s->pid, &dev, &ino) || dev != s->exe_dev || ino != s->exe_ino) {
		snapshot_end(t, s);
		return -ESRCH;
	}
	if (snapshot_read_maps(t, s))
		return -ESRCH;
	t->stats.refreshes++;
	notify_mapped(t, s);
	return 0;
}

struct walk {
	struct proc_snapshot **list;
	size_t n;
};

static void collect(uint64_t key, void *val, void *ctx)
{
	struct walk *w = ctx;

	(void)key;
	w->list[w->n++] = val;
}

/* Snapshots in a stable array, so the map may change while they are used. */
static struct proc_snapshot **snapshot_list(struct proc_table *t, size_t *n)
{
	struct walk w = { 0 };

	w.list = malloc((t->snapshots.len + 1) * sizeof(*w.list));
	if (!w.list)
		return NULL;
	hashmap__each(&t->snapshots, collect, &w);
	*n = w.n;
	return w.list;
}

/* Young snapshots are read again at these ages, for the libraries the
 * dynamic loader maps after the first sample. */
static const uint64_t young_ages_ms[] = { 50, 250, 1000 };

/* Whether r maps a file over part of an executable mapping s knows that is
 * not that same file at the same place: a library unloaded and another
 * mapped in its range, whose pcs s would still resolve to the old file. */
static bool replaces_known(const struct proc_snapshot *s, const struct sideband_record *r)
{
	size_t lo = 0, hi = s->nmaps;

	/* the first mapping ending past r's start (ends rise with starts) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->maps[mid].end <= r->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < s->nmaps && s->maps[i].start < r->end; i++) {
		const struct proc_mapping *m = &s->maps[i];

		if (!m->bin || m->bin->dev != r->dev || m->bin->ino != r->ino ||
		    m->start - m->pgoff != r->start - r->pgoff)
			return true;
	}
	return false;
}

void proc_table__on_sideband(struct proc_table *t, const struct sideband_record *r)
{
	struct proc_snapshot *s;

	if (t->log)
		mmap_log__record(t->log, r);
	if (r->type != SIDEBAND_MMAP || !r->ino || !r->name || r->name[0] != '/')
		return;
	s = hashmap__get_u64(&t->live, (uint64_t)r->pid);
	/* (after an exec since s was read, the next program's mappings: its
	 * EXEC event ends s) */
	if (!s || s->ended || s->replaced ||
	    (t->log && mmap_log__exec_ns(t->log, r->pid) > s->taken_ns) || !replaces_known(s, r))
		return;
	t->stats.mappings_replaced++;
	if (t->nreplaced == PROC_REPLACED_MAX) {
		t->stats.replaced_not_queued++;         /* a walk's miss still re-reads it */
		return;
	}
	s->replaced = true;
	t->replaced[t->nreplaced++] = s->instance;
}

bool proc_table__replaced_due(const struct proc_table *t)
{
	uint64_t now = monotonic_ns();

	for (size_t i = 0; i < t->nreplaced; i++) {
		const struct proc_snapshot *s = hashmap__get_u64(&t->snapshots, t->replaced[i]);

		if (!s || s->ended || now - s->taken_ns >= PROC_REPLACED_REREAD_NS)
			return true;
	}
	return false;
}

void proc_table__refresh_replaced(struct proc_table *t)
{
	uint64_t now = monotonic_ns();

	for (size_t i = 0; i < t->nreplaced;) {
		struct proc_snapshot *s = hashmap__get_u64(&t->snapshots, t->replaced[i]);

		if (s && !s->ended && now - s->taken_ns < PROC_REPLACED_REREAD_NS) {
			i++;
			continue;
		}
		if (s) {
			s->replaced = false;
			if (!s->ended)
				proc_table__refresh(t, s);
		}
		t->replaced[i] = t->replaced[--t->nreplaced];
	}
}

void proc_table__refresh_young(struct proc_table *t)
{
	uint64_t now = monotonic_ns();

	if (t->log)
		mmap_log__expire(t->log, now);
	for (size_t i = 0; i < t->nyoung;) {
		struct proc_snapshot *s = hashmap__get_u64(&t->snapshots, t->young[i]);

		if (!s || s->ended ||
		    s->refreshes >= sizeof(young_ages_ms) / sizeof(young_ages_ms[0])) {
			t->young[i] = t->young[--t->nyoung];    /* grown up or gone */
			continue;
		}
		/* (one whose mapping was replaced is read after its samples
		 * are named: proc_table__refresh_replaced) */
		if (!s->replaced && now - s->taken_ns >= young_ages_ms[s->refreshes] * 1000000ull) {
			s->refreshes++;
			proc_table__refresh(t, s);
		}
		i++;
	}
}

void proc_table__drained(struct proc_table *t)
{
	struct proc_snapshot **list;
	size_t n;

	list = snapshot_list(t, &n);
	if (list) {
		for (size_t i = 0; i < n; i++) {
			struct proc_snapshot *s = list[i];

			/* Samples taken before it ended sat in the generation
			 * drained by the first drain after the end at the latest. */
			if (s->ended && !s->pins && s->ended_drain < t->drains) {
				hashmap__del_u64(&t->snapshots, s->instance);
				snapshot_free(t, s);
				t->stats.reaped++;
			}
		}
		free(list);
	}
	t->drains++;
}

void proc_snapshot__pin(struct proc_snapshot *s)
{
	s->pins++;
}

void proc_snapshot__unpin(struct proc_snapshot *s)
{
	if (s->pins)
		s->pins--;
}

void proc_table__stats(const struct proc_table *t, struct proc_stats *out)
{
	*out = t->stats;
	out->live = t->snapshots.len;
	out->binaries = t->binaries.len;
	out->mappings = t->mappings;
	if (t->log)
		mmap_log__stats(t->log, &out->log);
}

const char *proc_table__root(const struct proc_table *t)
{
	return t->proc_root;
}

static void free_snapshot_cb(uint64_t key, void *val, void *ctx)
{
	(void)key;
	snapshot_free(ctx, val);
}

void proc_table__free(struct proc_table *t)
{
	if (!t)
		return;
	hashmap__each(&t->snapshots, free_snapshot_cb, t);
	hashmap__clear(&t->snapshots);
	hashmap__clear(&t->live);
	mmap_log__free(t->log);
	hashmap__clear(&t->binaries);
	while (t->cgroup_lru.tail) {
		struct cgroup_text *c = LRU_ENTRY(t->cgroup_lru.tail, struct cgroup_text, node);

		lru__unlink(&t->cgroup_lru, &c->node);
		free(c);
	}
	hashmap__clear(&t->cgroup_texts);
	free(t->cgroup2_root);
	free(t->young);
	free(t->proc_root);
	free(t);
}
