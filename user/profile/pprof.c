// SPDX-License-Identifier: BSD-2-Clause
/* pprof encoder. The generated protobuf-c structs only point at data, so
 * the encoder first lays the whole profile out in a handful of arrays
 * (struct pprof_msg), packs it in one go, then frees the arrays. Ids:
 * mapping = index + 1; locations and functions (one per distinct name and
 * file) in order of first use by the samples, so the output is
 * deterministic. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/utf8.h"
#include "profile.pb-c.h"
#include "profile/profile_priv.h"


typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Label pb_label;

struct pprof_msg {
	Perftools__Profiles__Profile prof;
	pb_value_type types[2], period_type;
	pb_value_type *type_ptrs[2];
	pb_mapping *maps, **map_ptrs;
	pb_location *locs, **loc_ptrs;
	pb_line *lines, **line_ptrs;
	pb_function *funcs, **func_ptrs;
	pb_sample *samples, **sample_ptrs;
	size_t nlines;
	uint64_t *loc_ids;
	int64_t *values;
	pb_label *labels, **label_ptrs;
	size_t nlabels;
	struct strtab extra;    /* strings the profile does not hold */
	char **fixed;           /* strings made valid UTF-8 (one per string id), or NULL */
	struct labels set;      /* a FRAME_LABELS location's, parsed */
};

/* calloc that never returns NULL for an empty array. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void pprof_msg_release(struct pprof_msg *m)
{
	free(m->prof.string_table);
	free(m->maps);
	free(m->map_ptrs);
	free(m->locs);
	free(m->loc_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->funcs);
	free(m->func_ptrs);
	free(m->samples);
	free(m->sample_ptrs);
	free(m->loc_ids);
	free(m->values);
	free(m->labels);
	free(m->label_ptrs);
	strtab__release(&m->extra);
	labels__release(&m->set);
	for (size_t i = 0; m->fixed && i < m->prof.n_string_table; i++)
		free(m->fixed[i]);
	free(m->fixed);
}

/* String table index of s: the profile's own, else one of the strings
 * added after them (m->extra: its id 0, "", is the profile's too). 0 or
 * -ENOMEM. */
static int wire_string(struct pprof_msg *m, const struct profile *p, const char *s,
		       int64_t *id)
{
	uint32_t own = strtab__find(&p->strings, s), extra;
	int err;

	if (own != HASHMAP_NO_INDEX) {
		*id = own;
		return 0;
	}
	err = strtab__intern(&m->extra, s, &extra);
	*id = (int64_t)p->strings.len + extra - 1;
	return err;
}

/* The string table: the profile's strings, then the added ones; one that
 * is not valid UTF-8 (a process's name, path or symbol may be anything)
 * is written with '?' for its bad bytes, as a consumer refuses the whole
 * profile otherwise. */
static int build_strings(struct pprof_msg *m, const struct profile *p)
{
	size_t i, n = p->strings.len + m->extra.len - 1;

	m->prof.string_table = alloc_array(n, sizeof(char *));
	if (!m->prof.string_table)
		return -ENOMEM;
	/* protobuf-c only reads through these non-const pointers */
	for (i = 0; i < p->strings.len; i++)
		m->prof.string_table[i] = (char *)strtab__get(&p->strings, i);
	for (i = 1; i < m->extra.len; i++)
		m->prof.string_table[p->strings.len + i - 1] = (char *)strtab__get(&m->extra, i);
	m->prof.n_string_table = n;
	for (i = 0; i < n; i++) {
		if (utf8__valid(m->prof.string_table[i]))
			continue;
		if (!m->fixed && !(m->fixed = calloc(n, sizeof(*m->fixed))))
			return -ENOMEM;
		m->fixed[i] = utf8__sanitized(m->prof.string_table[i]);
		if (!m->fixed[i])
			return -ENOMEM;
		m->prof.string_table[i] = m->fixed[i];
	}
	return 0;
}

static int set_value_type(pb_value_type *vt, struct pprof_msg *m, const struct profile *p,
			  const char *type, const char *unit)
{
	perftools__profiles__value_type__init(vt);
	return wire_string(m, p, type, &vt->type) ?: wire_string(m, p, unit, &vt->unit);
}

/* Mappings, with what their locations say of them: has_functions unless
 * a frame in it went unnamed, the other has_* when any line has one. */
static int build_mappings(struct pprof_msg *m, const struct profile *p)
{
	size_t i;

	m->maps = alloc_array(p->nmaps, sizeof(*m->maps));
	m->map_ptrs = alloc_array(p->nmaps, sizeof(*m->map_ptrs));
	if (!m->maps || !m->map_ptrs)
		return -ENOMEM;
	for (i = 0; i < p->nmaps; i++) {
		const struct mapping *src = &p->maps[i];
		pb_mapping *dst = &m->maps[i];

		perftools__profiles__mapping__init(dst);
		dst->id = i + 1;
		dst->memory_start = src->start;
		dst->memory_limit = src->limit;
		dst->file_offset = src->offset;
		dst->filename = src->file;
		dst->build_id = src->build_id;
		dst->has_functions = 1;
		m->map_ptrs[i] = dst;
	}
	for (i = 0; i < p->nlocs; i++) {
		const struct location *l = &p->locs[i];
		pb_mapping *dst = l->mapping ? &m->maps[l->mapping - 1] : NULL;

		if (!dst)
			continue;
		dst->has_functions &= !l->unnamed;
		dst->has_filenames |= l->file != 0;
		dst->has_line_numbers |= l->line != 0;
		dst->has_inline_frames |= l->inlined;
	}
	m->prof.mapping = m->map_ptrs;
	m->prof.n_mapping = p->nmaps;
	return 0;
}

/* Function id of (name, file), added when new. 0 or -ENOMEM. */
static int function_id(struct pprof_msg *m, struct hashmap *index, uint32_t name,
		       uint32_t file, uint64_t *id)
{
	uint64_t key = (uint64_t)name << 32 | file;
	pb_function *f;

	*id = (uintptr_t)hashmap__get_u64(index, key);
	if (*id)
		return 0;
	f = &m->funcs[m->prof.n_function];
	perftools__profiles__function__init(f);
	f->id = ++m->prof.n_function;
	f->name = name;
	f->system_name = name;
	f->filename = file;
	m->func_ptrs[f->id - 1] = f;
	*id = f->id;
	return hashmap__put_u64(index, key, (void *)(uintptr_t)f->id) ? -ENOMEM : 0;
}

/* The pprof location of the machine frame [head .. end] (end as profile__frame_end
 * gives it): one line a node, innermost first. */
static int add_location(struct pprof_msg *m, const struct profile *p, struct hashmap *funcs,
			uint32_t head, uint32_t end)
{
	const struct stack_node *nodes = p->tree.nodes;
	const struct location *src = &p->locs[nodes[head].key];
	pb_location *dst = &m->locs[m->prof.n_location];
	int err = 0;

	perftools__profiles__location__init(dst);
	dst->id = ++m->prof.n_location;
	dst->mapping_id = src->mapping;
	dst->address = src->addr;
	dst->line = &m->line_ptrs[m->nlines];
	for (uint32_t n = head;; n = nodes[n].parent) {
		const struct location *l = &p->locs[nodes[n].key];
		pb_line *line = &m->lines[m->nlines];

		perftools__profiles__line__init(line);
		err = function_id(m, funcs, l->name, l->file, &line->function_id);
		if (err)
			return err;
		line->line = l->line;
		m->line_ptrs[m->nlines++] = line;
		dst->n_line++;
		if (n == end)
			break;
	}
	m->loc_ptrs[dst->id - 1] = dst;
	return 0;
}
/* v as an int64, saturating. */
static int64_t clamp_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Pairs of a label set's text form: half its separators. */
static size_t text_pairs(const char *text)
{
	size_t n = 0;

	for (; *text; text++)
		n += *text == LABELS_TEXT_SEP;
	return n / 2;
}

/* Counts the samples (tree nodes with samples of their own), the machine
 * frames on their paths, the lines of the locations they make (each made
 * once, at the first node whose location starts a frame; seen marks
 * those, and is left zeroed) and their labels (the label set's on their
 * path, and each_labels more). */
static void count_samples(const struct profile *p, uint64_t *seen, size_t each_labels,
			  size_t *nsamples, size_t *nids, size_t *nlines, size_t *nlabels)
{
	const struct stack_node *nodes = p->tree.nodes;

	*nsamples = *nids = *nlines = *nlabels = 0;
	for (size_t i = 0; i < p->tree.len; i++) {
		if (!nodes[i].self)
			continue;
		++*nsamples;
		*nlabels += each_labels;
		for (uint32_t n = i, end; n != STACK_TREE_ROOT; n = nodes[end].parent) {
			if (profile__labels_node(p, n)) {
				*nlabels += text_pairs(strtab__get(&p->strings, p->locs[nodes[n].key].name));
				break;
			}
			end = profile__frame_end(p, n);
			++*nids;
			if (seen[nodes[n].key])
				continue;
			seen[nodes[n].key] = 1;
			for (uint32_t k = n;; k = nodes[k].parent) {
				++*nlines;
				if (k == end)
					break;
			}
		}
	}
	memset(seen, 0, p->nlocs * sizeof(*seen));
}

/* Appends set's pairs to dst's labels (room counted by count_samples). */
static int add_labels(struct pprof_msg *m, const struct profile *p, pb_sample *dst,
		      const struct labels *set)
{
	const char *name, *value;
	size_t pos = 0;
	int err = 0;

	while (!err && labels__next(set, &pos, &name, &value)) {
		pb_label *l = &m->labels[m->nlabels];

		perftools__profiles__label__init(l);
		err = wire_string(m, p, name, &l->key) ?: wire_string(m, p, value, &l->str);
		m->label_ptrs[m->nlabels++] = l;
		dst->n_label++;
	}
	return err;
}

/* One sample per tree node with samples of its own: the machine frames
 * from the node up to the root's child (leaf first), each the location of
 * the profile location that starts it, made at its first use; values
 * [count, count x period]; labels: those of the label set node on its
 * path, then each (NULL: none). */
static int build_samples(struct pprof_msg *m, const struct profile *p, uint64_t period,
			 const struct labels *each)
{
	const struct stack_node *nodes = p->tree.nodes;
	size_t nsamples, nids, nlines, nlabels, s = 0, id = 0;
	struct hashmap funcs = { 0 };
	uint64_t *loc_of = NULL;        /* profile location -> pprof location id */
	int err = -ENOMEM;

	loc_of = alloc_array(p->nlocs, sizeof(*loc_of));
	if (!loc_of)
		return -ENOMEM;
	count_samples(p, loc_of, each ? each->n : 0, &nsamples, &nids, &nlines, &nlabels);
	m->samples = alloc_array(nsamples, sizeof(*m->samples));
	m->sample_ptrs = alloc_array(nsamples, sizeof(*m->sample_ptrs));
	m->loc_ids = alloc_array(nids, sizeof(*m->loc_ids));
	m->values = alloc_array(nsamples, 2 * sizeof(*m->values));
	m->locs = alloc_array(p->nlocs, sizeof(*m->locs));
	m->loc_ptrs = alloc_array(p->nlocs, sizeof(*m->loc_ptrs));
	m->lines = alloc_array(nlines, sizeof(*m->lines));
	m->line_ptrs = alloc_array(nlines, sizeof(*m->line_ptrs));
	m->funcs = alloc_array(nlines, sizeof(*m->funcs));
	m->func_ptrs = alloc_array(nlines, sizeof(*m->func_ptrs));
	m->labels = alloc_array(nlabels, sizeof(*m->labels));
	m->label_ptrs = alloc_array(nlabels, sizeof(*m->label_ptrs));
	if (!m->samples || !m->sample_ptrs || !m->loc_ids || !m->values || !m->locs ||
	    !m->loc_ptrs || !m->lines || !m->line_ptrs || !m->funcs || !m->func_ptrs ||
	    !m->labels || !m->label_ptrs)
		goto out;
	m->prof.location = m->loc_ptrs;
	m->prof.function = m->func_ptrs;
	err = 0;
	for (size_t i = 0; i < p->tree.len && !err; i++) {
		pb_sample *dst = &m->samples[s];
		uint32_t set = STACK_TREE_ROOT;
		uint64_t cpu;

		if (!nodes[i].self)
			continue;
		perftools__profiles__sample__init(dst);
		dst->location_id = &m->loc_ids[id];
		for (uint32_t n = i, end; n != STACK_TREE_ROOT && !err; n = nodes[end].parent) {
			uint32_t key = nodes[n].key;

			if (profile__labels_node(p, n)) {
				set = n;
				break;
			}
			end = profile__frame_end(p, n);
			if (!loc_of[key]) {
				err = add_location(m, p, &funcs, n, end);
				loc_of[key] = m->prof.n_location;
			}
			m->loc_ids[id++] = loc_of[key];
		}
		dst->n_location_id = &m->loc_ids[id] - dst->location_id;
		dst->label = &m->label_ptrs[m->nlabels];
		if (!err && set != STACK_TREE_ROOT)
			err = labels__from_text(&m->set, strtab__get(&p->strings,
								     p->locs[nodes[set].key].name)) ?:
			      add_labels(m, p, dst, &m->set);
		if (!err && each)
			err = add_labels(m, p, dst, each);
		if (__builtin_mul_overflow(nodes[i].self, period, &cpu))
			cpu = UINT64_MAX;
		dst->value = &m->values[2 * s];
		dst->value[0] = clamp_i64(nodes[i].self);
		dst->value[1] = clamp_i64(cpu);
		dst->n_value = period ? 2 : 1;
		m->sample_ptrs[s++] = dst;
	}
	m->prof.sample = m->sample_ptrs;
	m->prof.n_sample = s;
out:
	hashmap__clear(&funcs);
	free(loc_of);
	return err;
}

/* gzip (RFC 1952) of in[0..len) into a malloc'd *out. 0 or -errno. */
int pprof__gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = { 0 };
	uLong bound;
	uint8_t *buf, *shrunk;
	int ret;

	if (len > UINT_MAX)
		return -EFBIG;
	/* windowBits 15 + 16 selects the gzip wrapper. Level 1: a third of the
	 * default level's CPU for ~10 % more bytes (tests/bench/export_cost);
	 * the agent compresses every label set every interval. */
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, len);
	buf = bound <= UINT_MAX ? malloc(bound) : NULL;
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	zs.next_out = buf;
	zs.avail_out = bound;
	/* the output buffer holds deflateBound bytes, so one call finishes */
	ret = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	shrunk = realloc(buf, zs.total_out);
	*out = shrunk ? shrunk : buf;
	*out_len = zs.total_out;
	return 0;
}

int pprof__encode(const struct profile *p, const struct pprof_meta *meta,
		  bool gzip, uint8_t **out, size_t *out_len)
{
	struct pprof_msg m = { 0 };
	uint8_t *raw = NULL;
	size_t len;
	int err;

	if (!p || !meta || !out || !out_len)
		return -EINVAL;
	perftools__profiles__profile__init(&m.prof);
	err = strtab__init(&m.extra);
	/* a count first, then cpu time: go tool pprof offers both, Pyroscope
	 * picks cpu/nanoseconds */
	if (!err)
		err = set_value_type(&m.types[0], &m, p, "samples", "count");
	m.type_ptrs[0] = &m.types[0];
	m.prof.sample_type = m.type_ptrs;
	m.prof.n_sample_type = 1;
	if (!err && meta->period_ns) {
		err = set_value_type(&m.types[1], &m, p, "cpu", "nanoseconds") ?:
		      set_value_type(&m.period_type, &m, p, "cpu", "nanoseconds");
		m.type_ptrs[1] = &m.types[1];
		m.prof.n_sample_type = 2;
		m.prof.period_type = &m.period_type;
		m.prof.period = clamp_i64(meta->period_ns);
	}
	m.prof.time_nanos = meta->time_nanos;
	m.prof.duration_nanos = meta->duration_nanos;

	if (!err)
		err = build_mappings(&m, p);
	if (!err)
		err = build_samples(&m, p, meta->period_ns, meta->labels);
	if (!err)
		err = build_strings(&m, p);
	if (err)
		goto cleanup;

	len = perftools__profiles__profile__get_packed_size(&m.prof);
	raw = malloc(len ? len : 1);
	if (!raw) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&m.prof, raw);
	if (gzip) {
		err = pprof__gzip(raw, len, out, out_len);
	} else {
		*out = raw;
		*out_len = len;
		raw = NULL;
	}
cleanup:
	free(raw);
	pprof_msg_release(&m);
	return err;
}
