// SPDX-License-Identifier: BSD-2-Clause
/* sideband__decode and the mmap log it feeds: a run of perf records (each
 * its own header's size long) decoded and applied to a small log; after
 * each, the process's logged mappings are sorted, disjoint and within
 * their bounds, and the whole log within its. */
#include <string.h>

#include "fuzz.h"
#include "proc/mmap_log.h"
#include "sampler/sideband.h"

FUZZ_DEFAULT_INIT

#define LOG_MAX 64

static void check_log(struct mmap_log *l, uint32_t pid)
{
	const struct logged_mapping *m;
	struct mmap_log_stats st;
	int since_exec;
	size_t n = mmap_log__get(l, pid, &m, &since_exec);

	FUZZ_CHECK(n <= MMAP_LOG_PER_PROCESS);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(m[i].start < m[i].end);
		FUZZ_CHECK(m[i].name && (m[i].name[0] == '/' || strcmp(m[i].name, "[vdso]") == 0 ||
					 strcmp(m[i].name, "[anon]") == 0));
		FUZZ_CHECK(i == 0 || m[i - 1].end <= m[i].start);
	}
	mmap_log__stats(l, &st);
	/* one process's log may stand alone over the bound */
	FUZZ_CHECK(st.mappings + st.processes <= LOG_MAX || st.processes == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mmap_log *l = mmap_log__new(LOG_MAX);
	uint64_t rec[512]; /* 8-byte aligned, as the rings are */

	if (!l)
		return 0;
	while (size >= 8) {
		uint16_t len;
		struct sideband_record r;
		size_t name_len = 0;
		uint64_t lost;
		char name[sizeof(rec)];
		int n;

		memcpy(&len, data + 6, sizeof(len));
		if (len < 8 || len > size || len > sizeof(rec))
			break;
		memcpy(rec, data, len);
		n = sideband__decode(rec, len, &r, &name_len, &lost);
		data += len;
		size -= len;
		if (n <= 0)
			continue;
		FUZZ_CHECK(name_len < len);
		memcpy(name, r.name, name_len);
		name[name_len] = '\0';
		r.name = name;
		mmap_log__record(l, &r);
		check_log(l, r.pid);
		/* the low bits of the time also drive the log's other calls */
		if ((r.time_ns & 15) == 1)
			mmap_log__done(l, r.pid);
		else if ((r.time_ns & 15) == 2)
			mmap_log__expire(l, r.time_ns);
	}
	mmap_log__free(l);
	return 0;
}
