// SPDX-License-Identifier: BSD-2-Clause
/* bench_probe DIR ROOT COMM SECONDS T0 T1 WATCH: the readings a bench phase
 * takes while its profiler runs, from one small C process started with the
 * phase, so that the readings add no process a profiler has to discover,
 * walk and name during its window (the Python readers they replace made
 * kiln load its Python walker in every phase).
 *
 * - first sample (WATCH = 1): once DIR/stamp ("PID NS", stamp_exec) exists,
 *   the run counts of PID's perf_event BPF programs every 5 ms until the
 *   first run, then every 100 ms until PID is gone: DIR/first_sample gets
 *   "FIRST_NS LAST_NS" (CLOCK_MONOTONIC; the first poll that saw a run, the
 *   last that saw the count grow). BPF stats must be on.
 * - steady state (COMM other than "none"): PID's CPU (ticks of
 *   /proc/PID/stat, each thread's schedstat run time), its BPF programs'
 *   run time and its maps' memlock (each program or map once, however many
 *   fds hold it) at T0 and T1 seconds after the stamp: DIR/steady.json.
 * - BPF programs: from SECONDS - 2 s after this probe's start (0.5 s at
 *   least), every 0.25 s for up to 4 s, the programs held by the processes
 *   named COMM below ROOT, read by id (name, type, run time, runs), each
 *   one's last reading kept: a stopping profiler closes its programs one by
 *   one. Stops early once every program seen is closed. DIR/bpf.json.
 *
 * The same probe runs in every phase, the baseline's too, so its own small
 * cost is the same everywhere. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ll
#define MAX_IDS 512
#define MAX_THREADS 256

static const char *dir;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS + ts.tv_nsec;
}

static void sleep_until(long long t)
{
	struct timespec ts = { t / NS, t % NS };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The file's first bytes (NUL-terminated), or -1. */
static int slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

/* The number after "key:" on one of text's lines, or -1. */
static long long field(const char *text, const char *key)
{
	size_t k = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (strncmp(l, key, k) == 0 && l[k] == ':')
			return strtoll(l + k + 1, NULL, 10);
	return -1;
}

static int path_of(char *buf, size_t len, const char *name)
{
	return snprintf(buf, len, "%s/%s", dir, name) >= (int)len ? -1 : 0;
}

/* stamp_exec's "PID NS" of the profiler: 0, or -1 while not written. */
static int read_stamp(long long *pid, long long *ns)
{
	char path[4096], buf[64];

	if (path_of(path, sizeof(path), "stamp") || slurp(path, buf, sizeof(buf)) <= 0)
		return -1;
	return sscanf(buf, "%lld %lld", pid, ns) == 2 ? 0 : -1;
}

struct ids {
	unsigned n;
	uint32_t v[MAX_IDS];
};

static bool add_id(struct ids *s, uint32_t id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i] == id)
			return false;
	if (s->n < MAX_IDS)
		s->v[s->n++] = id;
	return true;
}

/* Calls fn(fd, text) for each fdinfo of pid; -1 if pid has none (gone). */
static int each_fdinfo(long long pid, void (*fn)(int fd, const char *text, void *ctx), void *ctx)
{
	char path[128], text[1024];
	struct dirent *d;
	DIR *dd;

	snprintf(path, sizeof(path), "/proc/%lld/fdinfo", pid);
	dd = opendir(path);
	if (!dd)
		return -1;
	while ((d = readdir(dd))) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%lld/fdinfo/%s", pid, d->d_name);
		if (slurp(path, text, sizeof(text)) > 0)
			fn(atoi(d->d_name), text, ctx);
	}
	closedir(dd);
	return 0;
}

/* ---- first sample ---- */

#define MAX_FDS 64

struct first {
	bool done;
	long long pid, first, last, seen, next;
	int nfds, fds[MAX_FDS]; /* pid's perf_event programs, once found */
	long long runs; /* summed by a scan */
};

static long long run_cnt(const char *text)
{
	long long n = field(text, "run_cnt");

	return n > 0 ? n : 0;
}

static void add_perf_event(int fd, const char *text, void *ctx)
{
	struct first *f = ctx;

	if (f->nfds < MAX_FDS && field(text, "prog_type") == BPF_PROG_TYPE_PERF_EVENT) {
		f->fds[f->nfds++] = fd;
		f->runs += run_cnt(text);
	}
}

/* The summed run counts of pid's perf_event programs (the fds found by a
 * scan of all while none has run: kiln loads its tail-called walker, which
 * counts no runs of its own, before kiln_sample), or -1 once pid is gone. */
static long long perf_event_runs(struct first *f)
{
	char path[128], text[1024];
	long long total = 0;

	if (!f->seen) {
		f->nfds = 0;
		f->runs = 0;
		return each_fdinfo(f->pid, add_perf_event, f) ? -1 : f->runs;
	}
	for (int i = 0; i < f->nfds; i++) {
		snprintf(path, sizeof(path), "/proc/%lld/fdinfo/%d", f->pid, f->fds[i]);
		if (slurp(path, text, sizeof(text)) <= 0)
			return -1;
		total += run_cnt(text);
	}
	return total;
}

static void first_step(struct first *f, long long t)
{
	long long runs = perf_event_runs(f);

	if (runs < 0) {
		char path[4096];
		FILE *o;

		f->done = true;
		if (f->first && !path_of(path, sizeof(path), "first_sample") &&
		    (o = fopen(path, "w"))) {
			fprintf(o, "%lld %lld\n", f->first, f->last);
			fclose(o);
		}
		return;
	}
	if (runs > f->seen) {
		if (!f->first)
			f->first = t;
		f->last = t;
		f->seen = runs;
	}
	f->next = t + (f->first ? 100000000 : 5000000);
}

/* ---- steady state ---- */

struct usage {
	struct ids progs, maps;
	long long bpf_ns, maps_bytes;
};

static void add_usage(int fd, const char *text, void *ctx)
{
	struct usage *u = ctx;
	long long id;

	(void)fd;
	if ((id = field(text, "prog_id")) >= 0) {
		if (add_id(&u->progs, (uint32_t)id) && field(text, "run_time_ns") > 0)
			u->bpf_ns += field(text, "run_time_ns");
	} else if ((id = field(text, "map_id")) >= 0) {
		if (add_id(&u->maps, (uint32_t)id) && field(text, "memlock") > 0)
			u->maps_bytes += field(text, "memlock");
	}
}

/* Appends to out[*n, cap); *n past cap once it did not fit. */
static void append(char *out, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;

	if (*n >= cap)
		return;
	va_start(ap, fmt);
	*n += (size_t)vsnprintf(out + *n, cap - *n, fmt, ap);
	va_end(ap);
}

/* One reading of pid as JSON into out (cap bytes); -1 if pid is gone. */
static int cpu_reading(long long pid, char *out, size_t cap)
{
	char path[128], buf[1024], *p;
	struct usage u = { 0 };
	unsigned long long utime, stime;
	struct dirent *d;
	size_t n = 0;
	DIR *dd;
	int i = 0;

	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	if (slurp(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return -1;
	append(out, cap, &n, "{\"ticks\": %llu, \"threads\": {", utime + stime);
	snprintf(path, sizeof(path), "/proc/%lld/task", pid);
	dd = opendir(path);
	while (dd && (d = readdir(dd)) && i < MAX_THREADS) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%lld/task/%s/schedstat", pid, d->d_name);
		if (slurp(path, buf, sizeof(buf)) <= 0)
			continue;
		append(out, cap, &n, "%s\"%s\": %lld", i++ ? ", " : "", d->d_name,
		       strtoll(buf, NULL, 10));
	}
	if (dd)
		closedir(dd);
	each_fdinfo(pid, add_usage, &u);
	append(out, cap, &n, "}, \"bpf_ns\": %lld, \"maps_bytes\": %lld, \"mono_ns\": %lld}",
	       u.bpf_ns, u.maps_bytes, now_ns());
	return n < cap ? 0 : -1;
}

struct steady {
	bool done;
	double at[2];
	int got;
	long long pid, start, next;
	char reading[2][16384];
};

static void steady_step(struct steady *s)
{
	char path[4096];
	FILE *o;

	if (cpu_reading(s->pid, s->reading[s->got], sizeof(s->reading[0]))) {
		s->done = true;
		return;
	}
	if (++s->got < 2) {
		s->next = s->start + (long long)(s->at[1] * NS);
		return;
	}
	s->done = true;
	if (path_of(path, sizeof(path), "steady.json") || !(o = fopen(path, "w")))
		return;
	fprintf(o, "{\"t0\": %s, \"t1\": %s, \"clk_tck\": %ld}\n", s->reading[0], s->reading[1],
		sysconf(_SC_CLK_TCK));
	fclose(o);
}

/* ---- BPF programs ---- */

struct prog {
	uint32_t id;
	char name[BPF_OBJ_NAME_LEN];
	uint32_t type;
	uint64_t run_time_ns, run_cnt;
};

struct bpfstats {
	bool done;
	long long root, next, deadline;
	const char *comm;
	unsigned n;
	struct prog last[MAX_IDS];
};

static void add_prog_id(int fd, const char *text, void *ctx)
{
	long long id = field(text, "prog_id");

	(void)fd;
	if (id >= 0)
		add_id(ctx, (uint32_t)id);
}

struct proc {
	long long pid, ppid;
	bool named;
};

static int cmp_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static const struct proc *find_proc(const struct proc *v, size_t n, long long pid)
{
	struct proc key = { .pid = pid };

	return bsearch(&key, v, n, sizeof(*v), cmp_pid);
}

/* The pids named comm below root (any depth) into pids; their count. */
static int descendants(long long root, const char *comm, long long *pids, int max)
{
	char path[128], buf[1024], *open, *close;
	struct proc *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dd = opendir("/proc");
	int found = 0;

	if (!dd)
		return 0;
	while ((d = readdir(dd))) {
		long long pid = strtoll(d->d_name, NULL, 10), ppid;

		snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
		if (pid <= 0 || slurp(path, buf, sizeof(buf)) <= 0 || !(open = strchr(buf, '(')) ||
		    !(close = strrchr(buf, ')')) || sscanf(close + 2, "%*c %lld", &ppid) != 1)
			continue;
		if (n == cap) {
			struct proc *nv = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		*close = '\0';
		v[n++] = (struct proc){ pid, ppid, strcmp(open + 1, comm) == 0 };
	}
	closedir(dd);
	qsort(v, n, sizeof(*v), cmp_pid);
	for (size_t i = 0; i < n && found < max; i++) {
		const struct proc *p = &v[i];

		if (!p->named)
			continue;
		for (int depth = 0; p && p->pid != root && depth < 64; depth++)
			p = find_proc(v, n, p->ppid);
		if (p && p->pid == root)
			pids[found++] = v[i].pid;
	}
	free(v);
	return found;
}

static int prog_info(uint32_t id, struct prog *out)
{
	struct bpf_prog_info info;
	union bpf_attr attr;
	int fd, err;

	memset(&attr, 0, sizeof(attr));
	attr.prog_id = id;
	fd = (int)syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &attr, sizeof(attr));
	if (fd < 0)
		return -1;
	memset(&info, 0, sizeof(info));
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (uint32_t)fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = (uint64_t)(uintptr_t)&info;
	err = (int)syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr));
	close(fd);
	if (err)
		return -1;
	out->id = id;
	memcpy(out->name, info.name, sizeof(out->name));
	out->name[sizeof(out->name) - 1] = '\0';
	out->type = info.type;
	out->run_time_ns = info.run_time_ns;
	out->run_cnt = info.run_cnt;
	return 0;
}

/* bpftool's names of the program types the profilers use. */
static const char *type_name(uint32_t t)
{
	switch (t) {
	case BPF_PROG_TYPE_KPROBE:
		return "kprobe";
	case BPF_PROG_TYPE_TRACEPOINT:
		return "tracepoint";
	case BPF_PROG_TYPE_PERF_EVENT:
		return "perf_event";
	case BPF_PROG_TYPE_RAW_TRACEPOINT:
		return "raw_tracepoint";
	case BPF_PROG_TYPE_TRACING:
		return "tracing";
	default:
		return "other";
	}
}

static void bpf_write(const struct bpfstats *b)
{
	char path[4096];
	FILE *o;

	if (path_of(path, sizeof(path), "bpf.json") || !(o = fopen(path, "w")))
		return;
	fputc('[', o);
	for (unsigned i = 0; i < b->n; i++)
		fprintf(o,
			"%s{\"id\": %u, \"name\": \"%s\", \"type\": \"%s\", "
			"\"run_time_ns\": %llu, \"run_cnt\": %llu}",
			i ? ", " : "", b->last[i].id, b->last[i].name, type_name(b->last[i].type),
			(unsigned long long)b->last[i].run_time_ns,
			(unsigned long long)b->last[i].run_cnt);
	fputs("]\n", o);
	fclose(o);
}

static void bpf_step(struct bpfstats *b, long long t)
{
	long long pids[64];
	struct ids ids = { 0 };
	unsigned found = 0;
	int n = descendants(b->root, b->comm, pids, 64);

	for (int i = 0; i < n; i++)
		each_fdinfo(pids[i], add_prog_id, &ids);
	for (unsigned i = 0; i < ids.n; i++) {
		struct prog p;
		unsigned j;

		if (prog_info(ids.v[i], &p))
			continue;
		found++;
		for (j = 0; j < b->n && b->last[j].id != p.id; j++)
			;
		if (j < MAX_IDS) {
			b->last[j] = p;
			b->n += j == b->n;
		}
	}
	if ((b->n && !found) || t >= b->deadline) {
		b->done = true;
		bpf_write(b);
		return;
	}
	b->next = t + 250000000;
}

int main(int argc, char **argv)
{
	static struct steady steady;
	static struct bpfstats bpf;
	struct first first = { 0 };
	long long start = now_ns(), stamp_next = start, pid = 0;
	double secs;

	if (argc != 8) {
		fprintf(stderr, "usage: bench_probe DIR ROOT COMM SECONDS T0 T1 WATCH\n");
		return 2;
	}
	dir = argv[1];
	secs = atof(argv[4]);
	bpf.root = atoll(argv[2]);
	bpf.comm = argv[3];
	bpf.next = start + (long long)((secs - 2 > 0.5 ? secs - 2 : 0.5) * NS);
	bpf.deadline = bpf.next + 4 * NS;
	steady.done = strcmp(argv[3], "none") == 0;
	steady.at[0] = atof(argv[5]);
	steady.at[1] = atof(argv[6]);
	first.done = strcmp(argv[7], "1") != 0;
	/* both wait for the profiler's stamp (a minute at most) */
	first.next = steady.next = INT64_MAX;
	for (;;) {
		long long t = now_ns(), next = INT64_MAX;

		if (!pid && !(first.done && steady.done) && t >= stamp_next) {
			long long p, ns;

			if (read_stamp(&p, &ns) == 0) {
				pid = first.pid = steady.pid = p;
				steady.start = ns;
				first.next = t;
				steady.next = ns + (long long)(steady.at[0] * NS);
			} else if (t - start > 60 * NS) {
				first.done = steady.done = true;
			}
			stamp_next = t + 5000000;
		}
		if (!first.done && t >= first.next)
			first_step(&first, t);
		if (!steady.done && t >= steady.next)
			steady_step(&steady);
		if (!bpf.done && t >= bpf.next)
			bpf_step(&bpf, t);
		if (!pid && !(first.done && steady.done))
			next = stamp_next;
		if (!first.done && first.next < next)
			next = first.next;
		if (!steady.done && steady.next < next)
			next = steady.next;
		if (!bpf.done && bpf.next < next)
			next = bpf.next;
		if (next == INT64_MAX)
			return 0;
		sleep_until(next);
	}
}
