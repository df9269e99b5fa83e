/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's exporters for one interval (agent_export.c). */
#ifndef KILN_AGENT_EXPORT_H
#define KILN_AGENT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/files.h"
#include "export/sender.h"
#include "profile/profile_set.h"

/* Where an interval's profiles go; NULL files or sender: not there. */
struct agent_exporters {
	struct files *files;
	struct sender *sender;
	const char *server;             /* without a trailing '/' */
	bool ingest;                    /* legacy /ingest instead of push */
	unsigned frequency;             /* Hz, for the period and sampleRate */
	/* What a profile for the server may hold (--push-max-stacks,
	 * --push-max-bytes): Pyroscope refuses a profile of more than 16 000
	 * samples, and any request whose labels and decompressed pprof pass its
	 * rate limiter's 2 MB burst (pyroscope.md). */
	uint64_t max_stacks, max_bytes;
	/* --otlp-endpoint: OpenTelemetry profiles, one request a label set, to
	 * otlp_url through their own sender; NULL otlp: none. Bounded like the
	 * push (--otlp-max-stacks, --otlp-max-bytes: the request). */
	struct sender *otlp;
	const char *otlp_url;
	uint64_t otlp_max_stacks, otlp_max_bytes;
};


/* Profiles for one server cut to fit its max stacks and bytes: their
 * lightest stacks folded into one "[other]" stack (samples counted), or,
 * when even that does not fit, dropped (counted in failures too). */
struct agent_export_caps {
	uint64_t failures;              /* profiles that could not be encoded */
	uint64_t capped, samples_folded, too_large;
};

struct agent_export_result {
	size_t built;                   /* profiles encoded and exported */
	bool page;                      /* latest.html drawn */
	/* push: the pprof for files and Pyroscope (a failure there loses the
	 * label set's profile); otlp: the OTLP request of each */
	struct agent_export_caps push, otlp;
};

/* Encodes one pprof per non-empty label set of set, covering [start_ns,
 * end_ns) of CLOCK_REALTIME, and hands them to the exporters; with files,
 * draws latest.html from them when page. set stays the caller's. */
struct agent_export_result agent_export__interval(const struct agent_exporters *x,
						  struct profile_set *set, uint64_t start_ns,
						  uint64_t end_ns, bool page);

#endif
