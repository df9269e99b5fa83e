// SPDX-License-Identifier: BSD-2-Clause
/* pprof in: any producer's Profile message (kiln's, Go's runtime/pprof,
 * perf_data_converter, ...). protobuf-c's generated decoder checks the wire
 * format; this file checks what the schema cannot: ids that resolve,
 * string indexes in range, one value per sample type. Each location is
 * turned into frames once, outermost first (pprof lists inlined callees
 * first); a sample is then its locations' frames in reverse order.
 * Frame kinds: a kernel mapping or address is FRAME_KERNEL; an outermost
 * location with neither mapping nor address is the root (kiln writes the
 * process name so); everything else is FRAME_USER. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hashmap.h"
#include "profile.pb-c.h"
#include "core/array.h"
#include "profile/reader.h"
#include "profile/strtab.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Function pb_function;

#define KERNEL_HALF (1ull << 63)        /* x86-64 and arm64 kernel addresses */
#define NOT_MADE_UP UINT32_MAX

struct pb_reader {
	struct profile *prof;   /* what samples are added to */
	const pb_profile *pb;
	struct read_info *info;
	struct hashmap maps, funcs, locs;        /* id -> message / index + 1 */
	/* frames of location i: loc_frames[loc_first[i] .. loc_first[i + 1]) */
	struct frame *loc_frames;
	size_t *loc_first;
	uint32_t *made_up;      /* per loc_frames entry: id in names, or NOT_MADE_UP */
	struct strtab names;    /* names made up for locations without lines */
	struct frame *stack;    /* one sample's frames */
	size_t stack_cap;
	struct labels set;      /* one sample's string labels */
	char *set_text;         /* and their text form (LABELS_TEXT_MAX) */
};

static void pb_reader_release(struct pb_reader *r)
{
	hashmap__clear(&r->maps);
	hashmap__clear(&r->funcs);
	hashmap__clear(&r->locs);
	free(r->loc_frames);
	free(r->loc_first);
	free(r->made_up);
	strtab__release(&r->names);
	free(r->stack);
	labels__release(&r->set);
	free(r->set_text);
}

/* string_table[idx], or NULL (why set) when idx is out of range. */
static const char *pb_string(struct pb_reader *r, int64_t idx, const char *what)
{
	if (idx < 0 || (uint64_t)idx >= r->pb->n_string_table) {
		read_fail(r->info, -EINVAL, "%s names string %" PRId64 " of %zu",
			  what, idx, r->pb->n_string_table);
		return NULL;
	}
	return r->pb->string_table[idx];
}

/* Checks that ids are non-zero and unique, and indexes them. */
static int check_id(struct pb_reader *r, struct hashmap *m, uint64_t id,
		    void *val, const char *what)
{
	if (!id || hashmap__get_u64(m, id))
		return read_fail(r->info, -EINVAL, "%s id %" PRIu64 " is %s",
				 what, id, id ? "used twice" : "zero");
	return hashmap__put_u64(m, id, val) ? -ENOMEM : 0;
}

static int index_ids(struct pb_reader *r)
{
	const pb_profile *pb = r->pb;
	size_t i;
	int err = 0;

	for (i = 0; i < pb->n_mapping && !err; i++)
		err = check_id(r, &r->maps, pb->mapping[i]->id, pb->mapping[i], "mapping");
	for (i = 0; i < pb->n_function && !err; i++)
		err = check_id(r, &r->funcs, pb->function[i]->id, pb->function[i],
			       "function");
	for (i = 0; i < pb->n_location && !err; i++)
		err = check_id(r, &r->locs, pb->location[i]->id, (void *)(uintptr_t)(i + 1),
			       "location");
	return err;
}

/* The value to read: "samples" when there is one, else the default type,
 * else the last (pprof's own rule). -1 (why set) when there is none. */
static int pick_value(struct pb_reader *r)
{
	const pb_profile *pb = r->pb;
	const char *type, *unit, *def = NULL;
	int pick = -1;

	if (pb->default_sample_type &&
	    !(def = pb_string(r, pb->default_sample_type, "default_sample_type")))
		return -1;
	for (size_t i = 0; i < pb->n_sample_type; i++) {
		type = pb_string(r, pb->sample_type[i]->type, "a sample type");
		if (!type)
			return -1;
		if (!strcmp(type, "samples")) {
			pick = (int)i;
			break;
		}
		if ((def && !strcmp(type, def)) || (!def && i + 1 == pb->n_sample_type))
			pick = (int)i;
	}
	if (pick < 0) {
		read_fail(r->info, -EINVAL, "no sample type%s",
			  pb->n_sample_type ? " is the default_sample_type" : "");
		return -1;
	}
	type = pb_string(r, pb->sample_type[pick]->type, "a sample type");
	unit = pb_string(r, pb->sample_type[pick]->unit, "a sample type");
	if (!unit)
		return -1;
	snprintf(r->info->type, sizeof(r->info->type), "%s", type);
	snprintf(r->info->unit, sizeof(r->info->unit), "%s", unit);
	return pick;
}

/* Time span, and the period when samples are counts of cpu time. */
static void read_span(struct pb_reader *r)
{
	const pb_profile *pb = r->pb;
	const char *unit;

	r->info->time_nanos = pb->time_nanos;
	r->info->duration_nanos = pb->duration_nanos;
	if (!pb->period_type || pb->period <= 0 || strcmp(r->info->type, "samples"))
		return;
	unit = pb_string(r, pb->period_type->unit, "period_type");
	if (unit && !strcmp(unit, "nanoseconds"))
		r->info->period_ns = (uint64_t)pb->period;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Names frame f after line i of l: its function's name (else its system
 * name), source file and line. 0 or -EINVAL. */
static int line_frame(struct pb_reader *r, const pb_location *l, size_t i, struct frame *f)
{
	uint64_t fid = l->line[i]->function_id;
	const pb_function *fn = hashmap__get_u64(&r->funcs, fid);
	const char *file;

	if (!fn)
		return read_fail(r->info, -EINVAL, "location %" PRIu64 " names function %"
				 PRIu64 ", which does not exist", l->id, fid);
	f->name = pb_string(r, fn->name, "a function");
	if (f->name && !*f->name)
		f->name = pb_string(r, fn->system_name, "a function");
	file = pb_string(r, fn->filename, "a function");
	if (!f->name || !file)
		return -EINVAL;
	if (!*f->name)
		f->name = "[unknown]";
	f->file = *file ? file : NULL;
	f->line = l->line[i]->line > 0 && l->line[i]->line <= UINT32_MAX ?
		(uint32_t)l->line[i]->line : 0;
	f->inlined = i + 1 < l->n_line;
	return 0;
}

/* Whether name is one made up for an address of mapping file
 * ("libfoo.so+0x1a2b"), in a mapping whose functions are not all named. */
static bool made_up_name(const pb_mapping *m, const char *file, const char *name)
{
	const char *base = file ? base_name(file) : NULL;
	size_t n = base ? strlen(base) : 0;

	return m && !m->has_functions && n && !strncmp(name, base, n) &&
	       !strncmp(name + n, "+0x", 3);
}

/* Appends location l's frames at loc_frames[*n...]. A location without
 * lines is named like the symbolizer names one: "file+0xoffset" inside a
 * mapping, "[unknown]" outside any. */
static int location_frames(struct pb_reader *r, const pb_location *l, size_t *n)
{
	const pb_mapping *m = l->mapping_id ? hashmap__get_u64(&r->maps, l->mapping_id) : NULL;
	const char *file = NULL, *build_id = NULL;
	enum frame_kind kind = FRAME_USER;
	size_t i, lines = l->n_line ? l->n_line : 1;
	char name[512];
	int err;

	if (l->mapping_id && !m)
		return read_fail(r->info, -EINVAL, "location %" PRIu64 " names mapping %"
				 PRIu64 ", which does not exist", l->id, l->mapping_id);
	if (m) {
		file = pb_string(r, m->filename, "a mapping");
		build_id = pb_string(r, m->build_id, "a mapping");
		if (!file || !build_id)
			return -EINVAL;
	}
	if ((file && !strcmp(file, KERNEL_MAP)) || l->address >= KERNEL_HALF)
		kind = FRAME_KERNEL;
	else if (!m && !l->address && l->n_line == 1)
		kind = FRAME_ROOT;      /* only where it is outermost */
	for (i = lines; i-- > 0; (*n)++) {
		struct frame *f = &r->loc_frames[*n];

		*f = (struct frame){
			.kind = kind, .addr = l->address,
			.map_file = file && *file ? file : NULL,
			.map_build_id = build_id && *build_id ? build_id : NULL,
			.name = "[unknown]", .unnamed = !l->n_line,
		};
		r->made_up[*n] = NOT_MADE_UP;
		if (m) {
			f->map_start = m->memory_start;
			f->map_limit = m->memory_limit;
			f->map_offset = m->file_offset;
		}
		if (l->n_line) {
			err = line_frame(r, l, i, f);
			if (err)
				return err;
			f->unnamed = made_up_name(m, file, f->name);
		} else if (f->map_file) {
			snprintf(name, sizeof(name), "%s+0x%" PRIx64, base_name(file),
				 l->address - m->memory_start + m->file_offset);
			err = strtab__intern(&r->names, name, &r->made_up[*n]);
			if (err)
				return err;
		}
	}
	return 0;
}

static int build_locations(struct pb_reader *r)
{
	const pb_profile *pb = r->pb;
	size_t i, n = 0, total = 0;
	int err;

	for (i = 0; i < pb->n_location; i++) {
		if (pb->location[i]->n_line > READ_MAX_FRAMES)
			return read_fail(r->info, -EINVAL, "location %" PRIu64
					 " has more than %d lines", pb->location[i]->id,
					 READ_MAX_FRAMES);
		total += pb->location[i]->n_line ? pb->location[i]->n_line : 1;
	}
	r->loc_frames = calloc(total ? total : 1, sizeof(*r->loc_frames));
	r->made_up = calloc(total ? total : 1, sizeof(*r->made_up));
	r->loc_first = calloc(pb->n_location + 1, sizeof(*r->loc_first));
	if (!r->loc_frames || !r->made_up || !r->loc_first)
		return -ENOMEM;
	err = strtab__init(&r->names);
	for (i = 0; i < pb->n_location && !err; i++) {
		r->loc_first[i] = n;
		err = location_frames(r, pb->location[i], &n);
	}
	if (err)
		return err;
	r->loc_first[pb->n_location] = n;
	/* every name is interned now, so the strings stay put */
	for (i = 0; i < n; i++)
		if (r->made_up[i] != NOT_MADE_UP)
			r->loc_frames[i].name = strtab__get(&r->names, r->made_up[i]);
	return 0;
}

/* The sample's string labels (numeric ones are left out) as the
 * FRAME_LABELS frame *f, *any set; f untouched when it has none. 0 or
 * -errno (why set). */
static int sample_labels(struct pb_reader *r, size_t s, struct frame *f, bool *any)
{
	const Perftools__Profiles__Sample *smp = r->pb->sample[s];
	const char *names[READ_MAX_LABELS], *values[READ_MAX_LABELS];
	size_t n = 0;
	int err;

	*any = false;
	for (size_t i = 0; i < smp->n_label; i++) {
		const Perftools__Profiles__Label *l = smp->label[i];

		if (!l->str)
			continue;
		if (n == READ_MAX_LABELS)
			return read_fail(r->info, -EINVAL, "sample %zu has more than %d labels", s,
					 READ_MAX_LABELS);
		names[n] = pb_string(r, l->key, "a label");
		values[n] = pb_string(r, l->str, "a label");
		if (!names[n] || !values[n])
			return -EINVAL;
		n += *names[n] != '\0';
	}
	if (!n)
		return 0;
	err = read_labels_frame(&r->set, &r->set_text, names, values, n, f);
	if (err == -ENOSPC)
		return read_fail(r->info, -EINVAL, "the labels of sample %zu take more than %u bytes",
				 s, LABELS_TEXT_MAX);
	*any = !err;
	return err;
}

static int add_samples(struct pb_reader *r, int value, const struct read_limits *lim)
{
	const pb_profile *pb = r->pb;
	int err;

	for (size_t s = 0; s < pb->n_sample; s++) {
		const Perftools__Profiles__Sample *smp = pb->sample[s];
		bool labeled;
		size_t nf = 0;

		if (smp->n_value != pb->n_sample_type)
			return read_fail(r->info, -EINVAL, "sample %zu has %zu values for %zu "
					 "sample types", s, smp->n_value, pb->n_sample_type);
		if (smp->value[value] <= 0 || !smp->n_location_id) {
			r->info->skipped++;
			continue;
		}
		err = array_reserve(r->stack, r->stack_cap, 1);
		if (!err)
			err = sample_labels(r, s, &r->stack[0], &labeled);
		if (err)
			return err;
		nf = labeled;
		/* outermost location first */
		for (size_t j = smp->n_location_id; j-- > 0;) {
			uintptr_t loc = (uintptr_t)hashmap__get_u64(&r->locs, smp->location_id[j]);
			size_t first, n;

			if (!loc)
				return read_fail(r->info, -EINVAL, "sample %zu names location %"
						 PRIu64 ", which does not exist", s,
						 smp->location_id[j]);
			first = r->loc_first[loc - 1];
			n = r->loc_first[loc] - first;
			if (nf + n > READ_MAX_FRAMES)
				return read_fail(r->info, -EINVAL, "sample %zu has more than %d "
						 "frames", s, READ_MAX_FRAMES);
			err = array_reserve(r->stack, r->stack_cap, nf + n);
			if (err)
				return err;
			memcpy(&r->stack[nf], &r->loc_frames[first], n * sizeof(*r->stack));
			if (nf > labeled && r->stack[nf].kind == FRAME_ROOT)
				r->stack[nf].kind = FRAME_USER;
			nf += n;
		}
		err = read_add(r->prof, r->stack, nf, (uint64_t)smp->value[value], lim,
			       r->info);
		if (err)
			return err;
	}
	return 0;
}

int pprof__read(struct profile *p, const uint8_t *buf, size_t len,
		const struct read_limits *lim, struct read_info *info)
{
	struct pb_reader r = { .prof = p, .info = info };
	int value, err;

	r.pb = perftools__profiles__profile__unpack(NULL, len, buf);
	if (!r.pb)
		return read_fail(info, -EINVAL, "truncated or invalid protobuf");
	err = index_ids(&r);
	if (!err)
		err = build_locations(&r);
	if (!err && (r.pb->n_sample || r.pb->n_sample_type)) {
		value = pick_value(&r);
		if (value < 0) {
			err = -EINVAL;
		} else {
			read_span(&r);
			err = add_samples(&r, value, lim);
		}
	}
	pb_reader_release(&r);
	perftools__profiles__profile__free_unpacked((pb_profile *)r.pb, NULL);
	return err;
}
