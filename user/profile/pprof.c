// SPDX-License-Identifier: BSD-2-Clause
/* pprof encoder. The generated protobuf-c structs only point at data, so
 * the encoder first lays the whole profile out in a handful of arrays
 * (struct pprof_msg), packs it in one go, then frees the arrays. Ids:
 * mapping and location = index + 1, function = one per distinct name in
 * order of first use, so the output is deterministic. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "profile/profile_priv.h"

/* Strings the encoder adds when the profile does not hold them already. */
#define PPROF_EXTRA_STRINGS 4

typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

struct pprof_msg {
	Perftools__Profiles__Profile prof;
	pb_value_type types[2], period_type;
	pb_value_type *type_ptrs[2];
	pb_mapping *maps, **map_ptrs;
	pb_location *locs, **loc_ptrs;
	pb_line *lines, **line_ptrs;
	pb_function *funcs, **func_ptrs;
	pb_sample *samples, **sample_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
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
}

/* String table index of s: the profile's own, else one appended after
 * them (at most PPROF_EXTRA_STRINGS distinct ones). */
static int64_t wire_string(struct pprof_msg *m, const struct profile *p,
			   const char *s)
{
	uint32_t id = strtab__find(&p->strings, s);
	size_t i;

	if (id != HASHMAP_NO_INDEX)
		return id;
	for (i = p->strings.len; i < m->prof.n_string_table; i++)
		if (!strcmp(m->prof.string_table[i], s))
			return i;
	/* protobuf-c only reads through this non-const pointer */
	m->prof.string_table[m->prof.n_string_table] = (char *)s;
	return m->prof.n_string_table++;
}

static int build_strings(struct pprof_msg *m, const struct profile *p)
{
	size_t i;

	m->prof.string_table = alloc_array(p->strings.len + PPROF_EXTRA_STRINGS,
					   sizeof(char *));
	if (!m->prof.string_table)
		return -ENOMEM;
	for (i = 0; i < p->strings.len; i++)
		m->prof.string_table[i] = (char *)strtab__get(&p->strings, i);
	m->prof.n_string_table = p->strings.len;
	return 0;
}

static void set_value_type(pb_value_type *vt, struct pprof_msg *m,
			   const struct profile *p, const char *type,
			   const char *unit)
{
	perftools__profiles__value_type__init(vt);
	vt->type = wire_string(m, p, type);
	vt->unit = wire_string(m, p, unit);
}

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
	m->prof.mapping = m->map_ptrs;
	m->prof.n_mapping = p->nmaps;
	return 0;
}

/* Locations with one line each, and the functions those lines name. */
static int build_locations(struct pprof_msg *m, const struct profile *p)
{
	uint32_t *func_of_name;         /* string id -> function id, 0 = none */
	size_t i, nfuncs = 0;

	func_of_name = alloc_array(p->strings.len, sizeof(*func_of_name));
	m->locs = alloc_array(p->nlocs, sizeof(*m->locs));
	m->loc_ptrs = alloc_array(p->nlocs, sizeof(*m->loc_ptrs));
	m->lines = alloc_array(p->nlocs, sizeof(*m->lines));
	m->line_ptrs = alloc_array(p->nlocs, sizeof(*m->line_ptrs));
	m->funcs = alloc_array(p->nlocs, sizeof(*m->funcs));
	m->func_ptrs = alloc_array(p->nlocs, sizeof(*m->func_ptrs));
	if (!func_of_name || !m->locs || !m->loc_ptrs || !m->lines ||
	    !m->line_ptrs || !m->funcs || !m->func_ptrs) {
		free(func_of_name);
		return -ENOMEM;
	}
	for (i = 0; i < p->nlocs; i++) {
		const struct location *src = &p->locs[i];
		pb_location *dst = &m->locs[i];
		pb_line *line = &m->lines[i];

		if (!func_of_name[src->name]) {
			pb_function *f = &m->funcs[nfuncs];

			perftools__profiles__function__init(f);
			f->id = ++nfuncs;
			f->name = src->name;
			f->system_name = src->name;
			m->func_ptrs[nfuncs - 1] = f;
			func_of_name[src->name] = f->id;
		}
		perftools__profiles__line__init(line);
		line->function_id = func_of_name[src->name];
		m->line_ptrs[i] = line;

		perftools__profiles__location__init(dst);
		dst->id = i + 1;
		dst->mapping_id = src->mapping;
		dst->address = src->addr;
		dst->line = &m->line_ptrs[i];
		dst->n_line = 1;
		m->loc_ptrs[i] = dst;
	}
	free(func_of_name);
	m->prof.location = m->loc_ptrs;
	m->prof.n_location = p->nlocs;
	m->prof.function = m->func_ptrs;
	m->prof.n_function = nfuncs;
	return 0;
}

/* v as an int64, saturating. */
static int64_t clamp_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* One sample per tree node with samples of its own: location ids from the
 * node up to the root's child (leaf first), values [count, count x period]. */
static int build_samples(struct pprof_msg *m, const struct profile *p,
			 uint64_t period)
{
	const struct stack_node *nodes = p->tree.nodes;
	size_t i, nsamples = 0, nids = 0, s = 0, id = 0;
	uint32_t n;

	for (i = 0; i < p->tree.len; i++) {
		if (!nodes[i].self)
			continue;
		nsamples++;
		for (n = i; n != STACK_TREE_ROOT; n = nodes[n].parent)
			nids++;
	}
	m->samples = alloc_array(nsamples, sizeof(*m->samples));
	m->sample_ptrs = alloc_array(nsamples, sizeof(*m->sample_ptrs));
	m->loc_ids = alloc_array(nids, sizeof(*m->loc_ids));
	m->values = alloc_array(nsamples, 2 * sizeof(*m->values));
	if (!m->samples || !m->sample_ptrs || !m->loc_ids || !m->values)
		return -ENOMEM;
	for (i = 0; i < p->tree.len; i++) {
		pb_sample *dst = &m->samples[s];
		uint64_t cpu;

		if (!nodes[i].self)
			continue;
		perftools__profiles__sample__init(dst);
		dst->location_id = &m->loc_ids[id];
		for (n = i; n != STACK_TREE_ROOT; n = nodes[n].parent)
			m->loc_ids[id++] = (uint64_t)nodes[n].key + 1;
		dst->n_location_id = &m->loc_ids[id] - dst->location_id;
		if (__builtin_mul_overflow(nodes[i].self, period, &cpu))
			cpu = UINT64_MAX;
		dst->value = &m->values[2 * s];
		dst->value[0] = clamp_i64(nodes[i].self);
		dst->value[1] = clamp_i64(cpu);
		dst->n_value = period ? 2 : 1;
		m->sample_ptrs[s++] = dst;
	}
	m->prof.sample = m->sample_ptrs;
	m->prof.n_sample = nsamples;
	return 0;
}

/* gzip (RFC 1952) of in[0..len) into a malloc'd *out. 0 or -errno. */
static int gzip_compress(const uint8_t *in, size_t len, uint8_t **out,
			 size_t *out_len)
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
	err = build_strings(&m, p);
	if (err)
		goto cleanup;
	/* a count first, then cpu time: go tool pprof offers both, Pyroscope
	 * picks cpu/nanoseconds */
	set_value_type(&m.types[0], &m, p, "samples", "count");
	m.type_ptrs[0] = &m.types[0];
	m.prof.sample_type = m.type_ptrs;
	m.prof.n_sample_type = 1;
	if (meta->period_ns) {
		set_value_type(&m.types[1], &m, p, "cpu", "nanoseconds");
		set_value_type(&m.period_type, &m, p, "cpu", "nanoseconds");
		m.type_ptrs[1] = &m.types[1];
		m.prof.n_sample_type = 2;
		m.prof.period_type = &m.period_type;
		m.prof.period = clamp_i64(meta->period_ns);
	}
	m.prof.time_nanos = meta->time_nanos;
	m.prof.duration_nanos = meta->duration_nanos;

	err = build_mappings(&m, p);
	if (!err)
		err = build_locations(&m, p);
	if (!err)
		err = build_samples(&m, p, meta->period_ns);
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
		err = gzip_compress(raw, len, out, out_len);
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
