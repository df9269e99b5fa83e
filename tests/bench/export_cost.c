// SPDX-License-Identifier: BSD-2-Clause
/* The CPU cost of exporting one interval: N unique stacks spread over L
 * label sets, each label set encoded as gzipped pprof, then packed into one
 * Pyroscope PushRequest, as the agent does at the end of an interval; and
 * the same label sets as one gzipped OTLP request each (--otlp-endpoint).
 * Prints the medians over several rounds, in ms of process CPU time.
 * Usage: export_cost [STACKS] [LABEL_SETS] [DEPTH] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/pyroscope.h"
#include "profile/otlp.h"
#include "profile/profile_set.h"
#include "cpu_ms.h"

#define ROUNDS 7

int main(int argc, char **argv)
{
	unsigned stacks = argc > 1 ? (unsigned)atoi(argv[1]) : 10000;
	unsigned sets = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
	unsigned depth = argc > 3 ? (unsigned)atoi(argv[3]) : 24;
	static char names[2000][48];
	struct profile_set *set = profile_set__new(sets);
	struct frame *frames = calloc(depth, sizeof(*frames));
	struct labels l = { 0 };
	double took[ROUNDS], otlp_took[ROUNDS], build_ms;
	size_t push_bytes = 0, otlp_raw = 0, otlp_bytes = 0;
	int err;

	if (!set || !frames || !stacks || !sets || depth < 4)
		return 2;
	for (unsigned i = 0; i < 2000; i++)
		snprintf(names[i], sizeof(names[i]), "namespace::Class%u::method_%u", i / 16, i);
	/* Synthetic stacks: distinct leaves under shared prefixes, like real
	 * programs (many call sites below few entry points). */
	build_ms = cpu_ms();
	srand(42);
	for (unsigned s = 0; s < stacks; s++) {
		unsigned which = s % sets;
		char svc[32];
		struct profile_set_entry *e;
		size_t len;

		len = (size_t)snprintf(svc, sizeof(svc), "service-%u", which);
		l.len = 0;
		free(l.buf);
		l.buf = malloc(64);
		memcpy(l.buf, "service_name", 13);
		memcpy(l.buf + 13, svc, len + 1);
		l.len = 13 + len + 1;
		l.cap = 64;
		l.n = 1;
		e = profile_set__get(set, &l, &err);
		if (!e)
			return 1;
		frames[0] = (struct frame){ .kind = FRAME_ROOT, .name = svc };
		for (unsigned d = 1; d < depth; d++) {
			unsigned fn = d < depth - 3 ? (d * 37 + which) % 2000 : (unsigned)rand() % 2000;
			bool kernel = d >= depth - 2;

			frames[d] = (struct frame){
				.kind = kernel ? FRAME_KERNEL : FRAME_USER,
				.name = names[fn],
				.addr = 0x400000 + fn * 64 + d,
				.map_file = kernel ? "[kernel.kallsyms]" : "/usr/bin/app",
				.map_build_id = kernel ? NULL : "0123456789abcdef0123456789abcdef01234567",
				.map_start = kernel ? 0 : 0x400000, .map_limit = kernel ? 0 : 0x800000,
			};
		}
		if (profile__add(e->profile, frames, depth, 1 + (unsigned)rand() % 5))
			return 1;
	}
	build_ms = cpu_ms() - build_ms;
	for (int r = 0; r < ROUNDS; r++) {
		struct pyroscope_series *series = calloc(sets, sizeof(*series));
		struct pprof_meta meta = { .period_ns = 10309278, .time_nanos = 1, .duration_nanos = 10000000000 };
		uint8_t *body;
		double t0 = cpu_ms();
		size_t n = profile_set__count(set);

		for (size_t i = 0; i < n; i++) {
			uint8_t *buf;
			size_t len;

			if (pprof__encode(profile_set__entry(set, i)->profile, &meta, true, &buf, &len))
				return 1;
			series[i] = (struct pyroscope_series){ &profile_set__entry(set, i)->labels, buf, len };
		}
		if (pyroscope__push_request(series, n, &body, &push_bytes))
			return 1;
		took[r] = cpu_ms() - t0;
		free(body);
		for (size_t i = 0; i < n; i++)
			free((void *)series[i].pprof);
		free(series);
	}
	for (int r = 0; r < ROUNDS; r++) {
		struct otlp_meta meta = { .period_ns = 10309278, .time_nanos = 1,
					  .duration_nanos = 10000000000, .scope_name = "kiln" };
		double t0 = cpu_ms();

		otlp_raw = otlp_bytes = 0;
		for (size_t i = 0; i < profile_set__count(set); i++) {
			struct otlp_resource_profile rp = { profile_set__entry(set, i)->profile,
							    &profile_set__entry(set, i)->labels };
			uint8_t *raw, *gz;
			size_t len, gz_len;

			if (otlp__encode(&rp, 1, &meta, &raw, &len) || pprof__gzip(raw, len, &gz, &gz_len))
				return 1;
			otlp_raw += len;
			otlp_bytes += gz_len;
			free(raw);
			free(gz);
		}
		otlp_took[r] = cpu_ms() - t0;
	}
	qsort(took, ROUNDS, sizeof(took[0]), cmp_double);
	qsort(otlp_took, ROUNDS, sizeof(otlp_took[0]), cmp_double);
	printf("{\"stacks\": %u, \"label_sets\": %u, \"depth\": %u, \"aggregate_ms\": %.1f, "
	       "\"export_cpu_ms_median\": %.1f, \"export_cpu_ms_max\": %.1f, \"push_bytes\": %zu, "
	       "\"otlp_cpu_ms_median\": %.1f, \"otlp_cpu_ms_max\": %.1f, \"otlp_bytes\": %zu, "
	       "\"otlp_bytes_before_gzip\": %zu}\n",
	       stacks, sets, depth, build_ms, took[ROUNDS / 2], took[ROUNDS - 1], push_bytes,
	       otlp_took[ROUNDS / 2], otlp_took[ROUNDS - 1], otlp_bytes, otlp_raw);
	labels__release(&l);
	profile_set__free(set);
	free(frames);
	return 0;
}
