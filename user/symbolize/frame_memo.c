// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "symbolize/frame_memo.h"

/* A frame's id: the epoch it was kept in, then its index + 1. */
#define ID_INDEX_BITS 24
_Static_assert(FRAME_MEMO_FRAMES < 1u << ID_INDEX_BITS, "frame ids hold the index");

/* Every memo's epochs, so that no two frames of the process share an id. */
static uint64_t next_epoch(void)
{
	static uint64_t epochs;

	return __atomic_add_fetch(&epochs, 1, __ATOMIC_RELAXED);
}

/* Open addressing, linear probing, at most half full (a miss, the
 * common case of a full memo, ends at the first empty slot): from
 * MIN_SLOTS, doubled as runs come, up to MAX_SLOTS (512 KiB), so that a
 * drain of a few hundred frames keeps a few pages resident, not all. */
#define MIN_SLOTS 1024
#define MAX_SLOTS 16384
_Static_assert(FRAME_MEMO_RUNS * 2 <= MAX_SLOTS, "the slots hold every run at half full");
/* Paths and build ids recur run after run: one copy each (by content),
 * so that a stack's frames in one file share their path's pointer, which
 * profile__add compares to skip looking the mapping up again. */
#define SHARED 256

struct slot {
	uint64_t ip;
	const void *snap;
	uint32_t instance;
	uint32_t gen;           /* the memo's generation it belongs to; else empty */
	uint32_t first;         /* index of its first frame */
	uint16_t n;
	bool innermost, resolved, source;
};

struct shared_text {
	uint64_t hash;
	uint32_t gen;
	const char *s;
};

struct frame_memo {
	struct slot *slots;
	uint32_t nslots;        /* a power of two */
	uint32_t gen, runs;
	uint64_t epoch;         /* of the frames' ids, new at each forget */
	struct frame *frames;
	size_t nframes;
	char *text;
	size_t text_len;
	struct shared_text shared[SHARED];
	uint64_t full;
};

struct frame_memo *frame_memo__new(void)
{
	struct frame_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	/* (large: mapped, and resident only where used) */
	m->slots = calloc(MIN_SLOTS, sizeof(*m->slots));
	m->nslots = MIN_SLOTS;
	m->frames = malloc(FRAME_MEMO_FRAMES * sizeof(*m->frames));
	m->text = malloc(FRAME_MEMO_TEXT);
	if (!m->slots || !m->frames || !m->text) {
		frame_memo__free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->gen = 1;
	m->epoch = next_epoch();
	return m;
}

void frame_memo__free(struct frame_memo *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m->frames);
	free(m->text);
	free(m);
}

void frame_memo__forget(struct frame_memo *m)
{
	if (++m->gen == 0) {
		memset(m->slots, 0, m->nslots * sizeof(*m->slots));
		memset(m->shared, 0, sizeof(m->shared));
		m->gen = 1;
	}
	m->runs = 0;
	m->epoch = next_epoch();
}

void frame_memo__clear(struct frame_memo *m)
{
	frame_memo__forget(m);
	m->nframes = 0;
	m->text_len = 0;
}

/* (inlined: a call for each lookup cost 3 % of a drain's instructions) */
static inline __attribute__((always_inline)) uint32_t
slot_of(const struct frame_memo *m, uint64_t ip, bool innermost, const void *snap, uint32_t instance)
{
	return (uint32_t)hash__add(hash__mix(ip << 1 | innermost), (uintptr_t)snap ^ instance) &
	       (m->nslots - 1);
}

/* The first free slot from where s's key hashes to. */
static struct slot *free_slot(struct frame_memo *m, const struct slot *s)
{
	uint32_t i = slot_of(m, s->ip, s->innermost, s->snap, s->instance);

	while (m->slots[i].gen == m->gen)
		i = (i + 1) & (m->nslots - 1);
	return &m->slots[i];
}

/* Twice the slots, this generation's runs moved over; false without
 * memory (the memo is then full at half its slots). */
static bool grow(struct frame_memo *m)
{
	struct slot *old = m->slots;
	uint32_t n = m->nslots;

	m->slots = calloc(2 * (size_t)n, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return false;
	}
	m->nslots = 2 * n;
	for (uint32_t i = 0; i < n; i++)
		if (old[i].gen == m->gen)
			*free_slot(m, &old[i]) = old[i];
	free(old);
	return true;
}

static bool slot_holds(const struct slot *s, const struct frame_memo_key *k)
{
	return s->ip == k->ip && s->snap == k->snap && s->instance == k->instance &&
	       s->innermost == k->innermost;
}

bool frame_memo__find(struct frame_memo *m, const struct frame_memo_key *k,
		      struct frame_memo_run *run)
{
	for (uint32_t i = slot_of(m, k->ip, k->innermost, k->snap, k->instance);;
	     i = (i + 1) & (m->nslots - 1)) {
		const struct slot *s = &m->slots[i];

		if (s->gen != m->gen)
			break;
		if (slot_holds(s, k)) {
			*run = (struct frame_memo_run){ .frames = &m->frames[s->first], .n = s->n,
							.resolved = s->resolved, .source = s->source };
			return true;
		}
	}
	return false;
}

/* A copy of s in the text (NULL for NULL), or NULL without room. */
static const char *copy_text(struct frame_memo *m, const char *s, bool *ok)
{
	size_t n;
	char *dst;

	if (!s || !*ok)
		return NULL;
	n = strlen(s) + 1;
	if (n > FRAME_MEMO_TEXT - m->text_len) {
		*ok = false;
		return NULL;
	}
	dst = memcpy(m->text + m->text_len, s, n);
	m->text_len += n;
	return dst;
}

/* The one copy of s (a path or build id) this generation. */
static const char *shared_text(struct frame_memo *m, const char *s, bool *ok)
{
	uint64_t h;
	struct shared_text *e;

	if (!s || !*ok)
		return NULL;
	h = hash__chunks(s, strlen(s));
	e = &m->shared[h & (SHARED - 1)];
	if (e->gen == m->gen && e->hash == h && strcmp(e->s, s) == 0)
		return e->s;
	s = copy_text(m, s, ok);
	if (*ok)
		*e = (struct shared_text){ .hash = h, .gen = m->gen, .s = s };
	return s;
}

bool frame_memo__put(struct frame_memo *m, const struct frame_memo_key *k,
		     struct frame_memo_run *run)
{
	size_t text_was = m->text_len;
	struct frame *dst = &m->frames[m->nframes];
	bool ok = run->n && run->n <= UINT16_MAX;
	struct slot new;

	if (!ok)
		return false;
	if (m->runs >= FRAME_MEMO_RUNS || run->n > FRAME_MEMO_FRAMES - m->nframes ||
	    ((m->runs + 1) * 2 > m->nslots && !grow(m))) {
		m->full++;
		return false;
	}
	for (uint32_t j = 0; j < run->n && ok; j++) {
		const struct frame *f = &run->frames[j];

		dst[j] = *f;
		dst[j].name = copy_text(m, f->name, &ok);
		dst[j].file = shared_text(m, f->file, &ok);
		dst[j].map_file = shared_text(m, f->map_file, &ok);
		dst[j].map_build_id = shared_text(m, f->map_build_id, &ok);
		dst[j].id = m->epoch << ID_INDEX_BITS | (m->nframes + j + 1);
	}
	if (!ok) {
		/* (the shared copies made meanwhile were in the text given back) */
		m->text_len = text_was;
		memset(m->shared, 0, sizeof(m->shared));
		m->full++;
		return false;
	}
	new = (struct slot){ .ip = k->ip, .snap = k->snap, .instance = k->instance,
				     .gen = m->gen, .first = (uint32_t)m->nframes,
				     .n = (uint16_t)run->n, .innermost = k->innermost,
				     .resolved = run->resolved, .source = run->source };
	*free_slot(m, &new) = new;
	m->nframes += run->n;
	m->runs++;
	run->frames = dst;
	return true;
}

uint64_t frame_memo__full(const struct frame_memo *m)
{
	return m->full;
}
