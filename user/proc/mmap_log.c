// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/hashmap.h"
#include "core/lru.h"
#include "proc/mmap_log.h"

#define EXPIRE_EVERY_NS 1000000000ull

/* One process's log; it counts as n + 1 against the bound (the log
 * itself is the one). */
struct plog {
	uint32_t pid;
	bool since_exec;
	bool done; /* /proc was read: mappings no longer kept */
	bool incomplete; /* a mapping since the exec was not kept */
	uint64_t exec_ns; /* the exec's time, when since_exec */
	uint64_t exe_dev, exe_ino; /* the first file mapped since, 0: none yet */
	uint64_t lost_epoch; /* the log's at the exec */
	uint64_t gen; /* changes with the mappings */
	uint64_t exit_ns; /* 0 while it lives */
	size_t n, cap;
	struct logged_mapping *maps;
	struct lru_node node; /* in the log's order, newest at the head */
	struct lru_node exit_node; /* once exited: in exit order, newest at the head */
};

struct mmap_log {
	struct hashmap procs; /* pid -> plog */
	struct lru order; /* of the processes' logs: the tail is the oldest */
	/* of the exited ones, in the order their exits were recorded: expiry
	 * looks at the tail only, not at every log */
	struct lru exited;
	size_t max, weight, mappings, bytes;
	uint64_t lost_epoch; /* LOST records seen: every log older is incomplete */
	uint64_t last_expire;
	struct mmap_log_stats stats;
};

struct mmap_log *mmap_log__new(size_t max_mappings)
{
	struct mmap_log *l = calloc(1, sizeof(*l));

	if (l)
		l->max = max_mappings;
	return l;
}

static struct plog *oldest(const struct mmap_log *l)
{
	return LRU_ENTRY(l->order.tail, struct plog, node);
}

static struct plog *newer(const struct plog *p)
{
	return LRU_ENTRY(p->node.prev, struct plog, node);
}

static void drop_mapping(struct mmap_log *l, struct logged_mapping *m)
{
	l->bytes -= strlen(m->name) + 1;
	free(m->name);
	l->mappings--;
	l->weight--;
}

static void clear_plog(struct mmap_log *l, struct plog *p)
{
	for (size_t i = 0; i < p->n; i++)
		drop_mapping(l, &p->maps[i]);
	l->bytes -= p->cap * sizeof(*p->maps);
	free(p->maps);
	p->maps = NULL;
	p->n = p->cap = 0;
}

/* p lives again (its pid's next program) or goes: out of the exit order */
static void unexit(struct mmap_log *l, struct plog *p)
{
	if (p->exit_ns)
		lru__unlink(&l->exited, &p->exit_node);
	p->exit_ns = 0;
}

static void free_plog(struct mmap_log *l, struct plog *p)
{
	clear_plog(l, p);
	unexit(l, p);
	lru__unlink(&l->order, &p->node);
	hashmap__del_u64(&l->procs, p->pid);
	l->weight--;
	l->bytes -= sizeof(*p);
	free(p);
}

static struct plog *get_plog(struct mmap_log *l, uint32_t pid)
{
	struct plog *p = hashmap__get_u64(&l->procs, pid);

	if (p || !pid)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (hashmap__put_u64(&l->procs, pid, p)) {
		free(p);
		return NULL;
	}
	lru__push(&l->order, &p->node);
	l->weight++;
	l->bytes += sizeof(*p);
	return p;
}

/* Removes what [start, end) overlaps from p's mappings: entries inside
 * go, entries reaching over one side are cut, one reaching over both is
 * split. -ENOMEM when a split finds no room. */
static int cut(struct mmap_log *l, struct plog *p, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < p->n;) {
		struct logged_mapping *m = &p->maps[i];

		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		if (m->start < start && m->end > end) {
			struct logged_mapping tail = *m;

			if (p->n == p->cap)
				return -ENOMEM; /* never: the caller made room */
			tail.name = strdup(m->name);
			if (!tail.name)
				return -ENOMEM;
			tail.pgoff += end - m->start;
			tail.start = end;
			m->end = start;
			memmove(m + 2, m + 1, (p->n - i - 1) * sizeof(*m));
			m[1] = tail;
			p->n++;
			l->mappings++;
			l->weight++;
			l->bytes += strlen(tail.name) + 1;
			return 0;
		}
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->pgoff += end - m->start;
			m->start = end;
			i++;
		} else {
			drop_mapping(l, m);
			memmove(m, m + 1, (p->n - i - 1) * sizeof(*m));
			p->n--;
		}
	}
	return 0;
}

/* Drops the oldest processes' logs (never keep's) until the bound holds. */
static void shrink(struct mmap_log *l, const struct plog *keep)
{
	struct plog *p = oldest(l);

	while (l->weight > l->max && p) {
		struct plog *next = newer(p);

		if (p != keep) {
			free_plog(l, p);
			l->stats.evicted++;
		}
		p = next;
	}
}

static void add_mapping(struct mmap_log *l, const struct sideband_record *r)
{
	struct plog *p;
	struct logged_mapping m = { r->start, r->end, r->pgoff, r->dev, r->ino, NULL };
	size_t at;
	bool anon = r->name && strcmp(r->name, "//anon") == 0;

	/* files, the vDSO, and anonymous code (a JIT's, which its perf map
	 * names, read after the process is gone too): "[anon]", as
	 * /proc/PID/maps has it */
	if (r->end <= r->start || !r->name ||
	    !((r->name[0] == '/' && r->name[1] != '/' && r->ino) || anon ||
	      strcmp(r->name, "[vdso]") == 0))
		return;
	p = get_plog(l, r->pid);
	if (!p || p->done)
		return;
	if (p->n + 2 > MMAP_LOG_PER_PROCESS) { /* room for a split and the new one */
		l->stats.dropped++;
		p->incomplete = true;
		return;
	}
	if (p->n + 2 > p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct logged_mapping *v = realloc(p->maps, cap * sizeof(*v));

		if (!v) {
			p->incomplete = true;
			return;
		}
		l->bytes += (cap - p->cap) * sizeof(*v);
		p->maps = v;
		p->cap = cap;
	}
	m.name = strdup(anon ? "[anon]" : r->name);
	if (!m.name || cut(l, p, m.start, m.end)) {
		free(m.name);
		p->incomplete = true;
		return;
	}
	p->gen++;
	if (p->since_exec && !p->exe_ino && m.ino) {
		p->exe_dev = m.dev;
		p->exe_ino = m.ino;
	}
	for (at = p->n; at > 0 && p->maps[at - 1].start > m.start; at--)
		;
	memmove(&p->maps[at + 1], &p->maps[at], (p->n - at) * sizeof(m));
	p->maps[at] = m;
	p->n++;
	l->mappings++;
	l->weight++;
	l->bytes += strlen(m.name) + 1;
	l->stats.recorded++;
	shrink(l, p);
}

void mmap_log__record(struct mmap_log *l, const struct sideband_record *r)
{
	struct plog *p;

	switch (r->type) {
	case SIDEBAND_MMAP:
		add_mapping(l, r);
		break;
	case SIDEBAND_EXEC:
		p = get_plog(l, r->pid);
		if (!p)
			break;
		clear_plog(l, p);
		p->since_exec = true;
		p->done = false;
		p->incomplete = false;
		p->exec_ns = r->time_ns;
		p->exe_dev = p->exe_ino = 0;
		p->lost_epoch = l->lost_epoch;
		p->gen++;
		unexit(l, p);
		/* a new program: the newest log, last to be evicted */
		lru__touch(&l->order, &p->node);
		shrink(l, p);
		break;
	case SIDEBAND_EXIT:
		p = hashmap__get_u64(&l->procs, r->pid);
		if (!p)
			break;
		unexit(l, p);
		p->exit_ns = r->time_ns ? r->time_ns : 1;
		lru__push(&l->exited, &p->exit_node);
		break;
	case SIDEBAND_LOST:
		/* whose records they were is unknown: nobody's log is whole */
		l->lost_epoch++;
		break;
	}
}

size_t mmap_log__complete(const struct mmap_log *l, uint32_t pid, uint64_t at_ns,
			  const struct logged_mapping **maps, struct mmap_log_version *v)
{
	const struct plog *p = hashmap__get_u64(&l->procs, pid);

	if (!p || !p->since_exec || p->done || p->incomplete || p->lost_epoch != l->lost_epoch ||
	    !p->n || p->exec_ns > at_ns)
		return 0;
	*maps = p->maps;
	v->exec_ns = p->exec_ns;
	v->gen = p->gen;
	v->exe_dev = p->exe_dev;
	v->exe_ino = p->exe_ino;
	v->exited = p->exit_ns != 0;
	return p->n;
}

size_t mmap_log__get(const struct mmap_log *l, uint32_t pid, const struct logged_mapping **maps,
		     int *since_exec)
{
	const struct plog *p = hashmap__get_u64(&l->procs, pid);

	if (!p || p->done || !p->n)
		return 0;
	*maps = p->maps;
	*since_exec = p->since_exec;
	return p->n;
}

uint64_t mmap_log__exec_ns(const struct mmap_log *l, uint32_t pid)
{
	const struct plog *p = hashmap__get_u64(&l->procs, pid);

	return p && p->since_exec ? p->exec_ns : 0;
}

void mmap_log__done(struct mmap_log *l, uint32_t pid)
{
	struct plog *p = hashmap__get_u64(&l->procs, pid);

	if (p) {
		clear_plog(l, p);
		p->done = true;
	}
}

void mmap_log__expire(struct mmap_log *l, uint64_t now_ns)
{
	struct plog *p;

	if (now_ns - l->last_expire < EXPIRE_EVERY_NS)
		return;
	l->last_expire = now_ns;
	/* (exits are recorded in about their order: one recorded late waits
	 * for those before it, a few ms) */
	while ((p = LRU_ENTRY(l->exited.tail, struct plog, exit_node)) && now_ns > p->exit_ns &&
	       now_ns - p->exit_ns > MMAP_LOG_GRACE_NS)
		free_plog(l, p);
}

void mmap_log__stats(const struct mmap_log *l, struct mmap_log_stats *out)
{
	*out = l->stats;
	out->processes = l->procs.len;
	out->mappings = l->mappings;
	out->bytes = l->bytes + hashmap__bytes(&l->procs);
}

void mmap_log__free(struct mmap_log *l)
{
	if (!l)
		return;
	while (oldest(l))
		free_plog(l, oldest(l));
	hashmap__clear(&l->procs);
	free(l);
}
