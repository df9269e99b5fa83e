// SPDX-License-Identifier: BSD-2-Clause
/* OTLP profiles encoder: what kiln sends, unpacked again with protobuf-c
 * from the same .proto files, checked table by table. tests/e2e/agent.sh
 * decodes a real export with Python's protobuf as well. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp.h"
#include "otlp_profiles_service.pb-c.h"
#include "profile/otlp.h"
#include "rpc_status.pb-c.h"
#include "unit_helpers.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	ot_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary ot_dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile ot_profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample ot_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Location ot_location;

#define PERIOD   10101010ULL
#define T_START  1700000000123456789LL
#define DURATION 10000000000LL

static const struct otlp_meta ot_meta = {
	.period_ns = PERIOD, .time_nanos = T_START, .duration_nanos = DURATION,
	.scope_name = "kiln", .scope_version = "1.2.3",
};

static ot_request *ot_encode(const struct otlp_resource_profile *rp, size_t n)
{
	ot_request *req;
	uint8_t *out;
	size_t len;

	cr_assert_eq(otlp__encode(rp, n, &ot_meta, &out, &len), 0);
	req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, out);
	free(out);
	cr_assert_not_null(req, "protobuf-c cannot unpack what kiln encoded");
	cr_assert_not_null(req->dictionary);
	return req;
}

static void ot_free(ot_request *req)
{
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		req, NULL);
}

static const char *ot_str(const ot_dict *d, int32_t i)
{
	cr_assert(i >= 0 && (size_t)i < d->n_string_table, "string index %d out of range", i);
	return d->string_table[i];
}

/* The value of attribute key among indices (NULL: none), checking that
 * keys are unique there. */
static const char *ot_attr(const ot_dict *d, const int32_t *idx, size_t n, const char *key)
{
	const char *found = NULL;

	for (size_t i = 0; i < n; i++) {
		cr_assert(idx[i] > 0 && (size_t)idx[i] < d->n_attribute_table);
		if (strcmp(ot_str(d, d->attribute_table[idx[i]]->key_strindex), key))
			continue;
		cr_assert_null(found, "attribute %s twice", key);
		cr_assert_not_null(d->attribute_table[idx[i]]->value);
		found = d->attribute_table[idx[i]]->value->string_value;
	}
	return found;
}

static const char *ot_resource(const ot_request *req, size_t r, const char *key)
{
	const Opentelemetry__Proto__Resource__V1__Resource *res =
		req->resource_profiles[r]->resource;

	for (size_t i = 0; i < res->n_attributes; i++)
		if (!strcmp(res->attributes[i]->key, key))
			return res->attributes[i]->value->string_value;
	return NULL;
}

/* A sample's stack as "root;...;leaf" of its locations' lines, outermost
 * line of a location first (the order of kiln's folded stacks). */
static void ot_stack_text(const ot_dict *d, const ot_sample *s, char *buf, size_t cap)
{
	const Opentelemetry__Proto__Profiles__V1development__Stack *st;
	size_t pos = 0;

	cr_assert(s->stack_index > 0 && (size_t)s->stack_index < d->n_stack_table);
	st = d->stack_table[s->stack_index];
	buf[0] = '\0';
	for (size_t i = st->n_location_indices; i-- > 0;) {
		const ot_location *l;

		cr_assert(st->location_indices[i] > 0 &&
			  (size_t)st->location_indices[i] < d->n_location_table);
		l = d->location_table[st->location_indices[i]];
		cr_assert_gt(l->n_lines, 0);
		for (size_t k = l->n_lines; k-- > 0;) {
			const char *name = ot_str(
				d, d->function_table[l->lines[k]->function_index]->name_strindex);

			pos += (size_t)snprintf(buf + pos, cap - pos, "%s%s", pos ? ";" : "", name);
		}
	}
}

static const ot_sample *ot_sample_of(const ot_dict *d, const ot_profile *p, const char *stack)
{
	char text[512];

	for (size_t i = 0; i < p->n_samples; i++) {
		ot_stack_text(d, p->samples[i], text, sizeof(text));
		if (!strcmp(text, stack))
			return p->samples[i];
	}
	cr_assert_fail("no sample of stack %s", stack);
	return NULL;
}

/* Every table starts with its zero value; the profile says cpu/nanoseconds,
 * its period, start and duration; one value per stack, count x period;
 * stacks leaf first; the resource's attributes follow the semantic
 * conventions. */
Test(otlp, request_tables_values_and_attributes)
{
	struct profile *p = cpu_profile_sample();
	struct labels l = { 0 };
	struct otlp_resource_profile rp = { p, &l };
	const ot_sample *s;
	const ot_location *leaf;
	const ot_profile *prof;
	const ot_dict *d;
	ot_request *req;

	labels_of_pairs(&l, "service_name", "shop/web", "namespace", "shop", "pod", "web-1",
			"container", "web", "node", "n1", "env", "prod", "empty", "", NULL);
	req = ot_encode(&rp, 1);
	d = req->dictionary;
	cr_assert_str_eq(d->string_table[0], "");
	cr_assert(d->n_mapping_table > 1 && d->mapping_table[0]->filename_strindex == 0 &&
		  d->mapping_table[0]->memory_limit == 0);
	cr_assert(d->n_location_table > 1 && d->location_table[0]->n_lines == 0);
	cr_assert(d->n_function_table > 1 && d->function_table[0]->name_strindex == 0);
	cr_assert(d->n_attribute_table > 1 && d->attribute_table[0]->key_strindex == 0);
	cr_assert(d->n_stack_table > 1 && d->stack_table[0]->n_location_indices == 0);
	cr_assert(d->n_link_table == 1);

	cr_assert_eq(req->n_resource_profiles, 1);
	cr_assert_eq(req->resource_profiles[0]->n_scope_profiles, 1);
	cr_assert_str_eq(req->resource_profiles[0]->scope_profiles[0]->scope->name, "kiln");
	cr_assert_eq(req->resource_profiles[0]->scope_profiles[0]->n_profiles, 1);
	prof = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
	cr_assert_str_eq(ot_str(d, prof->sample_type->type_strindex), "cpu");
	cr_assert_str_eq(ot_str(d, prof->sample_type->unit_strindex), "nanoseconds");
	cr_assert_str_eq(ot_str(d, prof->period_type->type_strindex), "cpu");
	cr_assert_eq(prof->period, (int64_t)PERIOD);
	cr_assert_eq(prof->time_unix_nano, (uint64_t)T_START);
	cr_assert_eq(prof->duration_nano, (uint64_t)DURATION);
	cr_assert_eq(prof->profile_id.len, 16);
	cr_assert_eq(prof->n_samples, 3);

	s = ot_sample_of(d, prof, "app;main;work");
	cr_assert_eq(s->n_values, 1);
	cr_assert_eq(s->values[0], 3 * (int64_t)PERIOD);
	cr_assert_eq(s->n_timestamps_unix_nano, 0);
	cr_assert_str_eq(ot_attr(d, s->attribute_indices, s->n_attribute_indices,
				 "process.executable.name"), "app");
	s = ot_sample_of(d, prof, "app;main;work;do_syscall_64");
	cr_assert_eq(s->values[0], 2 * (int64_t)PERIOD);
	leaf = d->location_table[d->stack_table[s->stack_index]->location_indices[0]];
	cr_assert_eq(leaf->address, UNIT_KSTART + 0x100, "the leaf comes first");
	cr_assert_str_eq(ot_attr(d, leaf->attribute_indices, leaf->n_attribute_indices,
				 "profile.frame.type"), "kernel");
	leaf = d->location_table[d->stack_table[s->stack_index]->location_indices[1]];
	cr_assert_eq(leaf->address, 0x401100);
	cr_assert_str_eq(ot_attr(d, leaf->attribute_indices, leaf->n_attribute_indices,
				 "profile.frame.type"), "native");
	cr_assert_str_eq(ot_str(d, d->mapping_table[leaf->mapping_index]->filename_strindex),
			 "/usr/bin/app");
	cr_assert_eq(d->mapping_table[leaf->mapping_index]->memory_start, 0x400000);
	cr_assert_eq(d->mapping_table[leaf->mapping_index]->file_offset, 0x1000);
	cr_assert_str_eq(ot_attr(d, d->mapping_table[leaf->mapping_index]->attribute_indices,
				 d->mapping_table[leaf->mapping_index]->n_attribute_indices,
				 "process.executable.build_id.gnu"), "deadbeef");
	s = ot_sample_of(d, prof, "app;main");
	cr_assert_eq(s->values[0], (int64_t)PERIOD);

	cr_assert_str_eq(ot_resource(req, 0, "service.name"), "shop/web");
	cr_assert_str_eq(ot_resource(req, 0, "k8s.namespace.name"), "shop");
	cr_assert_str_eq(ot_resource(req, 0, "k8s.pod.name"), "web-1");
	cr_assert_str_eq(ot_resource(req, 0, "k8s.container.name"), "web");
	cr_assert_str_eq(ot_resource(req, 0, "host.name"), "n1");
	cr_assert_str_eq(ot_resource(req, 0, "k8s.node.name"), "n1");
	cr_assert_str_eq(ot_resource(req, 0, "env"), "prod");
	cr_assert_null(ot_resource(req, 0, "empty"), "an empty value is no attribute");
	cr_assert_null(ot_resource(req, 0, "service_name"));
	ot_free(req);
	labels__release(&l);
	profile__free(p);
}

/* Inlined frames are lines of their caller's location, innermost first;
 * the stack read back equals the profile's folded stacks. */
Test(otlp, inline_frames_are_lines_of_one_location)
{
	struct frame f[] = {
		{ .kind = FRAME_ROOT, .name = "app" },
		app_frame("main", 0x401000), app_frame("work", 0x401100), app_frame("helper", 0x401100),
	};
	struct otlp_resource_profile rp;
	const ot_location *l;
	const ot_sample *s;
	const ot_dict *d;
	struct profile *p = profile__new();
	ot_request *req;

	f[3].inlined = true;
	f[3].file = "/src/util.go";
	f[3].line = 5;
	cr_assert_eq(profile__add(p, f, 4, 4), 0);
	rp = (struct otlp_resource_profile){ p, NULL };
	req = ot_encode(&rp, 1);
	d = req->dictionary;
	s = ot_sample_of(d, req->resource_profiles[0]->scope_profiles[0]->profiles[0],
			 "app;main;work;helper");
	cr_assert_eq(d->stack_table[s->stack_index]->n_location_indices, 3);
	l = d->location_table[d->stack_table[s->stack_index]->location_indices[0]];
	cr_assert_eq(l->n_lines, 2);
	cr_assert_str_eq(ot_str(d, d->function_table[l->lines[0]->function_index]->name_strindex),
			 "helper");
	cr_assert_str_eq(
		ot_str(d, d->function_table[l->lines[0]->function_index]->filename_strindex),
		"/src/util.go");
	cr_assert_eq(l->lines[0]->line, 5);
	cr_assert_str_eq(ot_str(d, d->function_table[l->lines[1]->function_index]->name_strindex),
			 "work");
	ot_free(req);
	profile__free(p);
}

/* Two profiles of one request share the dictionary: the same frames are
 * one function, one location and one stack. */
Test(otlp, one_dictionary_without_duplicates)
{
	struct profile *a = cpu_profile_sample(), *b = cpu_profile_sample();
	struct labels la = { 0 }, lb = { 0 };
	struct otlp_resource_profile rp[2] = { { a, &la }, { b, &lb } };
	const ot_profile *pa, *pb;
	const ot_dict *d;
	ot_request *req;

	labels_of_pairs(&la, "service_name", "a", NULL);
	labels_of_pairs(&lb, "service_name", "b", NULL);
	req = ot_encode(rp, 2);
	d = req->dictionary;
	cr_assert_eq(req->n_resource_profiles, 2);
	cr_assert_str_eq(ot_resource(req, 0, "service.name"), "a");
	cr_assert_str_eq(ot_resource(req, 1, "service.name"), "b");
	cr_assert_eq(d->n_function_table, 1 + 4, "app, main, work, do_syscall_64");
	cr_assert_eq(d->n_stack_table, 1 + 3);
	cr_assert_eq(d->n_mapping_table, 1 + 2);
	for (size_t i = 0; i < d->n_string_table; i++)
		for (size_t j = i + 1; j < d->n_string_table; j++)
			cr_assert_str_neq(d->string_table[i], d->string_table[j]);
	pa = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
	pb = req->resource_profiles[1]->scope_profiles[0]->profiles[0];
	cr_assert(pa->n_samples == 3 && pb->n_samples == 3);
	cr_assert_eq(ot_sample_of(d, pa, "app;main")->stack_index,
		     ot_sample_of(d, pb, "app;main")->stack_index);
	cr_assert(memcmp(pa->profile_id.data, pb->profile_id.data, 16), "profile ids unique");
	ot_free(req);
	labels__release(&la);
	labels__release(&lb);
	profile__free(a);
	profile__free(b);
}

/* A stack's own labels (a FRAME_LABELS frame) are sample attributes, named
 * as resources' are; a process name that is not UTF-8 is sent with '?'. */
Test(otlp, stack_labels_are_sample_attributes_and_strings_utf8)
{
	struct frame f[] = {
		{ .kind = FRAME_LABELS, .name = "namespace\x1f" "ns1\x1f" "team\x1f" "db\x1f" },
		{ .kind = FRAME_ROOT, .name = "bad\xff" "name" },
		app_frame("main", 0x401000),
	};
	struct profile *p = profile__new();
	struct otlp_resource_profile rp = { p, NULL };
	const ot_sample *s;
	const ot_dict *d;
	ot_request *req;

	cr_assert_eq(profile__add(p, f, 3, 7), 0);
	req = ot_encode(&rp, 1);
	d = req->dictionary;
	s = ot_sample_of(d, req->resource_profiles[0]->scope_profiles[0]->profiles[0],
			 "bad?name;main");
	cr_assert_eq(s->values[0], 7 * (int64_t)PERIOD);
	cr_assert_str_eq(ot_attr(d, s->attribute_indices, s->n_attribute_indices,
				 "k8s.namespace.name"), "ns1");
	cr_assert_str_eq(ot_attr(d, s->attribute_indices, s->n_attribute_indices, "team"), "db");
	cr_assert_str_eq(ot_attr(d, s->attribute_indices, s->n_attribute_indices,
				 "process.executable.name"), "bad?name");
	ot_free(req);
	profile__free(p);
}

/* OTLP 1.10 carries Sample.values in field 4 (1.9: field 2, where 1.10
 * has attribute_indices): the bytes kiln sends say so. */
Test(otlp, sample_values_are_field_4)
{
	Opentelemetry__Proto__Profiles__V1development__Sample s =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT;
	int64_t v = 5;
	uint8_t buf[16];
	size_t len;

	s.values = &v;
	s.n_values = 1;
	len = opentelemetry__proto__profiles__v1development__sample__pack(&s, buf);
	cr_assert_eq(len, 3);
	cr_assert_eq(buf[0], 4 << 3 | 2, "values: field 4, packed (length-delimited)");
	cr_assert_eq(buf[1], 1);
	cr_assert_eq(buf[2], 5);
}

Test(otlp, attribute_names)
{
	cr_assert_str_eq(otlp__attribute_name("service_name"), "service.name");
	cr_assert_str_eq(otlp__attribute_name("container_id"), "container.id");
	cr_assert_str_eq(otlp__attribute_name("systemd_unit"), "systemd_unit");
}

/* ---- OTLP/HTTP (export/otlp.c) ---- */

Test(otlp_http, url_appends_the_profiles_path_once)
{
	static const char *const cases[][2] = {
		{ "http://c:4318", "http://c:4318/v1development/profiles" },
		{ "http://c:4318/", "http://c:4318/v1development/profiles" },
		{ "https://p/otlp//", "https://p/otlp/v1development/profiles" },
		{ "http://c:4318/v1development/profiles", "http://c:4318/v1development/profiles" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *url = NULL;

		cr_assert_eq(otlp__url(cases[i][0], &url), 0);
		cr_assert_str_eq(url, cases[i][1]);
		free(url);
	}
}

/* OTLP/HTTP's table: 429, 502, 503, 504 and no answer retried; every
 * other 4xx and 5xx never (a 500 or 408 too, unlike the push). */
Test(otlp_http, which_answers_are_retried)
{
	static const long retried[] = { 429, 502, 503, 504 };
	static const long refused[] = { 400, 404, 408, 413, 415, 500, 501, 505 };

	cr_assert_eq(otlp__classify(0, 200, false), SENDER_DELIVERED);
	cr_assert_eq(otlp__classify(-110, 0, false), SENDER_RETRY);
	for (size_t i = 0; i < sizeof(retried) / sizeof(*retried); i++)
		cr_assert_eq(otlp__classify(0, retried[i], false), SENDER_RETRY, "%ld", retried[i]);
	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
		cr_assert_eq(otlp__classify(0, refused[i], false), SENDER_REFUSED, "%ld",
			     refused[i]);
	cr_assert_eq(otlp__classify(0, 401, false), SENDER_REFUSED);
	cr_assert_eq(otlp__classify(0, 401, true), SENDER_RETRY, "rotated credentials");
}

Test(otlp_http, partial_success_and_status_are_read)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse r =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
	uint8_t buf[256] = { 0 };
	char msg[64];
	size_t len;

	/* an empty body is a full success */
	cr_assert_eq(otlp__refused(buf, 0, 3, msg, sizeof(msg)), 0);
	ps.rejected_profiles = 1;
	ps.error_message = "too\nold";
	r.partial_success = &ps;
	len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(
		&r, buf);
	cr_assert_eq(otlp__refused(buf, len, 3, msg, sizeof(msg)), 1);
	cr_assert_str_eq(msg, "too old");
	ps.rejected_profiles = 99;
	len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(
		&r, buf);
	cr_assert_eq(otlp__refused(buf, len, 3, msg, sizeof(msg)), 3, "at most what was sent");
	ps.rejected_profiles = -4;
	len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(
		&r, buf);
	cr_assert_eq(otlp__refused(buf, len, 3, msg, sizeof(msg)), 0);
	/* garbage: nothing refused, said so */
	cr_assert_eq(otlp__refused((const uint8_t *)"\xff\xff\xff", 3, 3, msg, sizeof(msg)), 0);
	cr_assert_str_eq(msg, "the answer is no ExportProfilesServiceResponse");

	st.code = 3;
	st.message = "bad sample";
	len = google__rpc__status__pack(&st, buf);
	otlp__status_message(buf, len, msg, sizeof(msg));
	cr_assert_str_eq(msg, "bad sample");
	otlp__status_message((const uint8_t *)"<html>oops\n<body>", 17, msg, sizeof(msg));
	cr_assert_str_eq(msg, "<html>oops");
}
