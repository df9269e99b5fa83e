// SPDX-License-Identifier: BSD-2-Clause
/* Reading profiles: folded text, pprof from kiln and from Go's runtime,
 * hand-made pprof (inlined lines, roots, kernel addresses), and bad input
 * that must give one clear error. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "profile/profile.h"
#include "unit_helpers.h"

/* profile__read of text into a fresh profile; returns the error. */
static int read_err(const char *text, size_t len, const struct read_limits *lim,
		    struct read_info *info)
{
	struct profile *p = profile__new();
	int err;

	cr_assert_not_null(p);
	err = profile__read(p, (const uint8_t *)text, len, lim, info);
	profile__free(p);
	return err;
}

Test(read_folded, round_trip_is_exact)
{
	static const char text[] =
		"app;main 1\n"
		"app;main;work 3\n"
		"app;main;work;do_syscall_64_[k] 2\n"
		"bash;main 4\n";
	struct profile *p = profile_of(text);
	char *out = folded_text(p);

	cr_assert_str_eq(out, text);
	cr_assert_eq(profile__total(p), 10);
	free(out);
	profile__free(p);
}

Test(read_folded, lenient_where_flamegraph_is)
{
	/* CRLF, blank lines, trailing blanks, spaces inside names, empty
	 * frames, a zero count, no final newline; the same stack twice adds */
	static const char text[] =
		"app;operator new(unsigned long);ext4_write [ext4]_[k] 5\r\n"
		"\n"
		"   \n"
		"app;;main 2  \n"
		"app;main 3\n"
		"app;idle 0\n"
		"app;main 1";
	struct profile *p = profile_of(text);
	char *out = folded_text(p);

	cr_assert_str_eq(out,
			 "app;main 6\n"
			 "app;operator new(unsigned long);ext4_write [ext4]_[k] 5\n");
	free(out);
	profile__free(p);
}

Test(read_folded, junk_lines_refuse_the_file_with_the_line_number)
{
	static const struct { const char *text, *why; } bad[] = {
		{ "app;main 1\nthis is not a profile\n", "line 2: no sample count at the end" },
		{ "app;main 1\napp;main\n", "line 2: no sample count at the end" },
		{ "app;main 1x\n", "line 1: no sample count at the end" },
		{ "app;main -3\n", "line 1: no sample count at the end" },
		{ "app;main 99999999999999999999\n", "line 1: no sample count at the end" },
		{ "12\n", "line 1: no sample count at the end" },
		{ ";; 4\n", "line 1: no frames" },
	};
	struct read_info info;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = read_err(bad[i].text, strlen(bad[i].text), &test_limits, &info);

		cr_assert_eq(err, -EINVAL, "'%s': %d", bad[i].text, err);
		cr_assert_str_eq(info.why, bad[i].why, "'%s'", bad[i].text);
	}
}

/* Text is sniffed in the first 4096 bytes; a NUL further on would have cut
 * a frame name short (or left it empty) and broken the folded round trip:
 * found by tests/fuzz/folded_read. */
Test(read_folded, a_nul_byte_past_the_sniff_refuses_the_file)
{
	char text[5000];
	struct read_info info;
	size_t n = 0;

	while (n < 4200) {
		memcpy(text + n, "app;main 1\n", 11);
		n += 11;
	}
	memcpy(text + n, "app;\0x;main 2\n", 15);
	n += 15;
	cr_assert_eq(read_err(text, n, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "line 383: a NUL byte");
}

Test(read_folded, empty_input_is_an_empty_profile)
{
	struct profile *p = profile_of("");

	cr_assert_eq(profile__total(p), 0);
	cr_assert_eq(profile__nodes(p), 1);
	profile__free(p);
}

Test(read_folded, kernel_frames_keep_their_kind_through_pprof)
{
	struct pprof_meta meta = { .period_ns = 0 };
	struct profile *p = profile_of("app;read;vfs_read_[k] 7\n"), *back;
	struct read_info info;
	uint8_t *buf;
	size_t len;
	char *out;

	cr_assert_eq(pprof__encode(p, &meta, true, &buf, &len), 0);
	back = profile__new();
	cr_assert_not_null(back);
	cr_assert_eq(profile__read(back, buf, len, &test_limits, &info), 0, "%s", info.why);
	cr_assert_str_eq(info.type, "samples");
	cr_assert_str_eq(info.unit, "count");
	cr_assert_eq(info.period_ns, 0);
	out = folded_text(back);
	cr_assert_str_eq(out, "app;read;vfs_read_[k] 7\n");
	free(out);
	free(buf);
	profile__free(back);
	profile__free(p);
}

Test(read_limits, nodes_and_bytes)
{
	static const char text[] = "a;b;c;d;e;f;g;h;i;j;k;l;m;n;o;p;q;r;s;t 1\n";
	struct read_limits small = { .max_bytes = 16, .max_nodes = 1000 };
	struct read_limits few = { .max_bytes = 1 << 20, .max_nodes = 16 };
	struct read_info info;

	cr_assert_eq(read_err(text, strlen(text), &small, &info), -EFBIG);
	cr_assert_not_null(strstr(info.why, "--max-input"), "%s", info.why);
	cr_assert_eq(read_err(text, strlen(text), &few, &info), -E2BIG);
	cr_assert_not_null(strstr(info.why, "--max-nodes"), "%s", info.why);
}

/* gzip of buf, for pprof files and for a gzip bomb. */
static uint8_t *gz(const void *buf, size_t len, size_t *out_len)
{
	uLong cap = compressBound(len) + 32;
	uint8_t *out = malloc(cap);
	z_stream zs = { 0 };

	cr_assert_not_null(out);
	cr_assert_eq(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)buf;
	zs.avail_in = len;
	zs.next_out = out;
	zs.avail_out = cap;
	cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

Test(read_limits, gzip_bomb_stops_at_the_limit)
{
	size_t big = 8 << 20, len;
	char *zeros = calloc(1, big);
	uint8_t *bomb;
	struct read_limits lim = { .max_bytes = 1 << 20, .max_nodes = 1000 };
	struct read_info info;

	cr_assert_not_null(zeros);
	bomb = gz(zeros, big, &len);
	cr_assert_lt(len, lim.max_bytes);
	cr_assert_eq(read_err((const char *)bomb, len, &lim, &info), -EFBIG);
	cr_assert_not_null(strstr(info.why, "after gunzip"), "%s", info.why);
	free(bomb);
	free(zeros);
}

/* ---- pprof ---- */

/* A hand-made pprof: strings, one mapping, functions, locations with the
 * given lines, and samples; each array is terminated by a zero id. */
struct pb_fixture {
	const char *strings[16];
	uint64_t loc_addr[4], loc_map[4];
	uint64_t loc_lines[4][3];       /* function ids, innermost first */
	uint64_t stacks[3][5];          /* location ids, leaf first */
	int64_t values[3][2];
};

static uint8_t *pb_pack(const struct pb_fixture *fx, size_t *len)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2], *vtp[2];
	Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
	Perftools__Profiles__Function fn[8], *fnp[8];
	Perftools__Profiles__Location loc[4], *locp[4];
	Perftools__Profiles__Line line[4][3], *linep[4][3];
	Perftools__Profiles__Sample smp[3], *smpp[3];
	uint64_t stacks[3][5];
	int64_t values[3][2];
	size_t i, j, n;
	uint8_t *out;

	for (n = 0; fx->strings[n]; n++)
		;
	prof.string_table = (char **)fx->strings;
	prof.n_string_table = n;
	for (i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = i ? 3 : 1;         /* "samples" "count", "cpu" "ns" */
		vt[i].unit = i ? 4 : 2;
		vtp[i] = &vt[i];
	}
	prof.sample_type = vtp;
	prof.n_sample_type = 2;
	map.id = 1;
	map.memory_start = 0x400000;
	map.memory_limit = 0x500000;
	map.file_offset = 0x1000;
	map.filename = 5;               /* "/usr/bin/app" */
	prof.mapping = &mapp;
	prof.n_mapping = 1;
	for (i = 0; i < 8; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = 6 + i;     /* strings 6.. name the functions */
		fnp[i] = &fn[i];
	}
	prof.function = fnp;
	for (n = 0; n < 8 && fx->strings[6 + n]; n++)
		;
	prof.n_function = n;
	for (i = 0; i < 4 && fx->loc_addr[i] + fx->loc_lines[i][0] + fx->loc_map[i]; i++) {
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = i + 1;
		loc[i].address = fx->loc_addr[i];
		loc[i].mapping_id = fx->loc_map[i];
		for (j = 0; j < 3 && fx->loc_lines[i][j]; j++) {
			perftools__profiles__line__init(&line[i][j]);
			line[i][j].function_id = fx->loc_lines[i][j];
			linep[i][j] = &line[i][j];
		}
		loc[i].line = linep[i];
		loc[i].n_line = j;
		locp[i] = &loc[i];
	}
	prof.location = locp;
	prof.n_location = i;
	memcpy(stacks, fx->stacks, sizeof(stacks));
	memcpy(values, fx->values, sizeof(values));
	for (i = 0; i < 3 && fx->stacks[i][0]; i++) {
		perftools__profiles__sample__init(&smp[i]);
		for (j = 0; j < 5 && fx->stacks[i][j]; j++)
			;
		smp[i].location_id = stacks[i];
		smp[i].n_location_id = j;
		smp[i].value = values[i];
		smp[i].n_value = 2;
		smpp[i] = &smp[i];
	}
	prof.sample = smpp;
	prof.n_sample = i;
	*len = perftools__profiles__profile__get_packed_size(&prof);
	out = malloc(*len);
	cr_assert_not_null(out);
	perftools__profiles__profile__pack(&prof, out);
	return out;
}

static const struct pb_fixture inline_fx = {
	.strings = { "", "samples", "count", "cpu", "nanoseconds", "/usr/bin/app",
		     "app", "main", "parse", "lex", "ksys_read" },
	/* 1: the root (no mapping, no address); 2: main; 3: lex inlined into
	 * parse; 4: a kernel address; */
	.loc_addr = { 0, 0x401000, 0x402000, 0xffffffff81001234ull },
	.loc_map = { 0, 1, 1, 0 },
	.loc_lines = { { 1 }, { 2 }, { 4, 3 }, { 5 } },
	.stacks = { { 3, 2, 1 }, { 4, 3, 2, 1 }, { 2, 1 } },
	.values = { { 5, 50 }, { 2, 20 }, { 0, 0 } },
};

Test(read_pprof, inline_lines_root_and_kernel)
{
	struct profile *p = profile__new();
	struct read_info info;
	uint8_t *buf;
	size_t len;
	char *out;

	cr_assert_not_null(p);
	buf = pb_pack(&inline_fx, &len);
	cr_assert_eq(profile__read(p, buf, len, &test_limits, &info), 0, "%s", info.why);
	cr_assert_str_eq(info.type, "samples");
	cr_assert_eq(info.skipped, 1);  /* the sample of value 0 */
	out = folded_text(p);
	/* parse is the caller of the inlined lex; a high address is kernel */
	cr_assert_str_eq(out,
			 "app;main;parse;lex 5\n"
			 "app;main;parse;lex;ksys_read_[k] 2\n");
	free(out);
	free(buf);
	profile__free(p);
}

Test(read_pprof, kiln_round_trip_keeps_stacks_and_period)
{
	static const char text[] =
		"app;main 1\n"
		"app;main;work 3\n"
		"app;main;work;do_syscall_64_[k] 2\n";
	struct pprof_meta meta = { .period_ns = 10309278, .time_nanos = 1700000000000000000,
				   .duration_nanos = 5000000000 };
	struct profile *p = profile_of(text), *back = profile__new();
	struct read_info info;
	uint8_t *buf;
	size_t len;
	char *out;

	cr_assert_eq(pprof__encode(p, &meta, false, &buf, &len), 0);
	cr_assert_eq(profile__read(back, buf, len, &test_limits, &info), 0, "%s", info.why);
	cr_assert_eq(info.period_ns, 10309278);
	cr_assert_eq(info.time_nanos, 1700000000000000000);
	cr_assert_eq(info.duration_nanos, 5000000000);
	out = folded_text(back);
	cr_assert_str_eq(out, text);
	free(out);
	free(buf);
	profile__free(back);
	profile__free(p);
}

/* latest.html merges the interval's profiles in memory, each under its
 * labels: the same stacks as reading back their labeled pprof files. */
Test(read_pprof, merge_under_labels_is_what_the_labeled_file_reads_back_as)
{
	static const char *const sets[2][2] = { { "service_name", "web" }, { "service_name", "db" } };
	static const char *const texts[2] = { "app;main;work 3\napp;main 1\n",
					      "db;main;scan 2\ndb;main;work_[k] 5\n" };
	struct profile *back = profile__new(), *merged = profile__new();
	char label_text[256], *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	FILE *fa, *fb;

	for (int i = 0; i < 2; i++) {
		struct profile *p = profile_of(texts[i]);
		struct labels l = { 0 };
		struct pprof_meta meta = { .period_ns = 10309278, .labels = &l };
		struct frame top = { .kind = FRAME_LABELS, .name = label_text };
		struct read_info info;
		uint8_t *buf;
		size_t len;

		labels_of_array(&l, sets[i], 1);
		cr_assert_eq(pprof__encode(p, &meta, true, &buf, &len), 0);
		cr_assert_eq(profile__read(back, buf, len, &test_limits, &info), 0, "%s", info.why);
		cr_assert_geq(labels__to_text(&l, label_text, sizeof(label_text)), 0);
		cr_assert_eq(profile__merge_under(merged, p, &top), 0);
		free(buf);
		labels__release(&l);
		profile__free(p);
	}
	/* (folded with its label frames) */
	fa = open_memstream(&a, &alen);
	fb = open_memstream(&b, &blen);
	cr_assert(fa && fb);
	cr_assert_eq(folded__write(back, true, fa), 0);
	cr_assert_eq(folded__write(merged, true, fb), 0);
	cr_assert_eq(fclose(fa) | fclose(fb), 0);
	cr_assert_str_eq(b, a);
	cr_assert(strstr(b, "{service_name=db};db;main;work_[k] 5\n"), "%s", b);
	free(a);
	free(b);
	profile__free(back);
	profile__free(merged);
}

Test(read_pprof, broken_messages_give_one_reason)
{
	struct pb_fixture fx = inline_fx;
	struct read_info info;
	uint8_t *buf, *zipped;
	size_t len, zlen;

	/* a truncated message, then a truncated gzip of a good one */
	buf = pb_pack(&fx, &len);
	cr_assert_eq(read_err((const char *)buf, len - 3, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "truncated or invalid protobuf");
	zipped = gz(buf, len, &zlen);
	cr_assert_eq(read_err((const char *)zipped, zlen - 12, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "truncated gzip data");
	free(zipped);
	free(buf);

	/* a sample naming a location that does not exist */
	fx.stacks[0][0] = 9;
	buf = pb_pack(&fx, &len);
	cr_assert_eq(read_err((const char *)buf, len, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "sample 0 names location 9, which does not exist");
	free(buf);

	/* a line naming a function that does not exist */
	fx = inline_fx;
	fx.loc_lines[1][0] = 7;
	buf = pb_pack(&fx, &len);
	cr_assert_eq(read_err((const char *)buf, len, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "location 2 names function 7, which does not exist");
	free(buf);

	/* names beyond the end of the string table */
	fx = inline_fx;
	fx.strings[5] = NULL;
	buf = pb_pack(&fx, &len);
	cr_assert_eq(read_err((const char *)buf, len, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "a function names string 6 of 5");
	free(buf);
}

Test(read_pprof, binary_garbage_is_not_a_profile)
{
	static const char junk[] = "\x01\x02\x03\xff\xfe garbage \x00\x07";
	struct read_info info;

	cr_assert_eq(read_err(junk, sizeof(junk) - 1, &test_limits, &info), -EINVAL);
	cr_assert_str_eq(info.why, "truncated or invalid protobuf");
}

/* Another producer: Go's runtime/pprof, through go test -cpuprofile on
 * tests/fixtures/gocpu, where hotLoop burns three times coldLoop's CPU. */
Test(read_pprof, go_test_cpuprofile, .timeout = 300)
{
	char dir[] = "/tmp/kiln-gocpu-XXXXXX", cmd[1024], path[64];
	const struct func_change *ch;
	struct profile *p = profile__new(), *none = profile_of("x 1\n");
	struct profile_diff *d;
	struct read_info info;
	double hot = -1, cold = -1;
	size_t n;

	cr_assert_eq(system("command -v go >/dev/null 2>&1"), 0,
		     "'go' not found: apt-get install -y golang-go");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "cd tests/fixtures/gocpu && HOME=%s GOCACHE=%s/gocache GOFLAGS= "
		 "go test -count=1 -run TestBurn -o %s/gocpu.test -cpuprofile %s/cpu.pprof "
		 ". >%s/go.log 2>&1", dir, dir, dir, dir, dir);
	cr_assert_eq(system(cmd), 0, "go test failed: see %s/go.log", dir);
	snprintf(path, sizeof(path), "%s/cpu.pprof", dir);
	cr_assert_eq(profile__read_file(p, path, &test_limits, &info), 0, "%s", info.why);
	cr_assert_str_eq(info.type, "samples");
	cr_assert_str_eq(info.unit, "count");
	cr_assert_eq(info.period_ns, 10000000);         /* Go samples at 100 Hz */
	cr_assert_gt(info.time_nanos, 0);
	cr_assert_geq(profile__total(p), 50, "only %llu samples",
		      (unsigned long long)profile__total(p));

	/* the shares, through the diff against an unrelated profile */
	d = profile_diff__new(none, p);
	cr_assert_not_null(d);
	ch = profile_diff__changes(d, &n);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(ch[i].name, "kilnfixture.hotLoop"))
			hot = ch[i].total_new;
		if (!strcmp(ch[i].name, "kilnfixture.coldLoop"))
			cold = ch[i].total_new;
		if (!strcmp(ch[i].name, "kilnfixture.hotLoop"))       /* the test binary */
			cr_assert(strlen(ch[i].module) > 5 &&
				  !strcmp(ch[i].module + strlen(ch[i].module) - 5, ".test"),
				  "module '%s'", ch[i].module);
	}
	cr_assert(hot > 0 && cold > 0, "hotLoop %.1f%%, coldLoop %.1f%%", hot, cold);
	cr_assert(hot / (hot + cold) > 0.6 && hot / (hot + cold) < 0.9,
		  "hotLoop %.1f%% vs coldLoop %.1f%%: not about 3:1", hot, cold);
	profile_diff__free(d);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	profile__free(none);
	profile__free(p);
}
