// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <curl/curl.h>

#include "core/utf8.h"
#include "export/pyroscope.h"
#include "push.pb-c.h"
#include "querier.pb-c.h"

/* Pyroscope accepts at most 30 labels per series. */
#define MAX_WIRE_LABELS 30

struct wire_label {
	char name[1025];
	const char *value;
	char *owned;            /* value made valid UTF-8, or NULL */
};

void pyroscope__sanitize_name(char *name)
{
	for (char *s = name; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_') || !isascii((unsigned char)*s))
			*s = '_';
	if (isdigit((unsigned char)name[0]))
		name[0] = '_';
}

/* The label set as sent: __name__ and service_name first (the server
 * refuses a series without one: PYROSCOPE_UNKNOWN_SERVICE then), reserved
 * names and empty values dropped (an empty value is no label to it). */
static size_t wire_labels(const struct labels *l, struct wire_label *out)
{
	const char *name, *value, *service = labels__get(l, "service_name");
	size_t n = 2, pos = 0;

	snprintf(out[0].name, sizeof(out[0].name), "__name__");
	out[0].value = PYROSCOPE_PROFILE_NAME;
	snprintf(out[1].name, sizeof(out[1].name), "service_name");
	out[1].value = service && *service ? service : PYROSCOPE_UNKNOWN_SERVICE;
	while (n < MAX_WIRE_LABELS && labels__next(l, &pos, &name, &value)) {
		if (strncmp(name, "__", 2) == 0 || !*name || !*value ||
		    !strcmp(name, "service_name"))
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		pyroscope__sanitize_name(out[n].name);
		/* protobuf strings are UTF-8, or the request is refused */
		if (!utf8__valid(value) && (out[n].owned = utf8__sanitized(value)))
			value = out[n].owned;
		out[n++].value = value;
	}
	return n;
}

static void uuid4(char out[37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != sizeof(b)) {
		/* Never fails for 16 bytes once the pool is up; be unique anyway. */
		static uint64_t seq;
		uint64_t v = ++seq;

		memset(b, 0, sizeof(b));
		memcpy(b, &v, sizeof(v));
	}
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

int pyroscope__push_request(const struct pyroscope_series *s, size_t n, uint8_t **out,
			    size_t *len)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries *series = calloc(n ? n : 1, sizeof(*series));
	Push__V1__RawProfileSeries **series_p = calloc(n ? n : 1, sizeof(*series_p));
	Push__V1__RawSample *samples = calloc(n ? n : 1, sizeof(*samples));
	Push__V1__RawSample **samples_p = calloc(n ? n : 1, sizeof(*samples_p));
	Types__V1__LabelPair *pairs = calloc((n ? n : 1) * MAX_WIRE_LABELS, sizeof(*pairs));
	Types__V1__LabelPair **pairs_p = calloc((n ? n : 1) * MAX_WIRE_LABELS, sizeof(*pairs_p));
	struct wire_label *wl = calloc((n ? n : 1) * MAX_WIRE_LABELS, sizeof(*wl));
	char (*ids)[37] = calloc(n ? n : 1, sizeof(*ids));
	int err = -ENOMEM;

	*out = NULL;
	if (!series || !series_p || !samples || !samples_p || !pairs || !pairs_p || !wl || !ids)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t base = i * MAX_WIRE_LABELS, nl = wire_labels(s[i].labels, wl + base);

		push__v1__raw_profile_series__init(&series[i]);
		push__v1__raw_sample__init(&samples[i]);
		for (size_t j = 0; j < nl; j++) {
			types__v1__label_pair__init(&pairs[base + j]);
			pairs[base + j].name = wl[base + j].name;
			pairs[base + j].value = (char *)wl[base + j].value;
			pairs_p[base + j] = &pairs[base + j];
		}
		series[i].labels = &pairs_p[base];
		series[i].n_labels = nl;
		uuid4(ids[i]);
		samples[i].id = ids[i];
		samples[i].raw_profile.data = (uint8_t *)s[i].pprof;
		samples[i].raw_profile.len = s[i].len;
		samples_p[i] = &samples[i];
		series[i].samples = &samples_p[i];
		series[i].n_samples = 1;
		series_p[i] = &series[i];
	}
	req.series = series_p;
	req.n_series = n;
	*len = push__v1__push_request__get_packed_size(&req);
	*out = malloc(*len ? *len : 1);
	if (!*out)
		goto out;
	push__v1__push_request__pack(&req, *out);
	err = 0;
out:
	free(series);
	free(series_p);
	free(samples);
	free(samples_p);
	free(pairs);
	free(pairs_p);
	for (size_t i = 0; wl && i < (n ? n : 1) * MAX_WIRE_LABELS; i++)
		free(wl[i].owned);
	free(wl);
	free(ids);
	return err;
}

/* Pyroscope parses the ingest name with no escape mechanism (its segment
 * key parser): the application name runs to the first '{' and may hold
 * only [A-Za-z0-9_./-] (anything else: HTTP 400); a tag key runs to '=';
 * a tag value runs to ',' or '}'. So the service name keeps those
 * characters only, and tag names and values lose ',', '=', '{' and '}';
 * what is dropped becomes '_' (one per UTF-8 character in the name). */
static void append_app_name(char *buf, size_t n, size_t *pos, const char *s)
{
	for (; *s && *pos + 1 < n; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c & 0xc0) == 0x80) /* continuation byte: already replaced */
			continue;
		buf[(*pos)++] = isascii(c) && (isalnum(c) || strchr("_./-", c)) ? (char)c : '_';
	}
	buf[*pos] = '\0';
}

static void append_clean(char *buf, size_t n, size_t *pos, const char *s)
{
	for (; *s && *pos + 1 < n; s++)
		buf[(*pos)++] = strchr(",={}", *s) ? '_' : *s;
	buf[*pos] = '\0';
}

int pyroscope__ingest_url(const char *server, const struct labels *l, int64_t from,
			  int64_t until, unsigned hz, char **out)
{
	struct wire_label wl[MAX_WIRE_LABELS];
	size_t nl = wire_labels(l, wl), pos = 0;
	const char *service = labels__get(l, "service_name");
	char name[8192];
	char *escaped;
	int len;

	append_app_name(name, sizeof(name), &pos, service && *service ? service : "unknown");
	pos += (size_t)snprintf(name + pos, sizeof(name) - pos, ".cpu{");
	/* service_name travels as the name's prefix; the others as tags. */
	for (size_t i = 1, first = 1; i < nl; i++) {
		if (!strcmp(wl[i].name, "service_name"))
			continue;
		if (!first && pos + 1 < sizeof(name))
			name[pos++] = ',';
		append_clean(name, sizeof(name), &pos, wl[i].name);
		if (pos + 1 < sizeof(name))
			name[pos++] = '=';
		append_clean(name, sizeof(name), &pos, wl[i].value);
		first = 0;
	}
	if (pos + 1 < sizeof(name))
		name[pos++] = '}';
	name[pos] = '\0';
	escaped = curl_easy_escape(NULL, name, (int)pos);
	if (!escaped)
		return -ENOMEM;
	len = asprintf(out, "%s/ingest?name=%s&from=%" PRId64 "&until=%" PRId64
		       "&format=pprof&sampleRate=%u&spyName=kiln&units=samples&aggregationType=sum",
		       server, escaped, from, until, hz);
	curl_free(escaped);
	return len < 0 ? -ENOMEM : 0;
}

int pyroscope__select_merge_request(const char *type_id, const char *selector, int64_t start_ms,
				    int64_t end_ms, uint8_t **out, size_t *len)
{
	Querier__V1__SelectMergeProfileRequest req = QUERIER__V1__SELECT_MERGE_PROFILE_REQUEST__INIT;

	req.profile_typeid = (char *)type_id;
	req.label_selector = (char *)selector;
	req.start = start_ms;
	req.end = end_ms;
	*len = querier__v1__select_merge_profile_request__get_packed_size(&req);
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return -ENOMEM;
	querier__v1__select_merge_profile_request__pack(&req, *out);
	return 0;
}
