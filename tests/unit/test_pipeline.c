// SPDX-License-Identifier: BSD-2-Clause
/* The pipeline after the drain, fed without BPF (pipeline__new on a fake
 * /proc, a pod index the test owns): every drained count lands in exactly
 * one of profiled, filtered, add failures and label sets full, and the
 * profiles that are written hold exactly the profiled counts, each worth
 * one period of CPU time. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "metadata/pods.h"
#include "pipeline.h"
#include "profile.pb-c.h"
#include "unit_helpers.h"

#define PERIOD_NS 10309278ull   /* 97 Hz */
#define CID_WEB "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CID_ETCD "5555555555555555555555555555555555555555555555555555555555555555"
#define UID_WEB "6b1f7a7e-3c2a-4d55-9d3e-0a1b2c3d4e5f"
#define UID_ETCD "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a"

enum { WEB = 100, ETCD = 200, NGINX = 300, SSHD = 400, GONE = 500 };

static char root[64];
static struct pods *pods;

static void fake_process(int pid, const char *comm, const char *cgroup)
{
	char sub[16], stat[128];

	snprintf(sub, sizeof(sub), "%d", pid);
	snprintf(stat, sizeof(stat),
		 "%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 777 1000 10\n", pid,
		 comm, pid, pid);
	write_under(root, sub, "comm", comm);
	write_under(root, sub, "cgroup", cgroup);
	write_under(root, sub, "stat", stat);
	write_under(root, sub, "maps",
		    "55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234 /usr/bin/app\n");
}

static void pod(const char *uid, const char *ns, const char *name, const char *cid)
{
	char text[2048];
	json_t *j;

	snprintf(text, sizeof(text),
		 "{\"kind\":\"Pod\",\"metadata\":{\"uid\":\"%s\",\"namespace\":\"%s\",\"name\":\"%s\"},"
		 "\"spec\":{\"nodeName\":\"node-a\"},\"status\":{\"phase\":\"Running\","
		 "\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://%s\"}]}}",
		 uid, ns, name, cid);
	j = json_loads(text, 0, NULL);
	cr_assert_not_null(j);
	cr_assert_eq(pods__upsert(pods, j), 0);
	json_decref(j);
}

static void setup(void)
{
	temp_dir(root, sizeof(root), "pipeline");
	fake_process(WEB, "web", "0::/kubepods/besteffort/pod" UID_WEB "/" CID_WEB "\n");
	fake_process(ETCD, "etcd", "0::/kubepods/besteffort/pod" UID_ETCD "/" CID_ETCD "\n");
	fake_process(NGINX, "nginx", "0::/system.slice/nginx.service\n");
	fake_process(SSHD, "sshd", "0::/system.slice/ssh.service\n");
	pods = pods__new(16);
	cr_assert_not_null(pods);
	pod(UID_WEB, "shop", "web-1", CID_WEB);
	pod(UID_ETCD, "kube-system", "etcd-1", CID_ETCD);
}

static void teardown(void)
{
	pods__free(pods);
	remove_dir(root);
}

TestSuite(pipeline, .init = setup, .fini = teardown);

static struct pipeline *pipeline_new(size_t max_label_sets)
{
	static const char *const exclude[] = { "kube-system" };
	struct pipeline_opts o = {
		.metadata = { .node_name = "node-a", .kube_disabled = true, .pods = NULL,
			      .exclude_namespaces = exclude, .nexclude_namespaces = 1 },
		.max_processes = 64, .max_mappings = 1 << 16,
		.cache_bytes = 1 << 20,
		.max_label_sets = max_label_sets,
	};
	struct pipeline *p;

	o.metadata.pods = pods;
	p = pipeline__new(&o, root);
	cr_assert_not_null(p, "pipeline__new: %s", strerror(errno));
	/* The processes as the sampler announces them (instance = pid here). */
	for (int pid = WEB; pid <= SSHD; pid += 100) {
		struct kiln_event ev = { .type = KILN_EVENT_NEW, .pid = (uint32_t)pid,
					 .instance = (uint32_t)pid };

		proc_table__on_event(pipeline__procs(p), &ev);
	}
	return p;
}

/* Feeds one sample of pid (0: the kernel) with a stack of depth frames
 * picked by seed; returns count. */
static uint64_t feed(struct pipeline *p, int pid, uint64_t count, unsigned seed, unsigned depth)
{
	struct kiln_sample_key key = { .pid = (uint32_t)pid, .instance = (uint32_t)pid,
				       .kstack = 1, .ustack = pid ? 2 : 0 };
	uint64_t kips[8], uips[8];
	struct drained_sample d = { .key = &key, .count = count, .kips = kips, .kn = 2,
				    .uips = uips, .un = pid ? depth : 0 };

	snprintf(key.comm, sizeof(key.comm), "comm-%d", pid);
	for (unsigned i = 0; i < 8; i++) {
		kips[i] = 0xffffffff81000000ull + 0x100 * (seed % 5) + i;
		uips[i] = 0x55d0c0a01000ull + 0x10 * ((seed * 7 + i) % 13);
	}
	pipeline__add_sample(p, &d);
	return count;
}

static void end_drain(struct pipeline *p, uint64_t drained)
{
	struct drain_stats st = { .drained = drained, .keys = 1 };

	st.outcomes[KILN_SAMPLED] = drained;
	pipeline__account_drain(p, &st, 0);
}

/* The sums of a profile's values as written (pprof, uncompressed here;
 * the agent gzips the same bytes): [count, cpu nanoseconds]. */
static void written_values(const struct profile *prof, uint64_t sums[2])
{
	struct pprof_meta meta = { .period_ns = PERIOD_NS, .time_nanos = 1700000000000000000ll,
				   .duration_nanos = 10000000000ll };
	Perftools__Profiles__Profile *pp;
	uint8_t *buf = NULL;
	size_t len = 0;

	cr_assert_eq(pprof__encode(prof, &meta, false, &buf, &len), 0);
	pp = perftools__profiles__profile__unpack(NULL, len, buf);
	cr_assert_not_null(pp);
	cr_assert_eq(pp->n_sample_type, 2);
	cr_assert_str_eq(pp->string_table[pp->sample_type[1]->type], "cpu");
	cr_assert_str_eq(pp->string_table[pp->sample_type[1]->unit], "nanoseconds");
	cr_assert_eq(pp->period, (int64_t)PERIOD_NS);
	sums[0] = sums[1] = 0;
	for (size_t i = 0; i < pp->n_sample; i++) {
		cr_assert_eq(pp->sample[i]->n_value, 2);
		cr_assert_gt(pp->sample[i]->value[0], 0);
		cr_assert_eq(pp->sample[i]->value[1], pp->sample[i]->value[0] * (int64_t)PERIOD_NS);
		sums[0] += (uint64_t)pp->sample[i]->value[0];
		sums[1] += (uint64_t)pp->sample[i]->value[1];
	}
	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(buf);
}

/* Checks the totals' conservation and that the set's written profiles
 * hold profiled_now counts; returns the set's profile count. */
static size_t check_interval(struct pipeline *p, uint64_t profiled_now)
{
	const struct pipeline_totals *t = pipeline__totals(p);
	struct profile_set *set = pipeline__take(p);
	uint64_t counts = 0, cpu = 0, routed = 0;
	size_t n;

	cr_assert_not_null(set);
	cr_assert_eq(t->profiled + t->filtered + t->add_failures + t->label_sets_full, t->drained,
		     "profiled %llu + filtered %llu + add failures %llu + label sets full %llu != drained %llu",
		     (unsigned long long)t->profiled, (unsigned long long)t->filtered,
		     (unsigned long long)t->add_failures, (unsigned long long)t->label_sets_full,
		     (unsigned long long)t->drained);
	cr_assert_eq(t->invariant_failures, 0);
	n = profile_set__count(set);
	for (size_t i = 0; i < n; i++) {
		struct profile_set_entry *e = profile_set__entry(set, i);
		uint64_t sums[2];

		written_values(e->profile, sums);
		cr_assert_eq(sums[0], profile__total(e->profile));
		counts += sums[0];
		cr_assert_eq(sums[1], sums[0] * PERIOD_NS);
		cpu += sums[1];
		routed += e->samples;
	}
	cr_assert_eq(counts, profiled_now, "the written profiles hold %llu samples, %llu profiled",
		     (unsigned long long)counts, (unsigned long long)profiled_now);
	cr_assert_eq(cpu, profiled_now * PERIOD_NS);
	cr_assert_eq(routed, profiled_now);
	profile_set__free(set);
	return n;
}

Test(pipeline, every_drained_count_is_profiled_or_a_named_loss)
{
	struct pipeline *p = pipeline_new(3);
	const struct pipeline_totals *t = pipeline__totals(p);
	uint64_t drained = 0, kept = 0, excluded = 0, full = 0;

	/* Three label sets fit: web (shop), the kernel, nginx; etcd's
	 * namespace is excluded; sshd and a process gone before its
	 * snapshot would be a fourth and fifth set. */
	for (unsigned i = 0; i < 60; i++) {
		uint64_t c = 1 + (i * 37) % 23;

		switch (i % 6) {
		case 0: kept += feed(p, WEB, c, i, 1 + i % 8); break;
		case 1: kept += feed(p, 0, c, i, 0); break;
		case 2: kept += feed(p, NGINX, c, i, 1 + i % 5); break;
		case 3: excluded += feed(p, ETCD, c, i, 3); break;
		case 4: full += feed(p, SSHD, c, i, 2); break;
		case 5: full += feed(p, GONE, c, i, 4); break;
		}
		drained += c;
	}
	end_drain(p, drained);
	cr_assert_eq(t->drained, drained);
	cr_assert_eq(check_interval(p, t->profiled), 3);
	/* And each loss where it belongs. */
	cr_assert_eq(t->filtered, excluded);
	cr_assert_eq(t->label_sets_full, full);
	cr_assert_eq(t->add_failures, 0);
	cr_assert_eq(t->profiled, kept);

	/* The next interval starts empty: sshd's set fits now. */
	kept = 0;
	for (unsigned i = 0; i < 17; i++)
		kept += feed(p, i % 2 ? SSHD : WEB, 8 + i, i, 1 + i % 8);
	end_drain(p, kept);
	cr_assert_eq(t->drained, drained + kept);
	cr_assert_eq(check_interval(p, kept), 2);
	cr_assert_eq(t->profiled, drained - excluded - full + kept);
	cr_assert_eq(t->drains, 2);
	pipeline__free(p);
}

Test(pipeline, one_profile_per_group_by_value)
{
	static const char *const exclude[] = { "kube-system" };
	struct pipeline_opts o = {
		.metadata = { .node_name = "node-a", .kube_disabled = true,
			      .exclude_namespaces = exclude, .nexclude_namespaces = 1 },
		.max_processes = 64, .max_mappings = 1 << 16, .cache_bytes = 1 << 20, .max_label_sets = 2,
		.group_by = "",
	};
	struct pipeline *p;
	uint64_t drained = 0;

	o.metadata.pods = pods;
	/* record's mode: one profile for everything kept. */
	p = pipeline__new(&o, root);
	cr_assert_not_null(p);
	for (unsigned i = 0; i < 40; i++)
		drained += feed(p, (int)(i % 5) * 100, 1 + i % 9, i, 1 + i % 6);
	end_drain(p, drained);
	cr_assert_eq(pipeline__totals(p)->label_sets_full, 0);
	cr_assert_gt(pipeline__totals(p)->profiled, 0);
	cr_assert_eq(check_interval(p, pipeline__totals(p)->profiled), 1);
	pipeline__free(p);
}

Test(pipeline, a_drain_that_loses_samples_is_counted)
{
	struct pipeline *p = pipeline_new(8);
	struct drain_stats st = { .drained = 10 };

	st.outcomes[KILN_SAMPLED] = 12;
	pipeline__account_drain(p, &st, 0);
	cr_assert_eq(pipeline__totals(p)->invariant_failures, 1);
	cr_assert_eq(pipeline__totals(p)->outcomes[KILN_SAMPLED], 12);
	/* A failed drain is not judged. */
	pipeline__account_drain(p, &st, -5);
	cr_assert_eq(pipeline__totals(p)->invariant_failures, 1);
	pipeline__free(p);
}
