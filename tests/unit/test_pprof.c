// SPDX-License-Identifier: BSD-2-Clause
/* pprof encoder: round trip through protobuf-c's decoder, and a real
 * consumer (go tool pprof). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "profile/profile.h"
#include "unit_helpers.h"

#define PERIOD   10101010ULL    /* 99 Hz */
#define T_START  1700000000123456789LL
#define DURATION 10000000000LL

static const struct pprof_meta pp_meta = {
	.period_ns = PERIOD, .time_nanos = T_START, .duration_nanos = DURATION,
};

/* Gunzips buf (when gz) and unpacks it; the caller frees with
 * perftools__profiles__profile__free_unpacked. */
static Perftools__Profiles__Profile *pp_decode(const uint8_t *buf, size_t len,
					       bool gz)
{
	Perftools__Profiles__Profile *pb;
	z_stream zs = { 0 };
	size_t cap = 4096;
	uint8_t *raw;
	int ret;

	if (!gz)
		return perftools__profiles__profile__unpack(NULL, len, buf);
	raw = malloc(cap);
	cr_assert_not_null(raw);
	/* 32 + 15: detect the gzip wrapper, full window */
	cr_assert_eq(inflateInit2(&zs, 32 + 15), Z_OK);
	zs.next_in = (Bytef *)buf;
	zs.avail_in = len;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			raw = realloc(raw, cap);
			cr_assert_not_null(raw);
		}
		zs.next_out = raw + zs.total_out;
		zs.avail_out = cap - zs.total_out;
		ret = inflate(&zs, Z_NO_FLUSH);
		cr_assert(ret == Z_OK || ret == Z_STREAM_END, "inflate: %d", ret);
	} while (ret != Z_STREAM_END);
	pb = perftools__profiles__profile__unpack(NULL, zs.total_out, raw);
	inflateEnd(&zs);
	free(raw);
	return pb;
}

static const char *pp_str(const Perftools__Profiles__Profile *pb, int64_t i)
{
	cr_assert(i >= 0 && (size_t)i < pb->n_string_table,
		  "string index %lld out of range", (long long)i);
	return pb->string_table[i];
}

static const Perftools__Profiles__Location *
pp_location(const Perftools__Profiles__Profile *pb, uint64_t id)
{
	size_t i;

	for (i = 0; i < pb->n_location; i++)
		if (pb->location[i]->id == id)
			return pb->location[i];
	cr_assert_fail("no location %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Mapping *
pp_mapping(const Perftools__Profiles__Profile *pb, uint64_t id)
{
	size_t i;

	for (i = 0; i < pb->n_mapping; i++)
		if (pb->mapping[i]->id == id)
			return pb->mapping[i];
	cr_assert_fail("no mapping %llu", (unsigned long long)id);
	return NULL;
}

static const char *pp_func_name(const Perftools__Profiles__Profile *pb,
				uint64_t loc_id)
{
	const Perftools__Profiles__Location *l = pp_location(pb, loc_id);
	size_t i;

	cr_assert_eq(l->n_line, 1);
	for (i = 0; i < pb->n_function; i++) {
		const Perftools__Profiles__Function *f = pb->function[i];

		if (f->id == l->line[0]->function_id) {
			cr_assert_eq(f->system_name, f->name);
			return pp_str(pb, f->name);
		}
	}
	cr_assert_fail("no function %llu",
		       (unsigned long long)l->line[0]->function_id);
	return NULL;
}

/* The sample whose stack, leaf first and joined by ';', is want. */
static const Perftools__Profiles__Sample *
pp_find_sample(const Perftools__Profiles__Profile *pb, const char *want)
{
	char got[256];
	size_t i, j;

	for (i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];

		got[0] = '\0';
		for (j = 0; j < s->n_location_id; j++) {
			if (j)
				strcat(got, ";");
			strcat(got, pp_func_name(pb, s->location_id[j]));
		}
		if (!strcmp(got, want))
			return s;
	}
	cr_assert_fail("no sample %s", want);
	return NULL;
}

static void pp_check_sample(const Perftools__Profiles__Profile *pb,
			    const char *stack, int64_t count)
{
	const Perftools__Profiles__Sample *s = pp_find_sample(pb, stack);

	cr_assert_eq(s->n_value, 2);
	cr_assert_eq(s->value[0], count);
	cr_assert_eq(s->value[1], count * (int64_t)PERIOD);
}

Test(pprof, round_trip)
{
	struct profile *p = cpu_profile_sample();
	Perftools__Profiles__Profile *pb;
	const Perftools__Profiles__Sample *s;
	const Perftools__Profiles__Location *l;
	const Perftools__Profiles__Mapping *m;
	uint8_t *out;
	size_t len;

	cr_assert_eq(pprof__encode(p, &pp_meta, true, &out, &len), 0);
	cr_assert_gt(len, 18);
	cr_assert(out[0] == 0x1f && out[1] == 0x8b, "gzip magic");
	pb = pp_decode(out, len, true);
	cr_assert_not_null(pb);

	cr_assert_str_eq(pb->string_table[0], "");
	cr_assert_eq(pb->n_sample_type, 2);
	cr_assert_str_eq(pp_str(pb, pb->sample_type[0]->type), "samples");
	cr_assert_str_eq(pp_str(pb, pb->sample_type[0]->unit), "count");
	cr_assert_str_eq(pp_str(pb, pb->sample_type[1]->type), "cpu");
	cr_assert_str_eq(pp_str(pb, pb->sample_type[1]->unit), "nanoseconds");
	cr_assert_not_null(pb->period_type);
	cr_assert_str_eq(pp_str(pb, pb->period_type->type), "cpu");
	cr_assert_str_eq(pp_str(pb, pb->period_type->unit), "nanoseconds");
	cr_assert_eq(pb->period, (int64_t)PERIOD);
	cr_assert_eq(pb->time_nanos, T_START);
	cr_assert_eq(pb->duration_nanos, DURATION);

	cr_assert_eq(pb->n_sample, 3);
	cr_assert_eq(pb->n_location, 4);
	cr_assert_eq(pb->n_function, 4);
	cr_assert_eq(pb->n_mapping, 2);
	pp_check_sample(pb, "work;main;app", 3);
	pp_check_sample(pb, "do_syscall_64;work;main;app", 2);
	pp_check_sample(pb, "main;app", 1);

	/* the root frame: last, no mapping, no address */
	s = pp_find_sample(pb, "main;app");
	l = pp_location(pb, s->location_id[1]);
	cr_assert_eq(l->mapping_id, 0);
	cr_assert_eq(l->address, 0);
	/* a user frame keeps its address and file */
	l = pp_location(pb, s->location_id[0]);
	cr_assert_eq(l->address, 0x401000);
	m = pp_mapping(pb, l->mapping_id);
	cr_assert_str_eq(pp_str(pb, m->filename), "/usr/bin/app");
	cr_assert_str_eq(pp_str(pb, m->build_id), "deadbeef");
	cr_assert_eq(m->memory_start, 0x400000);
	cr_assert_eq(m->memory_limit, 0x500000);
	cr_assert_eq(m->file_offset, 0x1000);
	cr_assert(m->has_functions);
	/* a kernel frame */
	s = pp_find_sample(pb, "do_syscall_64;work;main;app");
	l = pp_location(pb, s->location_id[0]);
	cr_assert_eq(l->address, UNIT_KSTART + 0x100);
	m = pp_mapping(pb, l->mapping_id);
	cr_assert_str_eq(pp_str(pb, m->filename), "[kernel.kallsyms]");
	cr_assert_eq(m->build_id, 0);
	cr_assert_eq(m->memory_start, UNIT_KSTART);

	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	profile__free(p);
}

Test(pprof, plain_and_empty)
{
	struct profile *p = profile__new();
	Perftools__Profiles__Profile *pb;
	uint8_t *out;
	size_t len;

	cr_assert_not_null(p);
	cr_assert_eq(pprof__encode(p, &pp_meta, false, &out, &len), 0);
	pb = pp_decode(out, len, false);
	cr_assert_not_null(pb);
	cr_assert_eq(pb->n_sample, 0);
	cr_assert_eq(pb->n_location, 0);
	cr_assert_eq(pb->n_sample_type, 2);
	cr_assert_str_eq(pb->string_table[0], "");
	cr_assert_eq(pb->period, (int64_t)PERIOD);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	profile__free(p);
}

Test(pprof, value_saturates)
{
	struct frame f = { .kind = FRAME_ROOT, .name = "app" };
	struct profile *p = profile__new();
	struct pprof_meta meta = { .period_ns = 1000000000 };
	Perftools__Profiles__Profile *pb;
	uint8_t *out;
	size_t len;

	cr_assert_not_null(p);
	cr_assert_eq(profile__add(p, &f, 1, 1ULL << 40), 0);
	cr_assert_eq(pprof__encode(p, &meta, true, &out, &len), 0);
	pb = pp_decode(out, len, true);
	cr_assert_not_null(pb);
	cr_assert_eq(pb->n_sample, 1);
	cr_assert_eq(pb->sample[0]->value[0], 1LL << 40);
	cr_assert_eq(pb->sample[0]->value[1], INT64_MAX);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	profile__free(p);
}

Test(pprof, rejects_missing_meta)
{
	struct profile *p = profile__new();
	uint8_t *out;
	size_t len;

	cr_assert_not_null(p);
	cr_assert_eq(pprof__encode(p, NULL, true, &out, &len), -EINVAL);
	profile__free(p);
}

/* app;main (main.go:10);work (work.go:20) with helper (util.go:5)
 * inlined into work at the same address x4; app;main;lib.so+0x1200, a
 * frame no symbol named, x1. */
static struct profile *pp_source_profile(void)
{
	struct frame lib = app_frame("lib.so+0x1200", 0x7f0000001200);
	struct frame f[] = {
		{ .kind = FRAME_ROOT, .name = "app" },
		app_frame("main", 0x401000), app_frame("work", 0x401100),
		app_frame("helper", 0x401100),
	};
	struct profile *p = profile__new();

	f[1].file = "/src/main.go";
	f[1].line = 10;
	f[2].file = "/src/work.go";
	f[2].line = 20;
	f[3].file = "/src/util.go";
	f[3].line = 5;
	f[3].inlined = true;
	lib.map_file = "/usr/lib/lib.so";
	lib.map_build_id = NULL;
	lib.map_start = 0x7f0000000000;
	lib.map_limit = 0x7f0000100000;
	lib.map_offset = 0;
	lib.unnamed = true;
	cr_assert_not_null(p);
	cr_assert_eq(profile__add(p, f, 4, 4), 0);
	f[2] = lib;
	cr_assert_eq(profile__add(p, f, 3, 1), 0);
	return p;
}

static const Perftools__Profiles__Function *pp_function(const Perftools__Profiles__Profile *pb,
						       uint64_t id)
{
	for (size_t i = 0; i < pb->n_function; i++)
		if (pb->function[i]->id == id)
			return pb->function[i];
	cr_assert_fail("no function %llu", (unsigned long long)id);
	return NULL;
}

static void pp_check_line(const Perftools__Profiles__Profile *pb,
			  const Perftools__Profiles__Line *line, const char *name,
			  const char *file, int64_t lineno)
{
	const Perftools__Profiles__Function *f = pp_function(pb, line->function_id);

	cr_assert_str_eq(pp_str(pb, f->name), name);
	cr_assert_str_eq(pp_str(pb, f->filename), file);
	cr_assert_eq(line->line, lineno, "%s: line %lld", name, (long long)line->line);
}

/* Source positions: a function's file, each line's number; an inlined
 * frame is a line of its caller's location, innermost first; a mapping
 * with a frame no symbol named says it has not all its functions. */
Test(pprof, source_lines_inline_frames_and_unnamed)
{
	struct profile *p = pp_source_profile(), *back = profile__new();
	Perftools__Profiles__Profile *pb;
	const Perftools__Profiles__Sample *s = NULL;
	const Perftools__Profiles__Location *l;
	const Perftools__Profiles__Mapping *m;
	struct read_info info;
	uint8_t *out, *again;
	size_t len, again_len;
	char *text;

	cr_assert_eq(pprof__encode(p, &pp_meta, false, &out, &len), 0);
	pb = pp_decode(out, len, false);
	cr_assert_not_null(pb);
	cr_assert_eq(pb->n_sample, 2);
	cr_assert_eq(pb->n_location, 4, "helper+work share one location");
	for (size_t i = 0; i < pb->n_sample; i++)
		if (pb->sample[i]->value[0] == 4)
			s = pb->sample[i];
	cr_assert_not_null(s);
	cr_assert_eq(s->n_location_id, 3);
	l = pp_location(pb, s->location_id[0]);
	cr_assert_eq(l->address, 0x401100);
	cr_assert_eq(l->n_line, 2);
	pp_check_line(pb, l->line[0], "helper", "/src/util.go", 5);
	pp_check_line(pb, l->line[1], "work", "/src/work.go", 20);
	l = pp_location(pb, s->location_id[1]);
	cr_assert_eq(l->n_line, 1);
	pp_check_line(pb, l->line[0], "main", "/src/main.go", 10);
	m = pp_mapping(pb, l->mapping_id);
	cr_assert(m->has_functions && m->has_filenames && m->has_line_numbers &&
		  m->has_inline_frames);
	for (size_t i = 0; i < pb->n_mapping; i++)
		if (!strcmp(pp_str(pb, pb->mapping[i]->filename), "/usr/lib/lib.so"))
			m = pb->mapping[i];
	cr_assert_str_eq(pp_str(pb, m->filename), "/usr/lib/lib.so");
	cr_assert_not(m->has_functions, "a frame of lib.so went unnamed");
	cr_assert_not(m->has_line_numbers);

	/* read back: the same frames, so the same bytes encoded again */
	cr_assert_eq(profile__read(back, out, len, &test_limits, &info), 0, "%s", info.why);
	text = folded_text(back);
	cr_assert_str_eq(text, "app;main;lib.so+0x1200 1\napp;main;work;helper 4\n");
	cr_assert_eq(pprof__encode(back, &pp_meta, false, &again, &again_len), 0);
	cr_assert(again_len == len && !memcmp(again, out, len),
		  "pprof -> read -> pprof changed the profile");
	free(text);
	free(again);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	profile__free(back);
	profile__free(p);
}

/* What `go tool pprof -raw` prints of p, into text (cap bytes). HOME and
 * GOCACHE point into a temp dir so this works as root with no home and in
 * CI. */
static void go_pprof_raw(const struct profile *p, char *text, size_t cap)
{
	char dir[] = "/tmp/kiln-pprof-XXXXXX", path[64], cmd[512];
	size_t len, n;
	uint8_t *out;
	int status;
	FILE *f;

	cr_assert_eq(system("command -v go >/dev/null 2>&1"), 0,
		     "'go' not found: apt-get install -y golang-go");
	cr_assert_eq(pprof__encode(p, &pp_meta, true, &out, &len), 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cpu.pb.gz", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(out, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(out);

	snprintf(cmd, sizeof(cmd),
		 "HOME=%s GOCACHE=%s/gocache go tool pprof -raw %s 2>&1",
		 dir, dir, path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(text, 1, cap - 1, f);
	text[n] = '\0';
	status = pclose(f);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(status, 0, "go tool pprof failed:\n%s", text);
}

/* The real consumer: go tool pprof must parse the file and show every
 * function. */
Test(pprof, go_tool_pprof_reads_it, .timeout = 120)
{
	struct profile *p = cpu_profile_sample();
	static char text[65536];

	go_pprof_raw(p, text, sizeof(text));
	cr_assert_not_null(strstr(text, "samples/count cpu/nanoseconds"), "%s", text);
	cr_assert_not_null(strstr(text, "PeriodType: cpu nanoseconds"), "%s", text);
	cr_assert_not_null(strstr(text, "Period: 10101010"), "%s", text);
	cr_assert_not_null(strstr(text, "do_syscall_64"), "%s", text);
	cr_assert_not_null(strstr(text, " main"), "%s", text);
	cr_assert_not_null(strstr(text, " work"), "%s", text);
	cr_assert_not_null(strstr(text, " app"), "%s", text);
	cr_assert_not_null(strstr(text, "/usr/bin/app"), "%s", text);
	cr_assert_not_null(strstr(text, "[kernel.kallsyms]"), "%s", text);
	profile__free(p);
}

/* ... and its files and lines, the inlined frame under its caller. */
Test(pprof, go_tool_pprof_reads_source_lines, .timeout = 120)
{
	struct profile *p = pp_source_profile();
	static char text[65536];
	const char *helper, *work;

	go_pprof_raw(p, text, sizeof(text));
	helper = strstr(text, "helper /src/util.go:5");
	work = strstr(text, "work /src/work.go:20");
	cr_assert(helper && work && helper < work, "%s", text);
	cr_assert_not_null(strstr(text, "main /src/main.go:10"), "%s", text);
	cr_assert_not_null(strstr(text, "lib.so+0x1200"), "%s", text);
	profile__free(p);
}

/* A profile cut to its heaviest stacks keeps every sample: the rest are
 * one [other] stack. */
Test(pprof, top_folds_the_lightest_stacks_into_other)
{
	struct profile *p = profile__new(), *top;
	char name[16];
	uint64_t folded = 0;
	char *text;

	cr_assert_not_null(p);
	for (int i = 0; i < 5; i++) {
		struct frame f[] = { { .kind = FRAME_ROOT, .name = "app" }, app_frame(name, 0x401000 + i) };

		snprintf(name, sizeof(name), "f%d", i);
		cr_assert_eq(profile__add(p, f, 2, (uint64_t)(i + 1) * 10), 0);
	}
	cr_assert_eq(profile__stacks(p), 5);
	top = profile__top(p, 3, &folded);
	cr_assert_not_null(top);
	cr_assert_eq(profile__stacks(top), 3);
	cr_assert_eq(profile__total(top), profile__total(p));
	cr_assert_eq(folded, 10 + 20 + 30);
	text = folded_text(top);
	cr_assert_str_eq(text, "[other] 60\napp;f3 40\napp;f4 50\n");
	free(text);
	profile__free(top);
	top = profile__top(p, 10, &folded);
	cr_assert_eq(profile__stacks(top), 5);
	cr_assert_eq(folded, 0);
	profile__free(top);
	profile__free(p);
}

/* A name that is not UTF-8 (a process names itself, its files and its
 * symbols) is written with '?' for its bad bytes: protobuf strings are
 * UTF-8, and a consumer refuses the whole profile otherwise. */
Test(pprof, strings_are_written_as_valid_utf8)
{
	struct frame f[] = { { .kind = FRAME_ROOT, .name = "bad\xff\xfename" },
			     app_frame("caf\xc3\xa9_\xed\xa0\x80", 0x401000) };
	struct profile *p = profile__new();
	Perftools__Profiles__Profile *pb;
	bool root = false, func = false;
	uint8_t *out;
	size_t len;

	cr_assert_not_null(p);
	cr_assert_eq(profile__add(p, f, 2, 1), 0);
	cr_assert_eq(pprof__encode(p, &pp_meta, false, &out, &len), 0);
	pb = pp_decode(out, len, false);
	cr_assert_not_null(pb);
	for (size_t i = 0; i < pb->n_string_table; i++) {
		root |= !strcmp(pb->string_table[i], "bad??name");
		/* a surrogate's three bytes are not UTF-8; é is */
		func |= !strcmp(pb->string_table[i], "caf\xc3\xa9_???");
	}
	cr_assert(root && func);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	profile__free(p);
}
