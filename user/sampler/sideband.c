// SPDX-License-Identifier: BSD-2-Clause
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "sampler/sideband.h"

/* Records sorted by time in one read; beyond, they go on in ring order. */
#define PENDING_MAX 8192
#define NAMES_MAX (PENDING_MAX * 64)

/* Record bodies (linux/perf_event.h describes them in comments only),
 * each followed by the sample_id trailer: with sample_type TIME alone,
 * the time in its last 8 bytes. */
struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

struct task_body {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct comm_body {
	uint32_t pid, tid;
	char comm[];
};

struct pending {
	struct sideband_record r;
	uint32_t name_off;
	uint32_t seq;
};

struct sideband {
	struct perf_buffer *pb;
	int map_fd;
	uint64_t bytes;
	sideband_fn fn;
	void *ctx;
	struct pending *pending;
	size_t npending;
	char *names;
	size_t names_len;
	struct sideband_stats stats;
};

static int pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->r.time_ns != y->r.time_ns)
		return x->r.time_ns < y->r.time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hands the pending records on, sorted when sorted is set. */
static void flush(struct sideband *sb, bool sorted)
{
	if (sorted)
		qsort(sb->pending, sb->npending, sizeof(*sb->pending), pending_cmp);
	for (size_t i = 0; i < sb->npending; i++) {
		struct pending *p = &sb->pending[i];

		p->r.name = p->r.type == SIDEBAND_MMAP ? sb->names + p->name_off : NULL;
		sb->fn(&p->r, sb->ctx);
	}
	sb->stats.records += sb->npending;
	sb->npending = 0;
	sb->names_len = 0;
}

/* The record's time: the trailer's last 8 bytes (size checked by the
 * caller to hold a body and the trailer). */
static uint64_t trailer_time(const struct perf_event_header *h)
{
	uint64_t t;

	memcpy(&t, (const char *)h + h->size - sizeof(t), sizeof(t));
	return t;
}

/* Queues r, with name (MMAP, name_len bytes, not NUL-terminated in the
 * ring necessarily) copied. */
static void queue(struct sideband *sb, const struct sideband_record *r, const char *name,
		  size_t name_len)
{
	struct pending *p;

	if (sb->npending == PENDING_MAX || sb->names_len + name_len + 1 > NAMES_MAX) {
		/* A burst larger than one sort: what came so far goes on now. */
		sb->stats.unsorted += sb->npending;
		flush(sb, false);
	}
	p = &sb->pending[sb->npending];
	p->r = *r;
	p->seq = (uint32_t)sb->npending++;
	p->name_off = (uint32_t)sb->names_len;
	memcpy(sb->names + sb->names_len, name, name_len);
	sb->names[sb->names_len + name_len] = '\0';
	sb->names_len += name_len + 1;
}

int sideband__decode(const void *rec, size_t size, struct sideband_record *r, size_t *name_len,
		     uint64_t *lost)
{
	const struct perf_event_header *h = rec;
	const char *body = (const char *)rec + sizeof(*h);

	*lost = 0;
	if (size < sizeof(*h) || h->size != size)
		return -EINVAL;
	switch (h->type) {
	case PERF_RECORD_MMAP2: {
		const struct mmap2_body *m = (const void *)body;
		size_t fixed = sizeof(*h) + sizeof(*m) + sizeof(uint64_t);

		if (size < fixed)
			return -EINVAL;
		*r = (struct sideband_record){ .type = SIDEBAND_MMAP,
					       .pid = m->pid,
					       .time_ns = trailer_time(h),
					       .start = m->addr,
					       .end = m->addr + m->len,
					       .pgoff = m->pgoff,
					       .dev = makedev(m->maj, m->min),
					       .ino = m->ino,
					       .name = m->filename };
		if (r->end < r->start)
			return -EINVAL;
		*name_len = strnlen(m->filename, size - fixed);
		return 1;
	}
	case PERF_RECORD_COMM: {
		const struct comm_body *c = (const void *)body;

		if (size < sizeof(*h) + sizeof(*c) + sizeof(uint64_t))
			return -EINVAL;
		if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC))
			return 0; /* a rename (prctl), not an exec */
		*r = (struct sideband_record){ .type = SIDEBAND_EXEC,
					       .pid = c->pid,
					       .time_ns = trailer_time(h),
					       .name = "" };
		*name_len = 0;
		return 1;
	}
	case PERF_RECORD_EXIT: {
		const struct task_body *t = (const void *)body;

		if (size < sizeof(*h) + sizeof(*t) + sizeof(uint64_t))
			return -EINVAL;
		if (t->pid != t->tid)
			return 0; /* a thread, not the process */
		*r = (struct sideband_record){ .type = SIDEBAND_EXIT,
					       .pid = t->pid,
					       .time_ns = t->time,
					       .name = "" };
		*name_len = 0;
		return 1;
	}
	case PERF_RECORD_LOST: {
		uint64_t v[2];

		if (size < sizeof(*h) + sizeof(v))
			return -EINVAL;
		memcpy(v, body, sizeof(v));
		*lost = v[1];
		*r = (struct sideband_record){ .type = SIDEBAND_LOST,
					       .time_ns = size >= sizeof(*h) + sizeof(v) + sizeof(uint64_t) ?
								  trailer_time(h) : 0,
					       .name = "" };
		*name_len = 0;
		return 1;
	}
	default:
		return 0; /* FORK: a fork child maps its parent's image */
	}
}

static enum bpf_perf_event_ret on_record(void *ctx, int cpu, struct perf_event_header *h)
{
	struct sideband *sb = ctx;
	struct sideband_record r;
	size_t name_len = 0;
	uint64_t lost;
	int n = sideband__decode(h, h->size, &r, &name_len, &lost);

	(void)cpu;
	sb->stats.lost += lost;
	if (n < 0)
		sb->stats.malformed++;
	else if (n > 0)
		queue(sb, &r, r.name, name_len);
	return LIBBPF_PERF_EVENT_CONT;
}

struct sideband *sideband__open(const unsigned *cpus, unsigned ncpus, unsigned pages,
				sideband_fn fn, void *ctx)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.size = sizeof(attr),
		.sample_type = PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.watermark = 1,
		.wakeup_watermark = (uint32_t)(pages * (uint64_t)sysconf(_SC_PAGESIZE) / 2),
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
	};
	LIBBPF_OPTS(perf_buffer_raw_opts, opts);
	struct sideband *sb = calloc(1, sizeof(*sb));
	int *cpu_list = calloc(ncpus ? ncpus : 1, sizeof(int));
	unsigned max_cpu = 0;
	int err = -ENOMEM;

	if (!sb || !cpu_list)
		goto fail;
	sb->map_fd = -1;
	sb->fn = fn;
	sb->ctx = ctx;
	sb->pending = calloc(PENDING_MAX, sizeof(*sb->pending));
	sb->names = malloc(NAMES_MAX);
	if (!sb->pending || !sb->names)
		goto fail;
	for (unsigned i = 0; i < ncpus; i++) {
		cpu_list[i] = (int)cpus[i];
		if (cpus[i] > max_cpu)
			max_cpu = cpus[i];
	}
	/* perf_buffer keeps each CPU's event in a map, indexed by CPU. */
	sb->map_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "kiln_sideband", sizeof(int),
				    sizeof(int), max_cpu + 1, NULL);
	if (sb->map_fd < 0) {
		err = -errno;
		goto fail;
	}
	opts.cpu_cnt = (int)ncpus;
	opts.cpus = cpu_list;
	opts.map_keys = cpu_list;
	sb->pb = perf_buffer__new_raw(sb->map_fd, pages, &attr, on_record, sb, &opts);
	if (!sb->pb) {
		err = -errno;
		goto fail;
	}
	sb->bytes = (uint64_t)ncpus * (pages + 1) * (uint64_t)sysconf(_SC_PAGESIZE);
	free(cpu_list);
	return sb;
fail:
	free(cpu_list);
	sideband__free(sb);
	errno = -err;
	return NULL;
}

int sideband__epoll_fd(const struct sideband *sb)
{
	return perf_buffer__epoll_fd(sb->pb);
}

int sideband__consume(struct sideband *sb)
{
	uint64_t before = sb->stats.records;
	int err = perf_buffer__consume(sb->pb);

	flush(sb, true);
	return err < 0 ? err : (int)(sb->stats.records - before);
}

void sideband__stats(const struct sideband *sb, struct sideband_stats *out)
{
	*out = sb->stats;
}

uint64_t sideband__bytes(const struct sideband *sb)
{
	return sb->bytes;
}

void sideband__free(struct sideband *sb)
{
	if (!sb)
		return;
	perf_buffer__free(sb->pb);
	if (sb->map_fd >= 0)
		close(sb->map_fd);
	free(sb->pending);
	free(sb->names);
	free(sb);
}
