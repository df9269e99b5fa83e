// SPDX-License-Identifier: BSD-2-Clause
/* The Pyroscope encoders, decoded the way the server decodes them: the
 * push request with the protobuf-c unpackers, the /ingest URL with a query
 * parser and a name parser that follow Pyroscope's rules (Go's query
 * decoding; the segment key grammar `app{key=value,...}` with no escape
 * mechanism, values ending at ',' or '}', names trimmed). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/pyroscope.h"
#include "push.pb-c.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"
#include "unit_helpers.h"

/* ---- push request ---- */

static Push__V1__PushRequest *push_decode(const struct pyroscope_series *s, size_t n)
{
	Push__V1__PushRequest *req;
	uint8_t *buf = NULL;
	size_t len = 0;

	cr_assert_eq(pyroscope__push_request(s, n, &buf, &len), 0);
	cr_assert_not_null(buf);
	req = push__v1__push_request__unpack(NULL, len, buf);
	cr_assert_not_null(req, "the push request does not decode");
	/* Nothing after the message, nothing missing: it re-encodes to len. */
	cr_assert_eq(push__v1__push_request__get_packed_size(req), len);
	free(buf);
	return req;
}

/* The series' labels as "name=value,name=value" in wire order. */
static void wire_text(const Push__V1__RawProfileSeries *s, char *out, size_t size)
{
	size_t pos = 0;

	out[0] = '\0';
	for (size_t i = 0; i < s->n_labels && pos < size; i++)
		pos += (size_t)snprintf(out + pos, size - pos, "%s%s=%s", i ? "," : "",
					s->labels[i]->name, s->labels[i]->value);
}

static bool is_uuid4(const char *id)
{
	if (strlen(id) != 36)
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? id[i] != '-' : !isxdigit((unsigned char)id[i]) ||
		    isupper((unsigned char)id[i]))
			return false;
	}
	return id[14] == '4' && strchr("89ab", id[19]);
}

Test(pyroscope_push, one_series_per_label_set_in_documented_order)
{
	struct labels web = { 0 }, db = { 0 };
	/* Binary pprof stand-ins: NULs, high bytes, different lengths. */
	static const uint8_t pprof_web[] = { 0x1f, 0x8b, 0x00, 0xff, 0x00, 0x7f, 0x80, 0x01 };
	static const uint8_t pprof_db[] = { 0x00, 0x00, 0x0a };
	Push__V1__PushRequest *req;
	char text[1024];

	labels_of_pairs(&web, "service_name", "shop/web", "namespace", "shop", "pod", "web-1",
			"__meta_hidden", "x", "__name__", "forged", "node", "n1", NULL);
	labels_of_pairs(&db, "service_name", "db", "team", "a,b", NULL);
	struct pyroscope_series s[] = {
		{ &web, pprof_web, sizeof(pprof_web) },
		{ &db, pprof_db, sizeof(pprof_db) },
	};
	req = push_decode(s, 2);
	cr_assert_eq(req->n_series, 2);
	/* __name__ and service_name first, then the label set in its
	 * canonical (name) order, every other __ label gone. */
	wire_text(req->series[0], text, sizeof(text));
	cr_assert_str_eq(text, "__name__=process_cpu,service_name=shop/web,namespace=shop,"
			       "node=n1,pod=web-1");
	wire_text(req->series[1], text, sizeof(text));
	cr_assert_str_eq(text, "__name__=process_cpu,service_name=db,team=a,b");
	for (size_t i = 0; i < 2; i++) {
		const Push__V1__RawProfileSeries *se = req->series[i];

		cr_assert_eq(se->n_samples, 1);
		cr_assert_eq(se->samples[0]->raw_profile.len, s[i].len);
		cr_assert_eq(memcmp(se->samples[0]->raw_profile.data, s[i].pprof, s[i].len), 0,
			     "series %zu: the pprof bytes changed", i);
		cr_assert(is_uuid4(se->samples[0]->id), "not a UUID v4: '%s'", se->samples[0]->id);
	}
	cr_assert_str_neq(req->series[0]->samples[0]->id, req->series[1]->samples[0]->id);
	push__v1__push_request__free_unpacked(req, NULL);
	labels__release(&web);
	labels__release(&db);
}

Test(pyroscope_push, label_names_are_sanitized)
{
	struct labels l = { 0 };
	Push__V1__PushRequest *req;
	char text[1024];

	labels_of_pairs(&l, "service_name", "svc", "app.kubernetes.io/name", "web",
			"1st", "one", "pod-template-hash", "abc", "caf\xc3\xa9", "v", NULL);
	struct pyroscope_series s = { &l, (const uint8_t *)"p", 1 };
	req = push_decode(&s, 1);
	wire_text(req->series[0], text, sizeof(text));
	/* Canonical order is by the original names; values untouched. */
	cr_assert_str_eq(text, "__name__=process_cpu,service_name=svc,_st=one,"
			       "app_kubernetes_io_name=web,caf__=v,pod_template_hash=abc");
	push__v1__push_request__free_unpacked(req, NULL);
	labels__release(&l);
}

Test(pyroscope_push, sizes_and_bounds)
{
	struct labels l = { 0 };
	char names[40][16], values[40][16], longname[2001];
	Push__V1__PushRequest *req;
	uint8_t *big = malloc(1 << 20);
	const char *a[80];

	cr_assert_not_null(big);
	for (size_t i = 0; i < 1u << 20; i++)
		big[i] = (uint8_t)(i * 7 + 3);
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "k%02d", i);
		snprintf(values[i], sizeof(values[i]), "v%d", i);
		a[2 * i] = names[i];
		a[2 * i + 1] = values[i];
	}
	labels_of_array(&l, a, 40);
	struct pyroscope_series s = { &l, big, 1 << 20 };

	req = push_decode(&s, 1);
	/* Pyroscope's bound: 30 labels a series, __name__ included. */
	cr_assert_eq(req->series[0]->n_labels, 30);
	cr_assert_str_eq(req->series[0]->labels[1]->name, "service_name");
	cr_assert_str_eq(req->series[0]->labels[1]->value, PYROSCOPE_UNKNOWN_SERVICE);
	cr_assert_str_eq(req->series[0]->labels[29]->name, "k27");
	cr_assert_eq(req->series[0]->samples[0]->raw_profile.len, 1u << 20);
	cr_assert_eq(memcmp(req->series[0]->samples[0]->raw_profile.data, big, 1 << 20), 0);
	push__v1__push_request__free_unpacked(req, NULL);

	/* A name longer than Pyroscope's 1024 bytes is cut to 1024. */
	memset(longname, 'n', 2000);
	longname[2000] = '\0';
	labels_of_pairs(&l, "service_name", "svc", longname, "v", NULL);
	s.len = 3;
	req = push_decode(&s, 1);
	cr_assert_eq(req->series[0]->n_labels, 3);
	cr_assert_eq(strlen(req->series[0]->labels[2]->name), 1024);
	cr_assert_str_eq(req->series[0]->labels[2]->value, "v");
	push__v1__push_request__free_unpacked(req, NULL);

	/* No series: an empty, valid request. */
	req = push_decode(NULL, 0);
	cr_assert_eq(req->n_series, 0);
	push__v1__push_request__free_unpacked(req, NULL);
	labels__release(&l);
	free(big);
}

Test(pyroscope_push, a_fresh_uuid_every_request)
{
	struct labels l = { 0 };
	char seen[50][37];

	labels_of_pairs(&l, "service_name", "svc", NULL);
	struct pyroscope_series s = { &l, (const uint8_t *)"p", 1 };
	for (int i = 0; i < 50; i++) {
		Push__V1__PushRequest *req = push_decode(&s, 1);
		const char *id = req->series[0]->samples[0]->id;

		cr_assert(is_uuid4(id), "not a UUID v4: '%s'", id);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(seen[j], id, "request %d repeats request %d's id", i, j);
		snprintf(seen[i], sizeof(seen[i]), "%s", id);
		push__v1__push_request__free_unpacked(req, NULL);
	}
	labels__release(&l);
}

Test(pyroscope_push, sanitize_name)
{
	static const char *const cases[][2] = {
		{ "ok_Name9", "ok_Name9" },
		{ "1abc", "_abc" },
		{ "9", "_" },
		{ "a.b-c/d", "a_b_c_d" },
		{ "caf\xc3\xa9", "caf__" },
		{ "sp ace:colon", "sp_ace_colon" },
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s", cases[i][0]);
		pyroscope__sanitize_name(buf);
		cr_assert_str_eq(buf, cases[i][1], "sanitize '%s'", cases[i][0]);
	}
}

/* ---- /ingest URL ---- */

/* Go's url.QueryUnescape: %XX, '+' is a space; false on a bad escape. */
static bool query_unescape(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (o + 1 >= size)
			return false;
		if (c == '%') {
			char hex[3] = { 0 };

			if (i + 2 >= n)
				return false;
			if (!isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2]))
				return false;
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			out[o++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[o++] = c == '+' ? ' ' : c;
		}
	}
	out[o] = '\0';
	return true;
}

struct query {
	char name[4096], from[32], until[32], format[32], rate[32], spy[32], units[32], agg[32];
	int params;
};

/* Splits url after "<server>/ingest?" into its decoded parameters; every
 * byte of the raw query must be unreserved or a %XX escape. */
static void parse_url(const char *url, const char *server, struct query *q)
{
	char prefix[256];
	const char *s;

	memset(q, 0, sizeof(*q));
	snprintf(prefix, sizeof(prefix), "%s/ingest?", server);
	cr_assert_eq(strncmp(url, prefix, strlen(prefix)), 0, "url: %s", url);
	s = url + strlen(prefix);
	while (*s) {
		size_t len = strcspn(s, "&"), klen = strcspn(s, "=");
		struct {
			const char *key;
			char *out;
			size_t size;
		} fields[] = {
			{ "name", q->name, sizeof(q->name) },
			{ "from", q->from, sizeof(q->from) },
			{ "until", q->until, sizeof(q->until) },
			{ "format", q->format, sizeof(q->format) },
			{ "sampleRate", q->rate, sizeof(q->rate) },
			{ "spyName", q->spy, sizeof(q->spy) },
			{ "units", q->units, sizeof(q->units) },
			{ "aggregationType", q->agg, sizeof(q->agg) },
		};
		bool known = false;

		cr_assert_lt(klen, len, "parameter without '=': %.*s", (int)len, s);
		for (size_t i = klen + 1; i < len; i++)
			cr_assert(isalnum((unsigned char)s[i]) || strchr("-._~%", s[i]),
				  "unescaped '%c' in the query: %s", s[i], url);
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			if (strlen(fields[i].key) != klen || strncmp(s, fields[i].key, klen))
				continue;
			cr_assert_eq(fields[i].out[0], '\0', "%s given twice", fields[i].key);
			cr_assert(query_unescape(s + klen + 1, len - klen - 1, fields[i].out,
						 fields[i].size), "bad escape in %s", url);
			known = true;
		}
		cr_assert(known, "unknown parameter %.*s", (int)klen, s);
		q->params++;
		s += len + (s[len] == '&');
	}
}

struct key {
	char app[1024];
	char tags[32][2][1024];
	int ntags;
};

static void trim_copy(char *out, size_t size, const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	cr_assert_lt(n, size);
	memcpy(out, s, n);
	out[n] = '\0';
}

static bool all_of(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(isascii((unsigned char)*s) && isalnum((unsigned char)*s)) && !strchr(extra, *s))
			return false;
	return true;
}

/* Pyroscope's segment key grammar: the app name runs to '{' and must be
 * [A-Za-z0-9_./-]+; a key runs to '=' (or '}' ends the tags) and must be
 * [A-Za-z0-9_.]+; a value runs to ',' or '}'. No escapes. Asserts what the
 * server would refuse with 400. */
static void parse_key(const char *name, struct key *k)
{
	const char *brace = strchr(name, '{'), *s;

	memset(k, 0, sizeof(*k));
	cr_assert_not_null(brace, "no '{' in name %s", name);
	trim_copy(k->app, sizeof(k->app), name, (size_t)(brace - name));
	cr_assert(all_of(k->app, "_./-"), "the server refuses app name '%s' (name %s)", k->app,
		  name);
	s = brace + 1;
	while (*s && *s != '}') {
		size_t kl = strcspn(s, "=}"), vl;

		if (s[kl] != '=')
			break;
		cr_assert_lt(k->ntags, 32);
		trim_copy(k->tags[k->ntags][0], 1024, s, kl);
		cr_assert(all_of(k->tags[k->ntags][0], "_."), "the server refuses tag key '%s' (name %s)",
			  k->tags[k->ntags][0], name);
		/* A __name__ tag would replace the application name. */
		cr_assert_str_neq(k->tags[k->ntags][0], "__name__", "__name__ as a tag in %s", name);
		s += kl + 1;
		vl = strcspn(s, ",}");
		cr_assert(s[vl], "value without end in %s", name);
		trim_copy(k->tags[k->ntags][1], 1024, s, vl);
		k->ntags++;
		s += vl + (s[vl] == ',');
	}
	cr_assert_str_eq(s, "}", "the name does not end after its tags: %s", name);
}

static const char *tag(const struct key *k, const char *name)
{
	for (int i = 0; i < k->ntags; i++)
		if (!strcmp(k->tags[i][0], name))
			return k->tags[i][1];
	return NULL;
}

static void ingest(const struct labels *l, struct query *q, struct key *k)
{
	char *url = NULL;

	cr_assert_eq(pyroscope__ingest_url("http://127.0.0.1:4040", l, 1700000000, 1700000010,
					   97, &url), 0);
	parse_url(url, "http://127.0.0.1:4040", q);
	parse_key(q->name, k);
	free(url);
}

/* ingest() of the label set of n name, value pairs. */
static void ingest_pairs(struct query *q, struct key *k, size_t n, const char *const *pairs)
{
	struct labels l = { 0 };

	labels_of_array(&l, pairs, n);
	ingest(&l, q, k);
	labels__release(&l);
}

Test(pyroscope_ingest, parameters)
{
	struct labels l = { 0 };
	struct query q;
	struct key k;

	labels_of_pairs(&l, "service_name", "shop/web-1.v2", "namespace", "shop", "__hidden", "x",
			NULL);
	ingest(&l, &q, &k);
	cr_assert_eq(q.params, 8);
	cr_assert_str_eq(q.from, "1700000000");
	cr_assert_str_eq(q.until, "1700000010");
	cr_assert_str_eq(q.rate, "97");
	cr_assert_str_eq(q.format, "pprof");
	cr_assert_str_eq(q.spy, "kiln");
	cr_assert_str_eq(q.units, "samples");
	cr_assert_str_eq(q.agg, "sum");
	/* service_name is the name's prefix, the profile type its suffix;
	 * __ labels and service_name are not tags. */
	cr_assert_str_eq(q.name, "shop/web-1.v2.cpu{namespace=shop}");
	cr_assert_str_eq(k.app, "shop/web-1.v2.cpu");
	cr_assert_eq(k.ntags, 1);
	labels__release(&l);
}

Test(pyroscope_ingest, special_characters_in_values)
{
	static const char *const cases[][2] = {
		/* value sent, value the server stores */
		{ "a,b", "a_b" },
		{ "k=v", "k_v" },
		{ "{x}", "_x_" },
		{ "a,b={c},d", "a_b__c__d" },
		{ "two words", "two words" },
		{ "\"quoted\" 'single'", "\"quoted\" 'single'" },
		{ "a&b=c", "a&b_c" },
		{ "100%", "100%" },
		{ "%41", "%41" },
		{ "1+1", "1+1" },
		{ "x#frag", "x#frag" },
		{ "?q/p;s", "?q/p;s" },
		{ "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *pairs[] = { "service_name", "svc", "team", cases[i][0], "zone", "z1" };
		struct query q;
		struct key k;

		ingest_pairs(&q, &k, 3, pairs);
		cr_assert_str_eq(k.app, "svc.cpu", "value '%s': app '%s'", cases[i][0], k.app);
		cr_assert_eq(k.ntags, 2, "value '%s' gave %d tags: %s", cases[i][0], k.ntags, q.name);
		cr_assert_str_eq(k.tags[0][0], "team");
		cr_assert_str_eq(tag(&k, "team"), cases[i][1], "value '%s'", cases[i][0]);
		cr_assert_str_eq(tag(&k, "zone"), "z1", "value '%s'", cases[i][0]);
	}
}

Test(pyroscope_ingest, service_names_the_server_accepts)
{
	static const char *const cases[][2] = {
		/* service_name, the name's app part */
		{ "nginx", "nginx.cpu" },
		{ "ebpf/shop/web", "ebpf/shop/web.cpu" },
		{ "getty@tty1", "getty_tty1.cpu" },
		{ "a,b{c}=d", "a_b_c__d.cpu" },
		{ "my service", "my_service.cpu" },
		{ "caf\xc3\xa9", "caf_.cpu" },
		{ "", "unknown.cpu" },
	};

	static const char *const no_service[] = { "node", "n1" };
	struct query q;
	struct key k;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *pairs[] = { "service_name", cases[i][0], "node", "n1" };

		ingest_pairs(&q, &k, 2, pairs);
		cr_assert_str_eq(k.app, cases[i][1], "service_name '%s'", cases[i][0]);
		cr_assert_eq(k.ntags, 1);
		cr_assert_str_eq(tag(&k, "node"), "n1");
	}
	ingest_pairs(&q, &k, 1, no_service);
	cr_assert_str_eq(k.app, "unknown.cpu");
	cr_assert_str_eq(tag(&k, "node"), "n1");
}

Test(pyroscope_ingest, tag_names_and_order)
{
	struct labels l = { 0 };
	struct query q;
	struct key k;

	labels_of_pairs(&l, "service_name", "svc", "app.kubernetes.io/name", "web", "1st", "x",
			"b", "2", "a", "1", "__reserved", "no", NULL);
	ingest(&l, &q, &k);
	cr_assert_eq(k.ntags, 4, "name %s", q.name);
	cr_assert_str_eq(q.name, "svc.cpu{_st=x,a=1,app_kubernetes_io_name=web,b=2}");
	labels__release(&l);
}

Test(pyroscope_query, select_merge_request_fields)
{
	Querier__V1__SelectMergeProfileRequest *r;
	uint8_t *buf = NULL;
	size_t len = 0;

	cr_assert_eq(pyroscope__select_merge_request(PYROSCOPE_CPU_TYPE,
						     "{service_name=\"app\",branch=\"main\"}",
						     1700000000000, 1700003600000, &buf, &len), 0);
	r = querier__v1__select_merge_profile_request__unpack(NULL, len, buf);
	cr_assert_not_null(r);
	cr_assert_str_eq(r->profile_typeid, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	cr_assert_str_eq(r->label_selector, "{service_name=\"app\",branch=\"main\"}");
	cr_assert_eq(r->start, 1700000000000);
	cr_assert_eq(r->end, 1700003600000);
	querier__v1__select_merge_profile_request__free_unpacked(r, NULL);
	free(buf);
}
