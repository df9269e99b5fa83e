/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The BPF programs' counters: one per-CPU value of the map `counters`,
 * shared by bpf/sampler.bpf.c and user space (user/sampler/sampler.c). */
#ifndef KILN_COUNTERS_H
#define KILN_COUNTERS_H

#include "kiln/interp.h"
#include "kiln/sample.h"
#include "kiln/unwind.h"

/* In one value, not an array element each: user space reads them with one
 * lookup, and a sample's counters lie in a few adjacent cache lines, which
 * at 97 Hz it finds cold. Only ever added to: user space takes
 * differences, so it never writes a value a program is counting in. */
struct kiln_counters {
	__u64 unwind[KILN_UW_STAT_COUNT];       /* what a walk counts first */
	__u64 outcomes[2][KILN_OUTCOME_COUNT];  /* by generation & 1 */
	__u64 events[KILN_EV_STAT_COUNT];
	__u64 interp[KILN_LANG_COUNT][KILN_INTERP_STAT_COUNT];
	/* The sampling programs' runs (one a sample, its tail calls
	 * included) and the time they took, clocked by the programs. */
	__u64 runs, run_ns;
};

#endif
