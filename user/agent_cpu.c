// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent_cpu.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/lru.h"
#include "core/utf8.h"
#include "export/pyroscope.h"

/* The labels of a CPU seconds series, as the pushed profiles name them. */
static const char *const series_labels[] = { "service_name", "namespace", "pod", "container" };
#define NLABELS (sizeof(series_labels) / sizeof(series_labels[0]))

struct cpu_series {
	struct lru_node lru;
	char *key;                      /* the values as sampled, each NUL-terminated */
	size_t key_len;
	char *shown[NLABELS];           /* the values as valid UTF-8 */
	uint64_t samples;
};

/* A function's self samples in the current interval. */
struct window_entry {
	const char *name;               /* into the struct's tail */
	uint64_t samples;
};

/* A function with a series: one of its service's top in some interval. */
struct function_series {
	char *name;                     /* the symbol as sampled */
	char *shown;                    /* as valid UTF-8 */
	uint64_t samples;
	uint64_t top_seq;               /* the last interval it was in the top */
};

struct cpu_service {
	struct lru_node lru;
	char *name, *shown;
	struct hashmap window;          /* of struct window_entry */
	struct function_series *fn;     /* [functions] */
	unsigned nfn;
	uint64_t other;                 /* samples outside the top */
};

struct cpu_metrics {
	pthread_mutex_t lock;
	size_t max_series;
	unsigned functions;
	double seconds_per_sample;
	struct hashmap series, services;
	struct lru series_lru, services_lru;
	size_t nservices, function_series, window_entries;
	uint64_t seq;                   /* intervals ended */
	uint64_t evicted_series, evicted_functions;
	char *key;                      /* scratch for a lookup */
	size_t key_cap;
};

struct cpu_metrics *cpu_metrics__new(size_t max_series, unsigned functions, uint64_t period_ns)
{
	struct cpu_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->max_series = max_series ? max_series : 1;
	m->functions = functions;
	m->seconds_per_sample = (double)period_ns / 1e9;
	return m;
}

struct series_key {
	const char *bytes;
	size_t len;
};

static bool series_eq(const void *ctx, const void *val, const void *key)
{
	const struct cpu_series *s = val;
	const struct series_key *k = key;

	return s->key_len == k->len && !memcmp(s->key, k->bytes, k->len);
}

static bool service_eq(const void *ctx, const void *val, const void *key)
{
	return !strcmp(((const struct cpu_service *)val)->name, key);
}

static bool window_eq(const void *ctx, const void *val, const void *key)
{
	return !strcmp(((const struct window_entry *)val)->name, key);
}

static void free_series(struct cpu_series *s)
{
	for (size_t i = 0; i < NLABELS; i++)
		free(s->shown[i]);
	free(s->key);
	free(s);
}

static void free_window_entry(uint64_t hash, void *val, void *ctx)
{
	free(val);
}

static void clear_window(struct cpu_metrics *m, struct cpu_service *v)
{
	m->window_entries -= v->window.len;
	hashmap__each(&v->window, free_window_entry, NULL);
	hashmap__clear(&v->window);
}

static void free_service(struct cpu_metrics *m, struct cpu_service *v)
{
	clear_window(m, v);
	for (unsigned i = 0; i < v->nfn; i++) {
		free(v->fn[i].name);
		free(v->fn[i].shown);
	}
	m->function_series -= v->nfn;
	free(v->fn);
	free(v->name);
	free(v->shown);
	free(v);
}

/* The series of the values in m->key[0..len), created (the least recently
 * sampled one dropped past max_series); NULL when out of memory. */
static struct cpu_series *get_series(struct cpu_metrics *m, size_t len)
{
	struct series_key k = { m->key, len };
	uint64_t hash = hash__bytes(m->key, len);
	struct cpu_series *s = hashmap__get(&m->series, hash, series_eq, NULL, &k), *old;
	const char *v = m->key;
	bool ok = true;

	if (s) {
		lru__touch(&m->series_lru, &s->lru);
		return s;
	}
	if (m->series.len >= m->max_series) {
		old = LRU_ENTRY(m->series_lru.tail, struct cpu_series, lru);
		lru__unlink(&m->series_lru, &old->lru);
		hashmap__del(&m->series, hash__bytes(old->key, old->key_len), series_eq, NULL,
			     &(struct series_key){ old->key, old->key_len });
		free_series(old);
		m->evicted_series++;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->key = malloc(len);
	s->key_len = len;
	if (s->key)
		memcpy(s->key, m->key, len);
	for (size_t i = 0; i < NLABELS; i++, v += strlen(v) + 1)
		ok = ok && (s->shown[i] = utf8__sanitized(v));
	if (!s->key || !ok || hashmap__add(&m->series, hash, s)) {
		free_series(s);
		return NULL;
	}
	lru__push(&m->series_lru, &s->lru);
	return s;
}

static struct cpu_service *get_service(struct cpu_metrics *m, const char *name)
{
	uint64_t hash = hash__str(name);
	struct cpu_service *v = hashmap__get(&m->services, hash, service_eq, NULL, name), *old;

	if (v) {
		lru__touch(&m->services_lru, &v->lru);
		return v;
	}
	if (m->nservices >= m->max_series) {
		old = LRU_ENTRY(m->services_lru.tail, struct cpu_service, lru);
		lru__unlink(&m->services_lru, &old->lru);
		hashmap__del(&m->services, hash__str(old->name), service_eq, NULL, old->name);
		m->evicted_functions += old->nfn;
		free_service(m, old);
		m->nservices--;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->name = strdup(name);
	v->shown = utf8__sanitized(name);
	v->fn = calloc(m->functions, sizeof(*v->fn));
	if (!v->name || !v->shown || !v->fn || hashmap__add(&m->services, hash, v)) {
		free_service(m, v);
		return NULL;
	}
	lru__push(&m->services_lru, &v->lru);
	m->nservices++;
	return v;
}

/* count self samples of function name in service v's current interval. */
static void add_self(struct cpu_metrics *m, struct cpu_service *v, const char *name,
		     uint64_t count)
{
	uint64_t hash = hash__str(name);
	struct window_entry *e = hashmap__get(&v->window, hash, window_eq, NULL, name);
	size_t len;

	if (!e && m->window_entries < CPU_FUNCTION_WINDOW_MAX) {
		len = strlen(name) + 1;
		e = malloc(sizeof(*e) + len);
		if (e) {
			memcpy(e + 1, name, len);
			e->name = (const char *)(e + 1);
			e->samples = 0;
			if (hashmap__add(&v->window, hash, e)) {
				free(e);
				e = NULL;
			} else {
				m->window_entries++;
			}
		}
	}
	if (e)
		e->samples += count;
	else
		v->other += count;
}

void cpu_metrics__add(struct cpu_metrics *m, const struct labels *labels,
		      const struct frame *frames, size_t n, uint64_t count)
{
	const char *v[NLABELS];
	struct cpu_series *s;
	struct cpu_service *svc;
	size_t len = 0, l[NLABELS];

	for (size_t i = 0; i < NLABELS; i++) {
		v[i] = labels__get(labels, series_labels[i]);
		if (!v[i] || !*v[i])
			v[i] = i == 0 ? PYROSCOPE_UNKNOWN_SERVICE : "";
		len += (l[i] = strlen(v[i]) + 1);
	}
	pthread_mutex_lock(&m->lock);
	if (len > m->key_cap) {
		char *k = realloc(m->key, len);

		if (!k)
			goto out;
		m->key = k;
		m->key_cap = len;
	}
	for (size_t i = 0, pos = 0; i < NLABELS; pos += l[i], i++)
		memcpy(m->key + pos, v[i], l[i]);
	s = get_series(m, len);
	if (s)
		s->samples += count;
	if (m->functions && n && (svc = get_service(m, v[0])))
		add_self(m, svc, frames[n - 1].name, count);
out:
	pthread_mutex_unlock(&m->lock);
}

struct window_list {
	struct window_entry **v;
	size_t n;
};

static void list_window(uint64_t hash, void *val, void *ctx)
{
	struct window_list *l = ctx;

	l->v[l->n++] = val;
}

static void to_other(uint64_t hash, void *val, void *ctx)
{
	((struct cpu_service *)ctx)->other += ((struct window_entry *)val)->samples;
}

static int heavier_first(const void *a, const void *b)
{
	const struct window_entry *x = *(struct window_entry *const *)a;
	const struct window_entry *y = *(struct window_entry *const *)b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

static struct function_series *find_function(struct cpu_service *v, const char *name)
{
	for (unsigned i = 0; i < v->nfn; i++)
		if (!strcmp(v->fn[i].name, name))
			return &v->fn[i];
	return NULL;
}

/* A series for e, one of v's top this interval that has none: a free slot,
 * or in place of one not in this interval's top (counted); NULL past the
 * bounds or out of memory. */
static struct function_series *place_function(struct cpu_metrics *m, struct cpu_service *v,
					      const struct window_entry *e)
{
	struct function_series *f = NULL;
	char *name, *shown;

	if (v->nfn < m->functions && m->function_series < CPU_FUNCTION_SERIES_MAX) {
		f = &v->fn[v->nfn];
	} else {
		for (unsigned i = 0; i < v->nfn && !f; i++)
			if (v->fn[i].top_seq != m->seq + 1)
				f = &v->fn[i];
	}
	if (!f)
		return NULL;
	name = strdup(e->name);
	shown = utf8__sanitized(e->name);
	if (!name || !shown) {
		free(name);
		free(shown);
		return NULL;
	}
	if (f == &v->fn[v->nfn]) {
		v->nfn++;
		m->function_series++;
	} else {
		free(f->name);
		free(f->shown);
		m->evicted_functions++;
	}
	*f = (struct function_series){ .name = name, .shown = shown };
	return f;
}

/* Credits the interval's top functions of v (l, heaviest first) to their
 * series, the rest to its remainder. Those that have a series are marked
 * first, so a new one takes the place of one that is not in the top. */
static void credit(struct cpu_metrics *m, struct cpu_service *v, struct window_entry **l,
		   size_t n)
{
	size_t top = n < m->functions ? n : m->functions;
	struct function_series *f;

	for (size_t i = 0; i < top; i++)
		if ((f = find_function(v, l[i]->name)))
			f->top_seq = m->seq + 1;
	for (size_t i = 0; i < n; i++) {
		f = i < top ? find_function(v, l[i]->name) : NULL;
		if (!f && i < top && (f = place_function(m, v, l[i])))
			f->top_seq = m->seq + 1;
		if (f)
			f->samples += l[i]->samples;
		else
			v->other += l[i]->samples;
	}
}

void cpu_metrics__interval(struct cpu_metrics *m)
{
	struct window_list l = { NULL, 0 };

	pthread_mutex_lock(&m->lock);
	if (!m->functions || !m->window_entries)
		goto out;
	l.v = malloc(m->window_entries * sizeof(*l.v));
	for (struct lru_node *n = m->services_lru.head; n; n = n->next) {
		struct cpu_service *v = LRU_ENTRY(n, struct cpu_service, lru);

		l.n = 0;
		/* out of memory: the interval's time goes to the remainder */
		hashmap__each(&v->window, l.v ? list_window : to_other, l.v ? (void *)&l : v);
		qsort(l.v, l.n, sizeof(*l.v), heavier_first);
		credit(m, v, l.v, l.n);
		clear_window(m, v);
	}
	free(l.v);
out:
	m->seq++;
	pthread_mutex_unlock(&m->lock);
}

static int write_family(struct metrics_buf *b, const char *name, const char *help)
{
	return metrics_buf__family(b, name, METRICS_COUNTER, help);
}

int cpu_metrics__write(struct cpu_metrics *m, struct metrics_buf *b)
{
	struct metrics_label lb[NLABELS];
	double sps = m->seconds_per_sample;
	int err;

	pthread_mutex_lock(&m->lock);
	err = write_family(b, "kiln_cpu_seconds_total",
			   "CPU time sampled, by the pushed profiles' service_name, namespace, pod and container");
	for (struct lru_node *n = m->series_lru.head; !err && n; n = n->next) {
		struct cpu_series *s = LRU_ENTRY(n, struct cpu_series, lru);

		for (size_t i = 0; i < NLABELS; i++)
			lb[i] = (struct metrics_label){ series_labels[i], s->shown[i] };
		err = metrics_buf__double(b, lb, NLABELS, (double)s->samples * sps);
	}
	if (!err && m->functions)
		err = write_family(b, "kiln_cpu_function_seconds_total",
				   "Self CPU time of a function that was among its service's top (--cpu-metrics-functions) in an interval");
	for (struct lru_node *n = m->services_lru.head; !err && n; n = n->next) {
		struct cpu_service *v = LRU_ENTRY(n, struct cpu_service, lru);

		for (unsigned i = 0; !err && i < v->nfn; i++) {
			lb[0] = (struct metrics_label){ "service_name", v->shown };
			lb[1] = (struct metrics_label){ "function", v->fn[i].shown };
			err = metrics_buf__double(b, lb, 2, (double)v->fn[i].samples * sps);
		}
	}
	if (!err && m->functions)
		err = write_family(b, "kiln_cpu_function_other_seconds_total",
				   "Self CPU time of a service's functions outside its top, or past the bound of function series");
	for (struct lru_node *n = m->services_lru.head; !err && m->functions && n; n = n->next) {
		struct cpu_service *v = LRU_ENTRY(n, struct cpu_service, lru);

		lb[0] = (struct metrics_label){ "service_name", v->shown };
		err = metrics_buf__double(b, lb, 1, (double)v->other * sps);
	}
	if (!err)
		err = write_family(b, "kiln_cpu_series_evicted_total",
				   "CPU metric series dropped for room (--cpu-metrics-series, --cpu-metrics-functions)");
	if (!err)
		err = metrics_buf__u64(b, &(struct metrics_label){ "kind", "series" }, 1,
				       m->evicted_series);
	if (!err)
		err = metrics_buf__u64(b, &(struct metrics_label){ "kind", "function" }, 1,
				       m->evicted_functions);
	pthread_mutex_unlock(&m->lock);
	return err;
}

void cpu_metrics__free(struct cpu_metrics *m)
{
	struct lru_node *n, *next;

	if (!m)
		return;
	for (n = m->series_lru.head; n; n = next) {
		next = n->next;
		free_series(LRU_ENTRY(n, struct cpu_series, lru));
	}
	for (n = m->services_lru.head; n; n = next) {
		next = n->next;
		free_service(m, LRU_ENTRY(n, struct cpu_service, lru));
	}
	hashmap__clear(&m->series);
	hashmap__clear(&m->services);
	free(m->key);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
