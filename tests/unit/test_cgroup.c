// SPDX-License-Identifier: BSD-2-Clause
/* cgroup line -> container id, pod UID, runtime, QoS, systemd unit: every
 * row of tests/fixtures/cgroup-lines.tsv (real lines with their expected
 * answers), the same rows inside multi-line (hybrid) process texts, and
 * lines made to break the parser. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/cgroup.h"

#define FIXTURE "tests/fixtures/cgroup-lines.tsv"
#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID_US "2aabfe22_8f21_49e9_bb0e_b53f16947ccf"
#define UID "2aabfe22-8f21-49e9-bb0e-b53f16947ccf"

struct row {
	int lineno;
	char *line, *kind, *container_id, *pod_uid, *runtime, *qos, *unit, *note;
};

static struct row rows[256];
static size_t nrows;
static char *fixture_text;

/* '-' in the fixture means none; the API says "" or NULL. */
static const char *none(const char *s)
{
	return s && strcmp(s, "-") == 0 ? "" : s;
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void load_fixture(void)
{
	FILE *f = fopen(FIXTURE, "r");
	char *p, *save = NULL;
	long size;
	int lineno = 0;

	cr_assert_not_null(f, "open %s (run from the repo root)", FIXTURE);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	fixture_text = calloc(1, (size_t)size + 1);
	cr_assert_eq(fread(fixture_text, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	nrows = 0;
	for (p = strtok_r(fixture_text, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		char *fields[8] = { 0 };
		size_t nf = 0;
		char *q = p;

		lineno++;
		if (*p == '#')
			continue;
		/* strsep keeps empty fields (the empty-line row's first one). */
		while (q && nf < 8)
			fields[nf++] = strsep(&q, "\t");
		cr_assert_geq(nf, 7, "fixture line %d: %zu fields", lineno, nf);
		cr_assert_lt(nrows, sizeof(rows) / sizeof(rows[0]));
		rows[nrows++] = (struct row){ lineno, fields[0], fields[1], fields[2], fields[3],
					      fields[4], fields[5], fields[6],
					      fields[7] ? fields[7] : "" };
	}
}

static void free_fixture(void)
{
	free(fixture_text);
	fixture_text = NULL;
}

/* Every difference between got and the row's expectation, as one string
 * ("" when none). */
static void diff_row(const struct row *r, const struct cgroup_identity *got, char *out,
		     size_t size)
{
	size_t n = 0;

	out[0] = '\0';
#define CHECK(field, want, have)                                                        \
	do {                                                                            \
		if (strcmp(none(want), (have) ? (have) : "") != 0)                      \
			n += (size_t)snprintf(out + n, size - n, " %s=%s (want %s)", field, \
					      or_dash(have), want);                     \
	} while (0)
	CHECK("kind", r->kind, cgroup_kind_name(got->kind));
	CHECK("container_id", r->container_id, got->container_id);
	CHECK("pod_uid", r->pod_uid, got->pod_uid);
	CHECK("runtime", r->runtime, cgroup_runtime_name(got->runtime));
	CHECK("qos", r->qos, cgroup_qos_name(got->qos));
	CHECK("systemd_unit", r->unit, got->systemd_unit);
#undef CHECK
}

TestSuite(cgroup_fixture, .init = load_fixture, .fini = free_fixture);

Test(cgroup_fixture, every_row_single_line)
{
	unsigned failures = 0;
	char diff[1024];

	cr_assert_eq(nrows, 28, "fixture rows: %zu", nrows);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		struct cgroup_identity id;

		cgroup__identify_line(r->line, strlen(r->line), &id);
		diff_row(r, &id, diff, sizeof(diff));
		if (diff[0]) {
			cr_log_error("fixture line %d '%s' (%s):%s", r->lineno, r->line, r->note,
				     diff);
			failures++;
		}
	}
	cr_assert_eq(failures, 0, "%u fixture rows differ", failures);
}

/* The row as a whole one-line text, with its newline. */
Test(cgroup_fixture, every_row_as_text)
{
	unsigned failures = 0;
	char text[4096], diff[1024];

	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		struct cgroup_identity id;
		int n = snprintf(text, sizeof(text), "%s\n", r->line);

		cgroup__identify(text, (size_t)n, &id);
		diff_row(r, &id, diff, sizeof(diff));
		if (diff[0]) {
			cr_log_error("fixture line %d as text:%s", r->lineno, diff);
			failures++;
		}
		cr_expect_eq(id.lines, 1, "fixture line %d", r->lineno);
		cr_expect_eq(id.invalid_lines, strcmp(r->kind, "invalid") == 0 ? 1u : 0u,
			     "fixture line %d", r->lineno);
		/* A one-line v2 text stands for its v2 cgroup id. */
		if (strncmp(r->line, "0::/", 4) == 0)
			cr_expect(id.from_v2, "fixture line %d: from_v2", r->lineno);
	}
	cr_assert_eq(failures, 0, "%u fixture rows differ", failures);
}

/* A hybrid host's process: host v1 lines around the row, a junk line and
 * a root v2 line. The row's answer must come through unchanged. */
Test(cgroup_fixture, every_row_inside_a_hybrid_text)
{
	unsigned failures = 0;
	char text[4096], diff[1024];

	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		struct cgroup_identity id;
		int n;

		if (strcmp(r->kind, "invalid") == 0)
			continue;
		n = snprintf(text, sizeof(text),
			     "12:pids:/\n9:cpuset:/\nnot a cgroup line\n%s\n4:memory:/\n0::/\n",
			     r->line);
		cgroup__identify(text, (size_t)n, &id);
		diff_row(r, &id, diff, sizeof(diff));
		if (diff[0]) {
			cr_log_error("fixture line %d in hybrid text:%s", r->lineno, diff);
			failures++;
		}
		cr_expect_eq(id.lines, 6);
		cr_expect_eq(id.invalid_lines, 1);
		/* The first v2 line is the row's own, or "0::/", which only a
		 * host answer without a unit equals. */
		cr_expect_eq(id.from_v2,
			     strncmp(r->line, "0::/", 4) == 0 ||
			     (strcmp(r->kind, "host") == 0 && strcmp(r->unit, "-") == 0),
			     "fixture line %d: from_v2 %d", r->lineno, id.from_v2);
	}
	cr_assert_eq(failures, 0, "%u fixture rows differ", failures);
}

static enum cgroup_kind line_kind(const char *line, struct cgroup_identity *id)
{
	return cgroup__identify_line(line, strlen(line), id);
}

static enum cgroup_kind text_kind(const char *text, struct cgroup_identity *id)
{
	return cgroup__identify(text, strlen(text), id);
}

Test(cgroup, first_container_line_wins)
{
	struct cgroup_identity id;
	const char *text =
		"11:memory:/kubepods/besteffort/pod" UID "/" HEX64 "\n"
		"10:cpu:/kubepods/besteffort/pod" UID "/"
		"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\n"
		"0::/\n";

	cr_assert_eq(text_kind(text, &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.container_id, HEX64);
	cr_assert_str_eq(id.pod_uid, UID);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_CONTAINERD);
	cr_assert_eq(id.qos, CGROUP_QOS_BESTEFFORT);
	cr_assert_not(id.from_v2);
}

Test(cgroup, container_line_beats_an_earlier_pod_only_line)
{
	struct cgroup_identity id;
	const char *text =
		"1:name=systemd:/kubepods.slice/kubepods-pod" UID_US ".slice\n"
		"0::/kubepods.slice/kubepods-pod" UID_US ".slice/cri-containerd-" HEX64 ".scope\n";

	cr_assert_eq(text_kind(text, &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.container_id, HEX64);
	cr_assert_eq(id.qos, CGROUP_QOS_GUARANTEED);
	cr_assert(id.from_v2);
}

Test(cgroup, host_unit_from_first_line_having_one)
{
	struct cgroup_identity id;
	const char *text = "5:cpu:/\n"
			   "1:name=systemd:/system.slice/sshd.service\n"
			   "0::/system.slice/cron.service\n";

	cr_assert_eq(text_kind(text, &id), CGROUP_HOST);
	cr_assert_str_eq(id.systemd_unit, "sshd.service");
	cr_assert_not(id.from_v2);
	cr_assert_eq(text_kind("1:name=systemd:/system.slice/a.service\n0::/system.slice/a.service\n",
			       &id), CGROUP_HOST);
	cr_assert(id.from_v2);
}

Test(cgroup, pod_slice_itself_is_pod_only)
{
	struct cgroup_identity id;

	cr_assert_eq(line_kind("0::/kubepods.slice/kubepods-besteffort.slice/"
			       "kubepods-besteffort-pod" UID_US ".slice", &id), CGROUP_POD_ONLY);
	cr_assert_str_eq(id.pod_uid, UID);
	cr_assert_eq(id.qos, CGROUP_QOS_BESTEFFORT);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_NONE);
	cr_assert_str_eq(id.container_id, "");
}

Test(cgroup, kind_node_inside_docker_takes_the_pods_container)
{
	struct cgroup_identity id;
	const char *outer = "1111111111111111111111111111111111111111111111111111111111111111";

	cr_assert_eq(line_kind("0::/system.slice/docker-1111111111111111111111111111111111111111111111111111111111111111.scope"
			       "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice"
			       "/kubelet-kubepods-burstable-pod" UID_US ".slice/cri-containerd-" HEX64
			       ".scope", &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.container_id, HEX64);
	cr_assert_str_eq(id.pod_uid, UID);
	cr_assert_eq(id.qos, CGROUP_QOS_BURSTABLE);
	/* A pod process in the node container: the node is not its container. */
	cr_assert_eq(line_kind("0::/system.slice/docker-1111111111111111111111111111111111111111111111111111111111111111.scope"
			       "/kubepods/pod" UID, &id), CGROUP_POD_ONLY);
	cr_assert_str_eq(id.container_id, "");
	cr_assert_eq(id.qos, CGROUP_QOS_GUARANTEED);
	/* Without a pod the outer container is the answer. */
	cr_assert_eq(line_kind("0::/system.slice/docker-1111111111111111111111111111111111111111111111111111111111111111.scope"
			       "/init.scope", &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.container_id, outer);
}

Test(cgroup, docker_in_docker_and_bare_ids)
{
	struct cgroup_identity id;

	cr_assert_eq(line_kind("0::/system.slice/docker-1111111111111111111111111111111111111111111111111111111111111111.scope/docker/" HEX64,
			       &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.container_id, HEX64);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_DOCKER);
	cr_assert_eq(line_kind("4:cpu:/docker/" HEX64, &id), CGROUP_CONTAINER);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_DOCKER);
	/* A bare id elsewhere: a container, runtime unknown. */
	cr_assert_eq(line_kind("0::/actions_job/" HEX64, &id), CGROUP_CONTAINER);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_NONE);
	cr_assert_str_eq(id.pod_uid, "");
}

Test(cgroup, v1_colon_forms_for_each_runtime)
{
	struct cgroup_identity id;

	cr_assert_eq(line_kind("3:cpu:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			       UID_US ".slice:crio:" HEX64, &id), CGROUP_CONTAINER);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_CRIO);
	cr_assert_str_eq(id.pod_uid, UID);
	cr_assert_eq(id.qos, CGROUP_QOS_BURSTABLE);
	cr_assert_eq(line_kind("3:cpu:/kubepods-pod" UID_US ".slice:docker:" HEX64, &id),
		     CGROUP_CONTAINER);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_DOCKER);
	cr_assert_eq(id.qos, CGROUP_QOS_GUARANTEED);
	/* Unknown runtime word, or a short id: the pod only. */
	cr_assert_eq(line_kind("3:cpu:/kubepods-pod" UID_US ".slice:runx:" HEX64, &id),
		     CGROUP_POD_ONLY);
	cr_assert_eq(line_kind("3:cpu:/kubepods-pod" UID_US ".slice:cri-containerd:" HEX64 "0",
			       &id), CGROUP_POD_ONLY);
}

Test(cgroup, static_pod_uid_in_cgroupfs_layout)
{
	struct cgroup_identity id;

	cr_assert_eq(line_kind("0::/kubepods/burstable/pod47611a3ce9d97dcbee500fe7ee5fc324/" HEX64,
			       &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.pod_uid, "47611a3ce9d97dcbee500fe7ee5fc324");
	cr_assert_eq(id.qos, CGROUP_QOS_BURSTABLE);
}

Test(cgroup, ids_must_be_exactly_64_lowercase_hex)
{
	struct cgroup_identity id;
	char line[512];
	const char *bad[] = {
		/* 63 hex */
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
		/* 65 hex */
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
		/* uppercase */
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		/* a non-hex letter */
		"0123456789abcdeg0123456789abcdef0123456789abcdef0123456789abcdef",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "0::/system.slice/docker-%s.scope", bad[i]);
		cr_assert_eq(line_kind(line, &id), CGROUP_HOST, "%s", line);
		cr_assert_str_eq(id.container_id, "");
		snprintf(line, sizeof(line), "0::/kubepods/besteffort/pod" UID "/%s", bad[i]);
		cr_assert_eq(line_kind(line, &id), CGROUP_POD_ONLY, "%s", line);
		cr_assert_str_eq(id.container_id, "");
	}
}

Test(cgroup, pod_uids_must_be_well_formed)
{
	struct cgroup_identity id;

	/* Uppercase, one digit short, a stray separator, no "kubepods". */
	cr_assert_eq(line_kind("0::/kubepods/pod2AABFE22-8f21-49e9-bb0e-b53f16947ccf/" HEX64, &id),
		     CGROUP_CONTAINER);
	cr_assert_str_eq(id.pod_uid, "");
	cr_assert_eq(line_kind("0::/kubepods/pod2aabfe2-8f21-49e9-bb0e-b53f16947ccf", &id),
		     CGROUP_HOST);
	cr_assert_eq(line_kind("0::/kubepods/pod2aabfe22-8f21-49e9-bb0e:b53f16947ccf", &id),
		     CGROUP_HOST);
	cr_assert_eq(line_kind("0::/machine.slice/machine-pod" UID_US ".slice", &id), CGROUP_HOST);
	cr_assert_eq(line_kind("0::/kubepods.slice/kubepods-pod" UID_US ".scope", &id),
		     CGROUP_HOST);
	/* Mixed separators still name the pod. */
	cr_assert_eq(line_kind("0::/kubepods.slice/kubepods-pod2aabfe22-8f21_49e9_bb0e_b53f16947ccf.slice",
			       &id), CGROUP_POD_ONLY);
	cr_assert_str_eq(id.pod_uid, UID);
}

Test(cgroup, not_containers)
{
	struct cgroup_identity id;
	const char *lines[] = {
		"0::/system.slice/var-lib-docker-overlay2-" HEX64 "-merged.mount",
		"0::/system.slice/run-containerd-io.containerd.runtime.v2.task-k8s.io-" HEX64 "-rootfs.mount",
		"0::/system.slice/" HEX64 ".mount",
		"0::/machine.slice/libpod-conmon-" HEX64 ".scope",
		"0::/system.slice/crio-conmon-" HEX64 ".scope",
		"0::/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn-" UID ".scope",
		"4:memory:/process_api/9895d1a0d1f13dce20c4fd32f640d003",
		"0::/system.slice/containerd.service",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		cr_assert_eq(line_kind(lines[i], &id), CGROUP_HOST, "%s", lines[i]);
		cr_assert_str_eq(id.container_id, "", "%s", lines[i]);
		cr_assert_eq(id.runtime, CGROUP_RUNTIME_NONE, "%s", lines[i]);
	}
	cr_assert_str_eq(id.systemd_unit, "containerd.service");
}

Test(cgroup, systemd_units)
{
	struct cgroup_identity id;
	char line[600];

	line_kind("0::/user.slice/user-1000.slice/user@1000.service", &id);
	cr_assert_str_eq(id.systemd_unit, "user@1000.service");
	line_kind("0::/system.slice/system-serial\\x2dgetty.slice/serial-getty@ttyS0.service", &id);
	cr_assert_str_eq(id.systemd_unit, "serial-getty@ttyS0.service");
	/* Not leaves, not .service, empty name, bad characters, too long. */
	line_kind("0::/system.slice/nginx.service/worker", &id);
	cr_assert_str_eq(id.systemd_unit, "");
	line_kind("0::/user.slice/user-1000.slice/session-3.scope", &id);
	cr_assert_str_eq(id.systemd_unit, "");
	line_kind("0::/system.slice/.service", &id);
	cr_assert_str_eq(id.systemd_unit, "");
	line_kind("0::/system.slice/a b.service", &id);
	cr_assert_str_eq(id.systemd_unit, "");
	memcpy(line, "0::/", 4);
	memset(line + 4, 'a', 300);
	strcpy(line + 304, ".service");
	line_kind(line, &id);
	cr_assert_str_eq(id.systemd_unit, "");
	/* The longest allowed name fits the array. */
	memset(line + 4, 'a', CGROUP_UNIT_MAX - 8);
	strcpy(line + 4 + CGROUP_UNIT_MAX - 8, ".service");
	line_kind(line, &id);
	cr_assert_eq(strlen(id.systemd_unit), CGROUP_UNIT_MAX);
	/* Relative paths still name the unit. */
	line_kind("0::/../../system.slice/nginx.service", &id);
	cr_assert_str_eq(id.systemd_unit, "nginx.service");
}

Test(cgroup, invalid_lines)
{
	struct cgroup_identity id;
	const char *lines[] = {
		"", "\n", ":", "::", "0:", "0::", "0::\n", "::/x", "x::/x", "-1::/x", "0:cpu",
		"0::relative/path", "12:cpu:", "0:/no-controller-colon",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		cr_assert_eq(line_kind(lines[i], &id), CGROUP_INVALID, "'%s'", lines[i]);
		cr_assert_eq(id.invalid_lines, 1);
	}
	/* A NUL inside a line makes it invalid, whatever follows. */
	cr_assert_eq(cgroup__identify_line("0::/a\0b", 7, &id), CGROUP_INVALID);
	cr_assert_eq(cgroup__identify("", 0, &id), CGROUP_INVALID);
	cr_assert_eq(id.lines, 0);
	cr_assert_eq(text_kind("\n\njunk\n", &id), CGROUP_INVALID);
	cr_assert_eq(id.lines, 3);
	cr_assert_eq(id.invalid_lines, 3);
	/* One good line among junk is enough; the junk is still counted. */
	cr_assert_eq(text_kind("junk\n0::/system.slice/a.service\n\n", &id), CGROUP_HOST);
	cr_assert_eq(id.invalid_lines, 2);
	cr_assert_str_eq(id.systemd_unit, "a.service");
}

Test(cgroup, every_truncation_of_a_container_line)
{
	const char *full = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			   UID_US ".slice/cri-containerd-" HEX64 ".scope";
	size_t n = strlen(full);
	struct cgroup_identity id;

	for (size_t len = 0; len <= n; len++) {
		enum cgroup_kind k = cgroup__identify_line(full, len, &id);

		if (len == n || len == n - strlen(".scope")) {
			cr_assert_eq(k, CGROUP_CONTAINER, "len %zu", len);
			cr_assert_str_eq(id.container_id, HEX64);
		} else {
			cr_assert_neq(k, CGROUP_CONTAINER, "len %zu", len);
			cr_assert_str_eq(id.container_id, "");
		}
	}
}

Test(cgroup, very_long_path)
{
	size_t n = 1u << 20;
	char *line = malloc(n + 200);
	struct cgroup_identity id;
	size_t len = 0;

	cr_assert_not_null(line);
	len += (size_t)sprintf(line, "0::");
	while (len < n)
		len += (size_t)sprintf(line + len, "/a-b.slice");
	len += (size_t)sprintf(line + len, "/kubepods-pod" UID_US ".slice/crio-" HEX64 ".scope");
	cr_assert_eq(cgroup__identify_line(line, len, &id), CGROUP_CONTAINER);
	cr_assert_str_eq(id.container_id, HEX64);
	cr_assert_eq(id.runtime, CGROUP_RUNTIME_CRIO);
	/* A huge single component and a path of slashes. */
	memset(line + 4, 'f', n);
	cr_assert_eq(cgroup__identify_line(line, n + 4, &id), CGROUP_HOST);
	memset(line + 4, '/', n);
	cr_assert_eq(cgroup__identify_line(line, n + 4, &id), CGROUP_HOST);
	free(line);
}

Test(cgroup, junk_never_crashes)
{
	/* NUL-free junk over the characters the parser cares about. */
	static const char alphabet[] = "0123456789abcdef:/-_.\n podkubeslicescope";
	char buf[300];
	unsigned seed = 12345;
	struct cgroup_identity id;
	unsigned kinds[4] = { 0 };

	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)(round % (int)sizeof(buf));

		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		kinds[cgroup__identify(buf, len, &id)]++;
		cr_assert_leq(strlen(id.container_id), CGROUP_CONTAINER_ID_LEN);
		cr_assert(id.container_id[0] == '\0' || strlen(id.container_id) == 64);
		cr_assert(id.pod_uid[0] == '\0' || strlen(id.pod_uid) == 36 ||
			  strlen(id.pod_uid) == 32);
		cgroup__identify_line(buf, len, &id);
	}
	cr_assert_gt(kinds[CGROUP_INVALID], 0);
	cr_assert_gt(kinds[CGROUP_HOST], 0);
}

Test(cgroup, names)
{
	cr_assert_str_eq(cgroup_kind_name(CGROUP_POD_ONLY), "pod-only");
	cr_assert_str_eq(cgroup_runtime_name(CGROUP_RUNTIME_CRIO), "cri-o");
	cr_assert_null(cgroup_runtime_name(CGROUP_RUNTIME_NONE));
	cr_assert_str_eq(cgroup_qos_name(CGROUP_QOS_BESTEFFORT), "besteffort");
	cr_assert_null(cgroup_qos_name(CGROUP_QOS_NONE));
}
