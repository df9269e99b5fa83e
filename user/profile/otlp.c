// SPDX-License-Identifier: BSD-2-Clause
/* OTLP profiles encoder (OTLP 1.10, v1development).
 *
 * DESIGN: every dictionary table but the strings is a table of interned
 * sequences of 32-bit words (struct seqtab): a mapping, location, function,
 * attribute or stack is laid out as the words of its fields, and equal
 * words are one entry, so the dictionary holds no duplicates across the
 * request's profiles. Entry 0 of each table is the all-zero (or empty)
 * sequence: the zero value OTLP wants there, which index 0 means "none".
 * The samples of every profile are collected first; the protobuf-c structs
 * are then made from the tables in one pass (repeated index fields point
 * straight into the words), packed, and freed. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/utf8.h"
#include "otlp_profiles_service.pb-c.h"
#include "core/array.h"
#include "profile/otlp.h"
#include "profile/profile_priv.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	pb_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles pb_resource_profiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles pb_scope_profiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType pb_value_type;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping pb_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location pb_location;
typedef Opentelemetry__Proto__Profiles__V1development__Line pb_line;
typedef Opentelemetry__Proto__Profiles__V1development__Function pb_function;
typedef Opentelemetry__Proto__Profiles__V1development__Stack pb_stack;
typedef Opentelemetry__Proto__Profiles__V1development__Link pb_link;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_attribute;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;

#define BUILD_ID_ATTRIBUTE "process.executable.build_id.gnu"
#define FRAME_TYPE_ATTRIBUTE "profile.frame.type"

/* The words of each table's entries. */
enum { MAP_FILE, MAP_ATTR, MAP_START_LO, MAP_START_HI, MAP_LIMIT_LO, MAP_LIMIT_HI,
       MAP_OFFSET_LO, MAP_OFFSET_HI, MAP_WORDS };
enum { FUNC_NAME, FUNC_FILE, FUNC_WORDS };
enum { ATTR_KEY, ATTR_VALUE, ATTR_WORDS };
/* then (function, line) pairs, innermost first */
enum { LOC_MAPPING, LOC_ADDR_LO, LOC_ADDR_HI, LOC_ATTR, LOC_WORDS };

struct seqtab {
	uint32_t *words;
	size_t nwords, words_cap;
	size_t *start;          /* entry i: words[start[i] .. start[i + 1]) */
	size_t n, start_cap;    /* entries; start holds n + 1 */
	struct hashmap index;
};

struct seq_key {
	const uint32_t *w;
	size_t n;
};

static bool seq_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct seqtab *t = ctx;
	const struct seq_key *k = key;

	return t->start[idx + 1] - t->start[idx] == k->n &&
	       (!k->n || !memcmp(t->words + t->start[idx], k->w, k->n * sizeof(*k->w)));
}

/* Index of the sequence w[0..n), added when new. 0, -E2BIG or -ENOMEM. */
static int seqtab__intern(struct seqtab *t, const uint32_t *w, size_t n, int32_t *idx)
{
	struct seq_key k = { w, n };
	uint64_t h = hash__bytes(w ? (const void *)w : "", n * sizeof(*w));
	uint32_t found = hashmap__find_idx(&t->index, h, seq_eq, t, &k);

	if (found != HASHMAP_NO_INDEX) {
		*idx = (int32_t)found;
		return 0;
	}
	if (t->n >= INT32_MAX)
		return -E2BIG;
	if (array_reserve(t->words, t->words_cap, t->nwords + n) ||
	    array_reserve(t->start, t->start_cap, t->n + 2) ||
	    hashmap__add_idx(&t->index, h, (uint32_t)t->n))
		return -ENOMEM;
	if (n)
		memcpy(t->words + t->nwords, w, n * sizeof(*w));
	t->start[0] = 0;
	t->nwords += n;
	t->start[t->n + 1] = t->nwords;
	*idx = (int32_t)t->n++;
	return 0;
}

static uint32_t *seqtab__get(const struct seqtab *t, size_t i, size_t *n)
{
	*n = t->start[i + 1] - t->start[i];
	return t->words + t->start[i];
}

static void seqtab__release(struct seqtab *t)
{
	free(t->words);
	free(t->start);
	hashmap__clear(&t->index);
}

struct enc_sample {
	int32_t stack;
	size_t attr_first, nattrs;      /* in otlp_enc.sample_attrs */
	int64_t value;
};

struct otlp_enc {
	struct strtab strings;          /* the dictionary's */
	struct strtab resource_strings; /* the resources' keys and values */
	struct seqtab maps, locs, funcs, attrs, stacks;
	struct enc_sample *samples;     /* every profile's, back to back */
	size_t nsamples, samples_cap;
	size_t *first_sample;           /* profile i: [first_sample[i], first_sample[i + 1]) */
	int32_t *sample_attrs;
	size_t nsample_attrs, sample_attrs_cap;
	uint32_t *stack, *loc;          /* one stack, one location being laid out */
	size_t stack_cap, loc_cap;
	struct labels set;              /* a FRAME_LABELS node's, parsed */
};

static const struct {
	const char *label, *attribute;
} semconv[] = {
	{ "service_name", "service.name" },
	{ "namespace", "k8s.namespace.name" },
	{ "pod", "k8s.pod.name" },
	{ "container", "k8s.container.name" },
	{ "container_id", "container.id" },
	{ "pod_uid", "k8s.pod.uid" },
	{ "node", "host.name" },
};

const char *otlp__attribute_name(const char *label)
{
	for (size_t i = 0; i < sizeof(semconv) / sizeof(semconv[0]); i++)
		if (!strcmp(label, semconv[i].label))
			return semconv[i].attribute;
	return label;
}

static int intern_string(struct otlp_enc *e, const char *s, uint32_t *id)
{
	return strtab__intern(&e->strings, s, id);
}

static int intern_attribute(struct otlp_enc *e, const char *key, const char *value,
			    int32_t *idx)
{
	uint32_t w[ATTR_WORDS];

	return intern_string(e, key, &w[ATTR_KEY]) ?: intern_string(e, value, &w[ATTR_VALUE]) ?:
	       seqtab__intern(&e->attrs, w, ATTR_WORDS, idx);
}

/* Dictionary index of each of p's mappings: map_of[i] for mapping id i + 1. */
static int add_mappings(struct otlp_enc *e, const struct profile *p, int32_t *map_of)
{
	int err = 0;

	for (size_t i = 0; i < p->nmaps && !err; i++) {
		const struct mapping *m = &p->maps[i];
		uint32_t w[MAP_WORDS] = {
			[MAP_START_LO] = (uint32_t)m->start, [MAP_START_HI] = m->start >> 32,
			[MAP_LIMIT_LO] = (uint32_t)m->limit, [MAP_LIMIT_HI] = m->limit >> 32,
			[MAP_OFFSET_LO] = (uint32_t)m->offset, [MAP_OFFSET_HI] = m->offset >> 32,
		};
		int32_t attr = 0;

		err = intern_string(e, strtab__get(&p->strings, m->file), &w[MAP_FILE]);
		if (!err && m->build_id)
			err = intern_attribute(e, BUILD_ID_ATTRIBUTE,
					       strtab__get(&p->strings, m->build_id), &attr);
		w[MAP_ATTR] = (uint32_t)attr;
		if (!err)
			err = seqtab__intern(&e->maps, w, MAP_WORDS, &map_of[i]);
	}
	return err;
}

/* The location of the machine frame [head .. end] (profile__frame_end):
 * one line a node, innermost first. */
static int add_location(struct otlp_enc *e, const struct profile *p, const int32_t *map_of,
			uint32_t head, uint32_t end, int32_t *idx)
{
	const struct stack_node *nodes = p->tree.nodes;
	const struct location *l = &p->locs[nodes[head].key];
	const char *type = l->kind == FRAME_KERNEL ? "kernel" :
			   l->kind == FRAME_USER && l->mapping ? "native" : NULL;
	size_t n = LOC_WORDS;
	int32_t attr = 0;
	int err = 0;

	if (array_reserve(e->loc, e->loc_cap, LOC_WORDS))
		return -ENOMEM;
	if (type)
		err = intern_attribute(e, FRAME_TYPE_ATTRIBUTE, type, &attr);
	e->loc[LOC_MAPPING] = l->mapping ? (uint32_t)map_of[l->mapping - 1] : 0;
	e->loc[LOC_ADDR_LO] = (uint32_t)l->addr;
	e->loc[LOC_ADDR_HI] = l->addr >> 32;
	e->loc[LOC_ATTR] = (uint32_t)attr;
	for (uint32_t k = head; !err; k = nodes[k].parent) {
		const struct location *line = &p->locs[nodes[k].key];
		uint32_t f[FUNC_WORDS];
		int32_t func;

		err = intern_string(e, strtab__get(&p->strings, line->name), &f[FUNC_NAME]) ?:
		      intern_string(e, strtab__get(&p->strings, line->file), &f[FUNC_FILE]) ?:
		      seqtab__intern(&e->funcs, f, FUNC_WORDS, &func) ?:
		      array_reserve(e->loc, e->loc_cap, n + 2);
		if (err)
			break;
		e->loc[n++] = (uint32_t)func;
		e->loc[n++] = line->line;
		if (k == end)
			break;
	}
	return err ?: seqtab__intern(&e->locs, e->loc, n, idx);
}

/* Appends attribute (key, value) to the sample being built, unless the
 * sample has key already (keys are unique in one attribute list). */
static int add_sample_attribute(struct otlp_enc *e, size_t first, const char *key,
				const char *value)
{
	uint32_t key_id;
	int32_t idx;
	int err = intern_string(e, key, &key_id);

	for (size_t i = first; !err && i < e->nsample_attrs; i++) {
		size_t n;

		if (seqtab__get(&e->attrs, (size_t)e->sample_attrs[i], &n)[ATTR_KEY] == key_id)
			return 0;
	}
	return err ?: intern_attribute(e, key, value, &idx) ?:
	       array_reserve(e->sample_attrs, e->sample_attrs_cap, e->nsample_attrs + 1) ?:
	       (e->sample_attrs[e->nsample_attrs++] = idx, 0);
}

/* The sample's attributes: the process (its root frame's name), then the
 * labels of the FRAME_LABELS node on its path (labels_at; STACK_TREE_ROOT:
 * none), named as resources' are. */
static int add_sample_attributes(struct otlp_enc *e, const struct profile *p,
				 const char *process, uint32_t labels_at, size_t first)
{
	const char *name, *value;
	size_t pos = 0;
	int err = 0;

	if (process)
		err = add_sample_attribute(e, first, OTLP_PROCESS_ATTRIBUTE, process);
	if (err || labels_at == STACK_TREE_ROOT)
		return err;
	err = labels__from_text(&e->set, strtab__get(&p->strings,
						     p->locs[p->tree.nodes[labels_at].key].name));
	while (!err && labels__next(&e->set, &pos, &name, &value))
		if (*value)
			err = add_sample_attribute(e, first, otlp__attribute_name(name), value);
	return err;
}

/* One sample per tree node with samples of its own. */
static int add_samples(struct otlp_enc *e, const struct profile *p, uint64_t period)
{
	const struct stack_node *nodes = p->tree.nodes;
	int32_t *map_of = calloc(p->nmaps ? p->nmaps : 1, sizeof(*map_of));
	int32_t *loc_of = calloc(p->nlocs ? p->nlocs : 1, sizeof(*loc_of)); /* 0: not yet */
	int err = map_of && loc_of ? add_mappings(e, p, map_of) : -ENOMEM;

	for (size_t i = 0; i < p->tree.len && !err; i++) {
		uint32_t labels_at = STACK_TREE_ROOT;
		const char *process = NULL;
		struct enc_sample *s;
		size_t depth = 0;
		uint64_t cpu;

		if (!nodes[i].self)
			continue;
		for (uint32_t n = i, end; n != STACK_TREE_ROOT && !err; n = nodes[end].parent) {
			const struct location *l = &p->locs[nodes[n].key];

			if (profile__labels_node(p, n)) {
				labels_at = n;
				break;
			}
			end = profile__frame_end(p, n);
			if (l->kind == FRAME_ROOT)
				process = strtab__get(&p->strings, l->name);
			if (!loc_of[nodes[n].key])
				err = add_location(e, p, map_of, n, end, &loc_of[nodes[n].key]);
			if (!err && !(err = array_reserve(e->stack, e->stack_cap, depth + 1)))
				e->stack[depth++] = (uint32_t)loc_of[nodes[n].key];
		}
		if (err || (err = array_reserve(e->samples, e->samples_cap, e->nsamples + 1)))
			break;
		s = &e->samples[e->nsamples];
		s->attr_first = e->nsample_attrs;
		err = seqtab__intern(&e->stacks, e->stack, depth, &s->stack) ?:
		      add_sample_attributes(e, p, process, labels_at, s->attr_first);
		if (__builtin_mul_overflow(nodes[i].self, period, &cpu) || cpu > INT64_MAX)
			cpu = INT64_MAX;
		s->value = (int64_t)cpu;
		s->nattrs = e->nsample_attrs - s->attr_first;
		e->nsamples++;
	}
	free(map_of);
	free(loc_of);
	return err;
}

/* ---- the protobuf-c message ---- */

struct otlp_msg {
	pb_request req;
	pb_dictionary dict;
	char **strings, **res_strings;  /* the tables as sent: valid UTF-8 */
	char **fixed;                   /* copies made valid, to free */
	size_t nfixed, fixed_cap;
	pb_mapping *maps, **map_ptrs;
	pb_location *locs, **loc_ptrs;
	pb_line *lines, **line_ptrs;
	pb_function *funcs, **func_ptrs;
	pb_attribute *attrs, **attr_ptrs;
	pb_any_value *attr_values;
	pb_stack *stacks, **stack_ptrs;
	pb_link link, *link_ptr;
	pb_sample *samples, **sample_ptrs;
	pb_value_type cpu;
	pb_resource_profiles *rps, **rp_ptrs;
	pb_resource *resources;
	pb_key_value *kvs, **kv_ptrs;
	pb_any_value *kv_values;
	pb_scope_profiles *sps, **sp_ptrs;
	pb_scope scope;
	pb_profile *profiles, **profile_ptrs;
	uint8_t (*ids)[16];
};

static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* t's strings, those not valid UTF-8 replaced by a copy with '?' for their
 * bad bytes. */
static char **wire_strings(struct otlp_msg *m, const struct strtab *t)
{
	char **out = alloc_array(t->len, sizeof(*out));

	for (size_t i = 0; out && i < t->len; i++) {
		out[i] = (char *)strtab__get(t, i);
		if (utf8__valid(out[i]))
			continue;
		if (!(out[i] = utf8__sanitized(out[i])) ||
		    array_reserve(m->fixed, m->fixed_cap, m->nfixed + 1)) {
			free(out[i]);
			free(out);
			return NULL;
		}
		m->fixed[m->nfixed++] = out[i];
	}
	return out;
}

static void msg_release(struct otlp_msg *m)
{
	for (size_t i = 0; i < m->nfixed; i++)
		free(m->fixed[i]);
	free(m->fixed);
	free(m->strings);
	free(m->res_strings);
	free(m->maps);
	free(m->map_ptrs);
	free(m->locs);
	free(m->loc_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->funcs);
	free(m->func_ptrs);
	free(m->attrs);
	free(m->attr_ptrs);
	free(m->attr_values);
	free(m->stacks);
	free(m->stack_ptrs);
	free(m->samples);
	free(m->sample_ptrs);
	free(m->rps);
	free(m->rp_ptrs);
	free(m->resources);
	free(m->kvs);
	free(m->kv_ptrs);
	free(m->kv_values);
	free(m->sps);
	free(m->sp_ptrs);
	free(m->profiles);
	free(m->profile_ptrs);
	free(m->ids);
}

static uint64_t words_u64(const uint32_t *w, int lo)
{
	return (uint64_t)w[lo + 1] << 32 | w[lo];
}

static int build_dictionary(struct otlp_msg *m, const struct otlp_enc *e)
{
	size_t n, nlines = 0, line = 0;
	uint32_t *w;

	for (size_t i = 1; i < e->locs.n; i++) {
		seqtab__get(&e->locs, i, &n);
		nlines += (n - LOC_WORDS) / 2;
	}
	m->maps = alloc_array(e->maps.n, sizeof(*m->maps));
	m->map_ptrs = alloc_array(e->maps.n, sizeof(*m->map_ptrs));
	m->locs = alloc_array(e->locs.n, sizeof(*m->locs));
	m->loc_ptrs = alloc_array(e->locs.n, sizeof(*m->loc_ptrs));
	m->lines = alloc_array(nlines, sizeof(*m->lines));
	m->line_ptrs = alloc_array(nlines, sizeof(*m->line_ptrs));
	m->funcs = alloc_array(e->funcs.n, sizeof(*m->funcs));
	m->func_ptrs = alloc_array(e->funcs.n, sizeof(*m->func_ptrs));
	m->attrs = alloc_array(e->attrs.n, sizeof(*m->attrs));
	m->attr_ptrs = alloc_array(e->attrs.n, sizeof(*m->attr_ptrs));
	m->attr_values = alloc_array(e->attrs.n, sizeof(*m->attr_values));
	m->stacks = alloc_array(e->stacks.n, sizeof(*m->stacks));
	m->stack_ptrs = alloc_array(e->stacks.n, sizeof(*m->stack_ptrs));
	if (!m->maps || !m->map_ptrs || !m->locs || !m->loc_ptrs || !m->lines || !m->line_ptrs ||
	    !m->funcs || !m->func_ptrs || !m->attrs || !m->attr_ptrs || !m->attr_values ||
	    !m->stacks || !m->stack_ptrs)
		return -ENOMEM;
	/* Entry 0 of each table is the zero value: all-zero words, or none. */
	for (size_t i = 0; i < e->maps.n; i++) {
		pb_mapping *d = &m->maps[i];

		w = seqtab__get(&e->maps, i, &n);
		opentelemetry__proto__profiles__v1development__mapping__init(d);
		if (i) {
			d->memory_start = words_u64(w, MAP_START_LO);
			d->memory_limit = words_u64(w, MAP_LIMIT_LO);
			d->file_offset = words_u64(w, MAP_OFFSET_LO);
			d->filename_strindex = (int32_t)w[MAP_FILE];
			d->attribute_indices = (int32_t *)&w[MAP_ATTR];
			d->n_attribute_indices = w[MAP_ATTR] != 0;
		}
		m->map_ptrs[i] = d;
	}
	for (size_t i = 0; i < e->locs.n; i++) {
		pb_location *d = &m->locs[i];

		w = seqtab__get(&e->locs, i, &n);
		opentelemetry__proto__profiles__v1development__location__init(d);
		m->loc_ptrs[i] = d;
		if (!i)
			continue;
		d->mapping_index = (int32_t)w[LOC_MAPPING];
		d->address = words_u64(w, LOC_ADDR_LO);
		d->attribute_indices = (int32_t *)&w[LOC_ATTR];
		d->n_attribute_indices = w[LOC_ATTR] != 0;
		d->lines = &m->line_ptrs[line];
		for (size_t k = LOC_WORDS; k + 1 < n; k += 2) {
			pb_line *l = &m->lines[line];

			opentelemetry__proto__profiles__v1development__line__init(l);
			l->function_index = (int32_t)w[k];
			l->line = w[k + 1];
			m->line_ptrs[line++] = l;
			d->n_lines++;
		}
	}
	for (size_t i = 0; i < e->funcs.n; i++) {
		pb_function *d = &m->funcs[i];

		w = seqtab__get(&e->funcs, i, &n);
		opentelemetry__proto__profiles__v1development__function__init(d);
		if (i) {
			d->name_strindex = d->system_name_strindex = (int32_t)w[FUNC_NAME];
			d->filename_strindex = (int32_t)w[FUNC_FILE];
		}
		m->func_ptrs[i] = d;
	}
	for (size_t i = 0; i < e->attrs.n; i++) {
		pb_attribute *d = &m->attrs[i];

		w = seqtab__get(&e->attrs, i, &n);
		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(d);
		if (i) {
			opentelemetry__proto__common__v1__any_value__init(&m->attr_values[i]);
			m->attr_values[i].value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			m->attr_values[i].string_value = m->strings[w[ATTR_VALUE]];
			d->key_strindex = (int32_t)w[ATTR_KEY];
			d->value = &m->attr_values[i];
		}
		m->attr_ptrs[i] = d;
	}
	for (size_t i = 0; i < e->stacks.n; i++) {
		pb_stack *d = &m->stacks[i];

		w = seqtab__get(&e->stacks, i, &n);
		opentelemetry__proto__profiles__v1development__stack__init(d);
		d->location_indices = (int32_t *)w;
		d->n_location_indices = n;
		m->stack_ptrs[i] = d;
	}
	opentelemetry__proto__profiles__v1development__link__init(&m->link);
	m->link_ptr = &m->link;
	m->dict.mapping_table = m->map_ptrs;
	m->dict.n_mapping_table = e->maps.n;
	m->dict.location_table = m->loc_ptrs;
	m->dict.n_location_table = e->locs.n;
	m->dict.function_table = m->func_ptrs;
	m->dict.n_function_table = e->funcs.n;
	m->dict.link_table = &m->link_ptr;
	m->dict.n_link_table = 1;
	m->dict.string_table = m->strings;
	m->dict.n_string_table = e->strings.len;
	m->dict.attribute_table = m->attr_ptrs;
	m->dict.n_attribute_table = e->attrs.n;
	m->dict.stack_table = m->stack_ptrs;
	m->dict.n_stack_table = e->stacks.n;
	return 0;
}

/* Resource attributes of a label set: named by otlp__attribute_name, empty
 * values and "__" names left out, and k8s.node.name beside host.name for a
 * pod's set; a key already given is dropped (counted in the resource's
 * dropped_attributes_count). Strings are interned in e->resource_strings
 * (ids into kv's key and value, made pointers once the table is final). */
struct res_attr {
	uint32_t key, value;
};

/* Adds (key, value) to a resource's attributes unless its key is there
 * already or they are full: then it is counted in dropped. */
static int add_resource_attr(struct otlp_enc *e, const char *key, const char *value,
			     struct res_attr *out, size_t cap, size_t *n, uint32_t *dropped)
{
	struct res_attr a;
	int err = strtab__intern(&e->resource_strings, key, &a.key) ?:
		  strtab__intern(&e->resource_strings, value, &a.value);

	for (size_t i = 0; !err && i < *n; i++)
		if (out[i].key == a.key) {
			++*dropped;
			return 0;
		}
	if (!err && *n == cap)
		++*dropped;
	else if (!err)
		out[(*n)++] = a;
	return err;
}

static int resource_attrs(struct otlp_enc *e, const struct labels *l, struct res_attr *out,
			  size_t cap, size_t *n, uint32_t *dropped)
{
	const char *name, *value, *node = labels__get(l, "node");
	size_t pos = 0;
	int err = 0;

	*n = *dropped = 0;
	while (!err && labels__next(l, &pos, &name, &value))
		if (*value && strncmp(name, "__", 2))
			err = add_resource_attr(e, otlp__attribute_name(name), value, out, cap, n,
						dropped);
	if (!err && node && *node && labels__get(l, "pod"))
		err = add_resource_attr(e, "k8s.node.name", node, out, cap, n, dropped);
	return err;
}

static int build_resources(struct otlp_msg *m, struct otlp_enc *e,
			   const struct otlp_resource_profile *rp, size_t n,
			   const struct otlp_meta *meta)
{
	size_t total = 0, kv = 0;
	struct res_attr *ra;
	uint32_t *dropped;
	size_t *nattrs;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		total += rp[i].labels ? rp[i].labels->n + 1 : 0;
	ra = alloc_array(total, sizeof(*ra));
	dropped = alloc_array(n, sizeof(*dropped));
	nattrs = alloc_array(n, sizeof(*nattrs));
	m->rps = alloc_array(n, sizeof(*m->rps));
	m->rp_ptrs = alloc_array(n, sizeof(*m->rp_ptrs));
	m->resources = alloc_array(n, sizeof(*m->resources));
	m->kvs = alloc_array(total, sizeof(*m->kvs));
	m->kv_ptrs = alloc_array(total, sizeof(*m->kv_ptrs));
	m->kv_values = alloc_array(total, sizeof(*m->kv_values));
	m->sps = alloc_array(n, sizeof(*m->sps));
	m->sp_ptrs = alloc_array(n, sizeof(*m->sp_ptrs));
	if (!ra || !dropped || !nattrs || !m->rps || !m->rp_ptrs || !m->resources || !m->kvs ||
	    !m->kv_ptrs || !m->kv_values || !m->sps || !m->sp_ptrs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0, at = 0; i < n && !err; i++) {
		if (rp[i].labels)
			err = resource_attrs(e, rp[i].labels, ra + at, rp[i].labels->n + 1,
					     &nattrs[i], &dropped[i]);
		at += rp[i].labels ? rp[i].labels->n + 1 : 0;
	}
	if (err || !(m->res_strings = wire_strings(m, &e->resource_strings))) {
		err = err ?: -ENOMEM;
		goto out;
	}
	opentelemetry__proto__common__v1__instrumentation_scope__init(&m->scope);
	m->scope.name = (char *)meta->scope_name;
	m->scope.version = (char *)meta->scope_version;
	for (size_t i = 0, at = 0; i < n; i++) {
		pb_resource_profiles *r = &m->rps[i];
		pb_resource *res = &m->resources[i];

		opentelemetry__proto__resource__v1__resource__init(res);
		res->attributes = &m->kv_ptrs[kv];
		res->n_attributes = nattrs[i];
		res->dropped_attributes_count = dropped[i];
		for (size_t j = 0; j < nattrs[i]; j++, kv++) {
			opentelemetry__proto__common__v1__key_value__init(&m->kvs[kv]);
			opentelemetry__proto__common__v1__any_value__init(&m->kv_values[kv]);
			m->kv_values[kv].value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			m->kv_values[kv].string_value = m->res_strings[ra[at + j].value];
			m->kvs[kv].key = m->res_strings[ra[at + j].key];
			m->kvs[kv].value = &m->kv_values[kv];
			m->kv_ptrs[kv] = &m->kvs[kv];
		}
		at += rp[i].labels ? rp[i].labels->n + 1 : 0;
		opentelemetry__proto__profiles__v1development__scope_profiles__init(&m->sps[i]);
		m->sps[i].scope = &m->scope;
		m->sps[i].profiles = &m->profile_ptrs[i];
		m->sps[i].n_profiles = 1;
		m->sp_ptrs[i] = &m->sps[i];
		opentelemetry__proto__profiles__v1development__resource_profiles__init(r);
		r->resource = res;
		r->scope_profiles = &m->sp_ptrs[i];
		r->n_scope_profiles = 1;
		m->rp_ptrs[i] = r;
	}
	m->req.resource_profiles = m->rp_ptrs;
	m->req.n_resource_profiles = n;
out:
	free(ra);
	free(dropped);
	free(nattrs);
	return err;
}

/* 16 random bytes, never all zero (OTLP's invalid id). */
static void profile_id(uint8_t id[16])
{
	static uint64_t seq;

	if (getrandom(id, 16, 0) != 16) {
		uint64_t v = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);

		memset(id, 0, 16);
		memcpy(id, &v, sizeof(v));
	}
	id[15] |= !memcmp(id, (uint8_t[16]){ 0 }, 16);
}

static int build_profiles(struct otlp_msg *m, const struct otlp_enc *e, size_t n,
			  const struct otlp_meta *meta, uint32_t cpu, uint32_t nanoseconds)
{
	m->profiles = alloc_array(n, sizeof(*m->profiles));
	m->profile_ptrs = alloc_array(n, sizeof(*m->profile_ptrs));
	m->samples = alloc_array(e->nsamples, sizeof(*m->samples));
	m->sample_ptrs = alloc_array(e->nsamples, sizeof(*m->sample_ptrs));
	m->ids = alloc_array(n, sizeof(*m->ids));
	if (!m->profiles || !m->profile_ptrs || !m->samples || !m->sample_ptrs || !m->ids)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__value_type__init(&m->cpu);
	m->cpu.type_strindex = (int32_t)cpu;
	m->cpu.unit_strindex = (int32_t)nanoseconds;
	for (size_t s = 0; s < e->nsamples; s++) {
		pb_sample *d = &m->samples[s];
		const struct enc_sample *src = &e->samples[s];

		opentelemetry__proto__profiles__v1development__sample__init(d);
		d->stack_index = src->stack;
		d->attribute_indices = e->sample_attrs + src->attr_first;
		d->n_attribute_indices = src->nattrs;
		d->values = (int64_t *)&src->value;
		d->n_values = 1;
		m->sample_ptrs[s] = d;
	}
	for (size_t i = 0; i < n; i++) {
		pb_profile *p = &m->profiles[i];

		opentelemetry__proto__profiles__v1development__profile__init(p);
		p->sample_type = &m->cpu;
		p->period_type = &m->cpu;
		p->period = meta->period_ns > INT64_MAX ? INT64_MAX : (int64_t)meta->period_ns;
		p->time_unix_nano = (uint64_t)meta->time_nanos;
		p->duration_nano = (uint64_t)meta->duration_nanos;
		p->samples = &m->sample_ptrs[e->first_sample[i]];
		p->n_samples = e->first_sample[i + 1] - e->first_sample[i];
		profile_id(m->ids[i]);
		p->profile_id.data = m->ids[i];
		p->profile_id.len = 16;
		m->profile_ptrs[i] = p;
	}
	return 0;
}

static int encode(struct otlp_enc *e, const struct otlp_resource_profile *rp, size_t n,
		  const struct otlp_meta *meta, uint8_t **out, size_t *out_len)
{
	struct otlp_msg m = { 0 };
	uint32_t cpu, nanoseconds;
	int32_t zero;
	int err;

	/* the zero entries first: index 0 */
	err = seqtab__intern(&e->maps, (uint32_t[MAP_WORDS]){ 0 }, MAP_WORDS, &zero) ?:
	      seqtab__intern(&e->locs, (uint32_t[LOC_WORDS]){ 0 }, LOC_WORDS, &zero) ?:
	      seqtab__intern(&e->funcs, (uint32_t[FUNC_WORDS]){ 0 }, FUNC_WORDS, &zero) ?:
	      seqtab__intern(&e->attrs, (uint32_t[ATTR_WORDS]){ 0 }, ATTR_WORDS, &zero) ?:
	      seqtab__intern(&e->stacks, NULL, 0, &zero) ?:
	      intern_string(e, "cpu", &cpu) ?: intern_string(e, "nanoseconds", &nanoseconds);
	e->first_sample = alloc_array(n + 1, sizeof(*e->first_sample));
	if (!err && !e->first_sample)
		err = -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		e->first_sample[i] = e->nsamples;
		err = add_samples(e, rp[i].profile, meta->period_ns);
	}
	if (err)
		return err;
	e->first_sample[n] = e->nsamples;
	if (e->strings.len > INT32_MAX)
		return -E2BIG;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
		&m.req);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&m.dict);
	m.req.dictionary = &m.dict;
	if (!(m.strings = wire_strings(&m, &e->strings)))
		err = -ENOMEM;
	/* profile_ptrs first: the scopes point into it */
	if (!err)
		err = build_profiles(&m, e, n, meta, cpu, nanoseconds) ?: build_dictionary(&m, e) ?:
		      build_resources(&m, e, rp, n, meta);
	if (!err) {
		*out_len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
			&m.req);
		*out = malloc(*out_len ? *out_len : 1);
		if (*out)
			opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
				&m.req, *out);
		else
			err = -ENOMEM;
	}
	msg_release(&m);
	return err;
}

int otlp__encode(const struct otlp_resource_profile *rp, size_t n, const struct otlp_meta *meta,
		 uint8_t **out, size_t *out_len)
{
	struct otlp_enc e = { 0 };
	int err;

	if (!rp || !meta || !out || !out_len)
		return -EINVAL;
	*out = NULL;
	err = strtab__init(&e.strings) ?: strtab__init(&e.resource_strings) ?:
	      encode(&e, rp, n, meta, out, out_len);
	strtab__release(&e.strings);
	strtab__release(&e.resource_strings);
	seqtab__release(&e.maps);
	seqtab__release(&e.locs);
	seqtab__release(&e.funcs);
	seqtab__release(&e.attrs);
	seqtab__release(&e.stacks);
	free(e.samples);
	free(e.first_sample);
	free(e.sample_attrs);
	free(e.stack);
	free(e.loc);
	labels__release(&e.set);
	return err;
}
