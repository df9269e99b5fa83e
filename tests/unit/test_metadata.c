// SPDX-License-Identifier: BSD-2-Clause
/* Label sets and verdicts: host services, sessions, kernel threads,
 * containers whose pods are (not yet) in the index, static pods, sandboxes,
 * namespace filters and opt-out, --pod-label and --tag, Pyroscope's
 * bounds, the cgroup cache and cgroup ids without a snapshot. Pods go
 * through the real index as API JSON. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/clock.h"
#include "metadata/metadata.h"
#include "metadata/pods.h"
#include "unit_helpers.h"

#define CID_APP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CID_PAUSE "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_NEW "4444444444444444444444444444444444444444444444444444444444444444"
#define CID_ETCD "5555555555555555555555555555555555555555555555555555555555555555"
#define UID_WEB "6b1f7a7e-3c2a-4d55-9d3e-0a1b2c3d4e5f"
#define UID_WEB_US "6b1f7a7e_3c2a_4d55_9d3e_0a1b2c3d4e5f"
#define UID_NEW "7c2a8b8f-4d3b-4e66-8e4f-1b2c3d4e5f60"
#define UID_NEW_US "7c2a8b8f_4d3b_4e66_8e4f_1b2c3d4e5f60"
#define UID_ETCD_API "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a"
#define MIRROR_ETCD "3c0ad6de1e87c6a1b2f9ecb4d0e2a7f1"

/* Where a container of UID_WEB lives under the systemd driver. */
#define WEB_SLICE "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_WEB_US ".slice"
#define WEB_APP_CGROUP WEB_SLICE "/cri-containerd-" CID_APP ".scope\n"
#define WEB_PAUSE_CGROUP WEB_SLICE "/cri-containerd-" CID_PAUSE ".scope\n"
#define NEW_APP_CGROUP "0::/kubepods/besteffort/pod" UID_NEW "/" CID_NEW "\n"

/* ---- helpers ---- */

static struct kiln_sample_key key_of(uint32_t pid, uint64_t cgid, const char *comm)
{
	struct kiln_sample_key k = { .pid = pid, .instance = pid, .kstack = 1, .ustack = 2,
				     .cgroup_id = cgid };

	snprintf(k.comm, sizeof(k.comm), "%s", comm);
	return k;
}

/* A user process snapshot: cgroup text, comm, and (when exe is set) the
 * executable mapped, as proc.c leaves them. */
struct fake_proc {
	struct proc_snapshot snap;
	struct binary bin;
	struct proc_mapping map;
};

static void fake_proc_init(struct fake_proc *p, pid_t pid, const char *comm, const char *cgroup,
			   uint64_t cgid, const char *exe)
{
	memset(p, 0, sizeof(*p));
	p->snap.pid = pid;
	p->snap.instance = (uint32_t)pid;
	snprintf(p->snap.comm, sizeof(p->snap.comm), "%s", comm);
	p->snap.cgroup = (char *)cgroup;
	p->snap.cgroup_id = cgid;
	if (exe) {
		p->bin.dev = 8;
		p->bin.ino = 4242;
		p->bin.path = (char *)exe;
		p->bin.fd = -1;
		p->map = (struct proc_mapping){ .start = 0x1000, .end = 0x2000,
						.name = (char *)exe, .bin = &p->bin };
		p->snap.maps = &p->map;
		p->snap.nmaps = 1;
		p->snap.exe_dev = 8;
		p->snap.exe_ino = 4242;
	}
}

/* "name=value,..." in the set's order; also checks names strictly rise. */
static void expect_set(const struct labels *l, const char *want)
{
	char got[8192];
	size_t pos = 0, n = 0, pairs = 0;
	const char *name, *value, *prev = NULL;

	got[0] = '\0';
	while (labels__next(l, &pos, &name, &value)) {
		if (prev)
			cr_assert_lt(strcmp(prev, name), 0, "names not sorted/unique: %s, %s", prev,
				     name);
		prev = name;
		n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%s=%s", n ? "," : "", name,
				      value);
		pairs++;
	}
	cr_assert_eq(pairs, l->n, "pairs %zu, n %zu", pairs, l->n);
	cr_assert_eq(pos, l->len);
	cr_assert_str_eq(got, want);
}

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);

	cr_assert_not_null(j, "test JSON: %s (line %d): %s", err.text, err.line, text);
	return j;
}

/* A Pod object as the API sends it. labels/annotations: JSON object
 * bodies; statuses: a containerStatuses array body. */
static void upsert_pod(struct pods *p, const char *uid, const char *ns, const char *name,
		       const char *labels, const char *annotations, const char *statuses)
{
	char text[8192];
	json_t *j;

	snprintf(text, sizeof(text),
		 "{\"kind\":\"Pod\",\"metadata\":{\"uid\":\"%s\",\"namespace\":\"%s\",\"name\":\"%s\","
		 "\"labels\":{%s},\"annotations\":{%s}},\"spec\":{\"nodeName\":\"node-a\"},"
		 "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[%s]}}",
		 uid, ns, name, labels, annotations, statuses);
	j = parse(text);
	cr_assert_eq(pods__upsert(p, j), 0, "upsert %s/%s", ns, name);
	json_decref(j);
}

static void remove_pod(struct pods *p, const char *uid)
{
	char text[256];
	json_t *j;

	snprintf(text, sizeof(text), "{\"metadata\":{\"uid\":\"%s\"}}", uid);
	j = parse(text);
	cr_assert_eq(pods__remove(p, j), 0);
	json_decref(j);
}

/* The web pod: container "app" started, the sandbox not in any status. */
static void upsert_web(struct pods *p, const char *labels, const char *annotations)
{
	upsert_pod(p, UID_WEB, "shop", "web-7d4b9c-x2x7z", labels, annotations,
		   "{\"name\":\"app\",\"containerID\":\"containerd://" CID_APP "\"},"
		   "{\"name\":\"sidecar\",\"containerID\":\"\"}");
}

static struct metadata_opts base_opts(void)
{
	return (struct metadata_opts){ .node_name = "node-a", .kube_disabled = true };
}

static struct metadata *md_new(const struct metadata_opts *o)
{
	struct metadata *md = metadata__new(o);

	cr_assert_not_null(md, "metadata__new: %s", strerror(errno));
	return md;
}

/* Labels of pid with snapshot text cgroup (cgroup id cgid). */
static enum metadata_verdict labels_of(struct metadata *md, uint32_t pid, const char *comm,
				       const char *cgroup, uint64_t cgid, const char *exe,
				       uint64_t count, struct labels *out)
{
	struct kiln_sample_key k = key_of(pid, cgid, comm);
	struct fake_proc p;

	fake_proc_init(&p, (pid_t)pid, comm, cgroup, cgid, exe);
	return metadata__labels(md, &k, &p.snap, count, out);
}

/* ---- label set API ---- */

Test(metadata_labels, get_next_copy_release)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct labels l = { 0 }, c = { 0 };

	labels_of(md, 10, "nginx", "0::/system.slice/nginx.service\n", 5, NULL, 1, &l);
	cr_assert_eq(l.n, 3);
	cr_assert_str_eq(labels__get(&l, "node"), "node-a");
	cr_assert_null(labels__get(&l, "pod"));
	cr_assert_eq(labels__copy(&c, &l), 0);
	cr_assert_eq(c.len, l.len);
	cr_assert_eq(memcmp(c.buf, l.buf, l.len), 0);
	cr_assert_eq(c.n, 3);
	labels__release(&l);
	cr_assert_null(l.buf);
	cr_assert_eq(l.len, 0);
	labels__release(&l);
	labels__release(NULL);
	cr_assert_str_eq(labels__get(&c, "systemd_unit"), "nginx.service");
	labels__release(&c);
	metadata__free(md);
}

/* ---- host processes ---- */

Test(metadata_host, systemd_service)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct labels l = { 0 };

	cr_assert_eq(labels_of(md, 10, "nginx", "0::/system.slice/nginx.service\n", 5,
			       "/usr/sbin/nginx", 3, &l), METADATA_KEEP);
	expect_set(&l, "node=node-a,service_name=nginx,systemd_unit=nginx.service");
	labels_of(md, 11, "agetty", "0::/system.slice/system-getty.slice/getty@tty1.service\n", 6,
		  "/sbin/agetty", 1, &l);
	expect_set(&l, "node=node-a,service_name=getty@tty1,systemd_unit=getty@tty1.service");
	/* Hybrid: the unit comes from the v1 systemd line. */
	labels_of(md, 12, "sshd", "3:cpu:/\n1:name=systemd:/system.slice/ssh.service\n0::/\n", 1,
		  NULL, 1, &l);
	expect_set(&l, "node=node-a,service_name=ssh,systemd_unit=ssh.service");
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_host, session_scope_uses_the_executable)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct kiln_sample_key k = key_of(20, 0, "worker-thr");
	struct labels l = { 0 };
	struct fake_proc p;

	/* The mapped executable names it, not the sampled thread. */
	fake_proc_init(&p, 20, "bench-main", "0::/user.slice/user-1000.slice/session-3.scope\n", 7,
		       "/home/me/build/my-benchmark (deleted)");
	p.bin.path = "/home/me/build/my-benchmark";     /* as proc.c strips it */
	metadata__labels(md, &k, &p.snap, 1, &l);
	expect_set(&l, "node=node-a,service_name=my-benchmark");
	/* No executable mapping: the process name (main thread's comm). */
	fake_proc_init(&p, 20, "bench-main", "0::/user.slice/user-1000.slice/session-3.scope\n", 7,
		       NULL);
	metadata__labels(md, &k, &p.snap, 1, &l);
	expect_set(&l, "node=node-a,service_name=bench-main");
	/* No snapshot and no cgroup id: the sampled thread's comm. */
	metadata__labels(md, &k, NULL, 1, &l);
	expect_set(&l, "node=node-a,service_name=worker-thr");
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_host, kernel_threads_and_idle)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct kiln_sample_key k = key_of(0, 1, "swapper/3");
	struct labels l = { 0 };
	struct fake_proc p;

	k.ustack = 0;
	cr_assert_eq(metadata__labels(md, &k, NULL, 5, &l), METADATA_KEEP);
	expect_set(&l, "node=node-a,service_name=kernel");
	/* A kthread: a snapshot with a cgroup but no executable or maps. */
	k = key_of(77, 1, "kworker/3:1");
	k.ustack = 0;
	fake_proc_init(&p, 77, "kworker/3:1", "0::/\n", 1, NULL);
	metadata__labels(md, &k, &p.snap, 1, &l);
	expect_set(&l, "node=node-a,service_name=kernel");
	/* Inside a cgroup namespace the root reads "/../..": still kernel. */
	fake_proc_init(&p, 77, "kworker/3:1", "0::/../..\n", 1, NULL);
	metadata__labels(md, &k, &p.snap, 1, &l);
	expect_set(&l, "node=node-a,service_name=kernel");
	/* A user stack means user code, whatever the snapshot lacks. */
	k.ustack = 3;
	metadata__labels(md, &k, &p.snap, 1, &l);
	expect_set(&l, "node=node-a,service_name=kworker/3:1");
	/* Gone before its snapshot (no cgroup text): not a kernel thread. */
	k.ustack = 0;
	fake_proc_init(&p, 78, "short-lived", NULL, 0, NULL);
	k.cgroup_id = 0;
	metadata__labels(md, &k, &p.snap, 1, &l);
	expect_set(&l, "node=node-a,service_name=short-lived");
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_host, plain_docker_and_podman_containers)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct labels l = { 0 };

	labels_of(md, 30, "redis-server", "0::/system.slice/docker-" CID_APP ".scope\n", 9,
		  "/usr/local/bin/redis-server", 1, &l);
	expect_set(&l, "container_id=0123456789ab,node=node-a,service_name=redis-server");
	labels_of(md, 31, "httpd", "0::/machine.slice/libpod-" CID_NEW ".scope/container\n", 10,
		  NULL, 1, &l);
	expect_set(&l, "container_id=444444444444,node=node-a,service_name=httpd");
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_host, junk_cgroup_text_is_counted)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct metadata_stats st;
	struct labels l = { 0 };

	labels_of(md, 40, "odd", "this is not\na cgroup file\n", 0, NULL, 1, &l);
	expect_set(&l, "node=node-a,service_name=odd");
	labels_of(md, 41, "odd2", "0:\n", 0, NULL, 1, &l);
	metadata__stats(md, &st);
	cr_assert_eq(st.cgroup_unparsed, 2);
	labels__release(&l);
	metadata__free(md);
}

/* ---- pods ---- */

struct pod_fixture {
	struct pods *pods;
	struct metadata *md;
	struct labels l;
};

static void pod_setup(struct pod_fixture *f, struct metadata_opts *o)
{
	f->pods = pods__new(64);
	cr_assert_not_null(f->pods);
	/* An index that says what the API says, as after the first list
	 * (the fail-closed tests below start from an unsynced one). */
	pods__mark_synced(f->pods);
	o->pods = f->pods;
	f->md = md_new(o);
	memset(&f->l, 0, sizeof(f->l));
}

static void pod_teardown(struct pod_fixture *f)
{
	labels__release(&f->l);
	metadata__free(f->md);
	pods__free(f->pods);
}

/* metadata.c's RECHECK_NS: after the index changes, a cgroup's pod is
 * looked up again once this long has passed since its last lookup. */
#define RECHECK_NS (500ull * 1000000ull)

static uint64_t pod_lookups(struct metadata *md)
{
	struct metadata_stats st;

	metadata__stats(md, &st);
	return st.pod_lookups;
}

/* The labels of pid (as labels_of) once its cgroup has looked its pod up
 * again after an index change: polled with count 0 (no sample counted)
 * until pod_lookups moves, then asked once for count samples. */
static enum metadata_verdict labels_after_relookup(struct pod_fixture *f, uint32_t pid,
						   const char *comm, const char *cgroup,
						   uint64_t cgid, const char *exe, uint64_t count)
{
	uint64_t before = pod_lookups(f->md);

	POLL_UNTIL((labels_of(f->md, pid, comm, cgroup, cgid, exe, 0, &f->l),
		    pod_lookups(f->md) > before),
		   "pid %u's cgroup never looked its pod up again after the index changed", pid);
	return labels_of(f->md, pid, comm, cgroup, cgid, exe, count, &f->l);
}

Test(metadata_pods, container_in_the_index)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct metadata_stats st;

	pod_setup(&f, &o);
	upsert_web(f.pods, "\"tier\":\"front\"", "");
	cr_assert_eq(labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, "/app/server", 1, &f.l),
		     METADATA_KEEP);
	expect_set(&f.l, "container=app,namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,"
			 "service_name=shop/app");
	metadata__stats(f.md, &st);
	cr_assert_eq(st.pod_lookups, 1);
	cr_assert_eq(st.kube_unknown_containers, 0);
	pod_teardown(&f);
}

Test(metadata_pods, service_name_precedence)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;

	pod_setup(&f, &o);
	upsert_web(f.pods, "\"app.kubernetes.io/name\":\"web\"", "");
	labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 1, &f.l);
	cr_assert_str_eq(labels__get(&f.l, "service_name"), "web");
	upsert_web(f.pods, "\"app.kubernetes.io/name\":\"web\"",
		   "\"pyroscope.io/service_name\":\"shop-frontend\"");
	labels_after_relookup(&f, 100, "app", WEB_APP_CGROUP, 300, NULL, 1);
	expect_set(&f.l, "container=app,namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,"
			 "service_name=shop-frontend");
	pod_teardown(&f);
}

Test(metadata_pods, pod_not_yet_known_then_known_then_gone)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct metadata_stats st;
	uint64_t start, end = unit_deadline(), last;

	/* At most one lookup per RECHECK_NS per cgroup: shown by two calls
	 * that measurably fell within RECHECK_NS of each other. A host so
	 * loaded that they did not proves nothing and gets a fresh try. */
	for (;;) {
		pod_setup(&f, &o);
		start = monotonic_ns();
		/* The watcher has not reported the pod: cgroup-derived labels. */
		labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, "/usr/bin/java", 1, &f.l);
		expect_set(&f.l, "container_id=444444444444,node=node-a,pod_uid=" UID_NEW
				 ",service_name=java");
		upsert_pod(f.pods, UID_NEW, "billing", "ledger-0", "", "",
			   "{\"name\":\"ledger\",\"containerID\":\"containerd://" CID_NEW "\"}");
		labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, "/usr/bin/java", 1, &f.l);
		if (monotonic_ns() - start < RECHECK_NS)
			break;
		pod_teardown(&f);
		cr_assert_lt(monotonic_ns(), end, "never two lookups within %llu ms of each other",
			     RECHECK_NS / 1000000ull);
	}
	/* The index changed, but too recently looked up: still the cgroup's. */
	expect_set(&f.l, "container_id=444444444444,node=node-a,pod_uid=" UID_NEW
			 ",service_name=java");
	cr_assert_eq(pod_lookups(f.md), 1);
	/* ...then the names. */
	labels_after_relookup(&f, 200, "java", NEW_APP_CGROUP, 301, "/usr/bin/java", 1);
	expect_set(&f.l, "container=ledger,namespace=billing,node=node-a,pod=ledger-0,"
			 "service_name=billing/ledger");
	cr_assert_eq(pod_lookups(f.md), 2);
	/* Nothing changed in the index: no further lookup, even once
	 * RECHECK_NS has certainly passed since the last one. */
	last = monotonic_ns();
	POLL_UNTIL(monotonic_ns() - last > RECHECK_NS, "RECHECK_NS to pass on the monotonic clock");
	labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, "/usr/bin/java", 1, &f.l);
	metadata__stats(f.md, &st);
	cr_assert_eq(st.pod_lookups, 2);
	cr_assert_eq(st.kube_unknown_containers, 1);
	/* Deleted from the index: back to what the cgroup says. */
	remove_pod(f.pods, UID_NEW);
	labels_after_relookup(&f, 200, "java", NEW_APP_CGROUP, 301, "/usr/bin/java", 1);
	expect_set(&f.l, "container_id=444444444444,node=node-a,pod_uid=" UID_NEW
			 ",service_name=java");
	pod_teardown(&f);
}

Test(metadata_pods, container_started_after_its_pod_was_indexed)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;

	pod_setup(&f, &o);
	/* Known pod, container id not in a status yet: pod-level labels. */
	upsert_pod(f.pods, UID_NEW, "billing", "ledger-0", "", "", "{\"name\":\"ledger\"}");
	labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, NULL, 1, &f.l);
	expect_set(&f.l, "namespace=billing,node=node-a,pod=ledger-0,service_name=billing/ledger-0");
	upsert_pod(f.pods, UID_NEW, "billing", "ledger-0", "", "",
		   "{\"name\":\"ledger\",\"containerID\":\"containerd://" CID_NEW "\"}");
	labels_after_relookup(&f, 200, "java", NEW_APP_CGROUP, 301, NULL, 1);
	expect_set(&f.l, "container=ledger,namespace=billing,node=node-a,pod=ledger-0,"
			 "service_name=billing/ledger");
	pod_teardown(&f);
}

Test(metadata_pods, sandbox_and_conmon_get_the_pod_only)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;

	pod_setup(&f, &o);
	upsert_web(f.pods, "", "");
	labels_of(f.md, 101, "pause", WEB_PAUSE_CGROUP, 302, "/pause", 1, &f.l);
	expect_set(&f.l, "namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,"
			 "service_name=shop/web-7d4b9c-x2x7z");
	labels_of(f.md, 102, "conmon", WEB_SLICE "/crio-conmon-" CID_PAUSE ".scope\n", 303, NULL, 1,
		  &f.l);
	expect_set(&f.l, "namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,"
			 "service_name=shop/web-7d4b9c-x2x7z");
	/* With the app label, the sandbox joins the pod's service. */
	upsert_web(f.pods, "\"app.kubernetes.io/name\":\"web\"", "");
	labels_after_relookup(&f, 101, "pause", WEB_PAUSE_CGROUP, 302, "/pause", 1);
	expect_set(&f.l, "namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,service_name=web");
	pod_teardown(&f);
}

Test(metadata_pods, static_pod_through_its_mirror_uid)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	const char *cgroup = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			     MIRROR_ETCD ".slice/cri-containerd-" CID_ETCD ".scope\n";

	pod_setup(&f, &o);
	/* The mirror object's uid is not the cgroup's; its annotation is.
	 * No container statuses yet: found by UID alone. */
	upsert_pod(f.pods, UID_ETCD_API, "kube-system", "etcd-node-a", "\"component\":\"etcd\"",
		   "\"kubernetes.io/config.mirror\":\"" MIRROR_ETCD "\","
		   "\"kubernetes.io/config.hash\":\"" MIRROR_ETCD "\"", "");
	labels_of(f.md, 300, "etcd", cgroup, 304, "/usr/local/bin/etcd", 1, &f.l);
	expect_set(&f.l, "namespace=kube-system,node=node-a,pod=etcd-node-a,"
			 "service_name=kube-system/etcd-node-a");
	upsert_pod(f.pods, UID_ETCD_API, "kube-system", "etcd-node-a", "\"component\":\"etcd\"",
		   "\"kubernetes.io/config.mirror\":\"" MIRROR_ETCD "\"",
		   "{\"name\":\"etcd\",\"containerID\":\"containerd://" CID_ETCD "\"}");
	labels_after_relookup(&f, 300, "etcd", cgroup, 304, "/usr/local/bin/etcd", 1);
	expect_set(&f.l, "container=etcd,namespace=kube-system,node=node-a,pod=etcd-node-a,"
			 "service_name=kube-system/etcd");
	pod_teardown(&f);
}

Test(metadata_pods, equal_sets_have_equal_bytes)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct labels a = { 0 };

	pod_setup(&f, &o);
	upsert_web(f.pods, "", "");
	/* Two processes of one container, one seen through hybrid v1 lines. */
	labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, "/app/server", 1, &a);
	labels_of(f.md, 110, "helper",
		  "11:memory:/kubepods/burstable/pod" UID_WEB "/" CID_APP "\n0::/\n", 1, "/bin/sh", 1,
		  &f.l);
	cr_assert_eq(a.len, f.l.len);
	cr_assert_eq(memcmp(a.buf, f.l.buf, a.len), 0);
	labels__release(&a);
	pod_teardown(&f);
}

/* ---- filters ---- */

Test(metadata_filters, include_globs)
{
	const char *include[] = { "shop*", "pay?" };
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct metadata_stats st;

	o.include_namespaces = include;
	o.ninclude_namespaces = 2;
	pod_setup(&f, &o);
	upsert_web(f.pods, "", "");
	upsert_pod(f.pods, UID_NEW, "kube-system", "coredns-1", "", "",
		   "{\"name\":\"coredns\",\"containerID\":\"containerd://" CID_NEW "\"}");
	cr_assert_eq(labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 7, &f.l),
		     METADATA_KEEP);
	cr_assert_eq(labels_of(f.md, 200, "coredns", NEW_APP_CGROUP, 301, NULL, 5, &f.l),
		     METADATA_EXCLUDED_NAMESPACE);
	/* Labels are filled even when filtered. */
	cr_assert_str_eq(labels__get(&f.l, "namespace"), "kube-system");
	/* Host processes and the kernel have no namespace: excluded. */
	cr_assert_eq(labels_of(f.md, 10, "nginx", "0::/system.slice/nginx.service\n", 5, NULL, 3,
			       &f.l), METADATA_EXCLUDED_NAMESPACE);
	{
		struct kiln_sample_key k = key_of(0, 1, "swapper/0");

		cr_assert_eq(metadata__labels(f.md, &k, NULL, 2, &f.l),
			     METADATA_EXCLUDED_NAMESPACE);
	}
	metadata__stats(f.md, &st);
	cr_assert_eq(st.filtered[METADATA_KEEP], 7);
	cr_assert_eq(st.filtered[METADATA_EXCLUDED_NAMESPACE], 10);
	cr_assert_eq(st.filtered[METADATA_OPTED_OUT], 0);
	pod_teardown(&f);
}

Test(metadata_filters, exclude_globs_and_opt_out)
{
	const char *exclude[] = { "kube-*" };
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct metadata_stats st;

	o.exclude_namespaces = exclude;
	o.nexclude_namespaces = 1;
	pod_setup(&f, &o);
	upsert_web(f.pods, "", "\"kiln.dev/profile\":\"false\"");
	upsert_pod(f.pods, UID_NEW, "kube-system", "coredns-1", "", "\"kiln.dev/profile\":\"false\"",
		   "{\"name\":\"coredns\",\"containerID\":\"containerd://" CID_NEW "\"}");
	cr_assert_eq(labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 4, &f.l),
		     METADATA_OPTED_OUT);
	/* Excluded and opted out: the namespace decides first. */
	cr_assert_eq(labels_of(f.md, 200, "coredns", NEW_APP_CGROUP, 301, NULL, 2, &f.l),
		     METADATA_EXCLUDED_NAMESPACE);
	cr_assert_eq(labels_of(f.md, 10, "nginx", "0::/system.slice/nginx.service\n", 5, NULL, 1,
			       &f.l), METADATA_KEEP);
	/* "true" or anything but "false" profiles. */
	upsert_web(f.pods, "", "\"kiln.dev/profile\":\"true\"");
	cr_assert_eq(labels_after_relookup(&f, 100, "app", WEB_APP_CGROUP, 300, NULL, 1),
		     METADATA_KEEP);
	metadata__stats(f.md, &st);
	cr_assert_eq(st.filtered[METADATA_OPTED_OUT], 4);
	cr_assert_eq(st.filtered[METADATA_EXCLUDED_NAMESPACE], 2);
	cr_assert_eq(st.filtered[METADATA_KEEP], 2);
	pod_teardown(&f);
}

/* Fail closed: before the first list, a process in a pod cgroup the
 * index does not know may be in a pod that opted out or in an excluded
 * namespace: not profiled, counted as pods_not_synced. Host processes and
 * the kernel keep their verdicts; pods already known (an earlier page)
 * get theirs; after the sync the normal verdicts apply at once. */
Test(metadata_filters, unsynced_index_fails_closed)
{
	const char *exclude[] = { "kube-*" };
	struct metadata_opts o = base_opts();
	struct metadata_stats st;
	struct pod_fixture f;
	json_t *page;

	o.exclude_namespaces = exclude;
	o.nexclude_namespaces = 1;
	f.pods = pods__new(64);
	cr_assert_not_null(f.pods);
	o.pods = f.pods;
	f.md = md_new(&o);
	memset(&f.l, 0, sizeof(f.l));
	cr_assert_not(pods__synced(f.pods));

	/* The opted-out pod, not listed yet: dropped, labels still filled. */
	cr_assert_eq(labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 4, &f.l),
		     METADATA_PODS_NOT_SYNCED);
	cr_assert_str_eq(labels__get(&f.l, "pod_uid"), UID_WEB);
	/* A cgroup with only a pod UID or only a container id is a pod's too. */
	cr_assert_eq(labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, NULL, 2, &f.l),
		     METADATA_PODS_NOT_SYNCED);
	/* Host processes and the kernel are not affected. */
	cr_assert_eq(labels_of(f.md, 10, "nginx", "0::/system.slice/nginx.service\n", 5, NULL, 3,
			       &f.l), METADATA_KEEP);
	{
		struct kiln_sample_key k = key_of(0, 1, "swapper/0");

		cr_assert_eq(metadata__labels(f.md, &k, NULL, 1, &f.l), METADATA_KEEP);
	}
	/* A first page brings the excluded pod: its own verdict at once (no
	 * RECHECK_NS wait for an entry that was not synced). */
	pods__list_begin(f.pods);
	page = json_loads("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},"
			  "\"items\":[{\"metadata\":{\"uid\":\"" UID_NEW "\",\"namespace\":"
			  "\"kube-system\",\"name\":\"coredns-1\"},\"status\":{\"containerStatuses\":"
			  "[{\"name\":\"coredns\",\"containerID\":\"containerd://" CID_NEW "\"}]}}]}",
			  0, NULL);
	cr_assert_not_null(page);
	cr_assert_eq(pods__list_page(f.pods, page), 0);
	json_decref(page);
	cr_assert_eq(labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, NULL, 5, &f.l),
		     METADATA_EXCLUDED_NAMESPACE);
	cr_assert_eq(labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 1, &f.l),
		     METADATA_PODS_NOT_SYNCED);
	/* The last page: the opted-out pod; then the list ends. */
	upsert_web(f.pods, "", "\"kiln.dev/profile\":\"false\"");
	pods__list_end(f.pods);
	cr_assert(pods__synced(f.pods));
	cr_assert_eq(labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 6, &f.l),
		     METADATA_OPTED_OUT);
	metadata__stats(f.md, &st);
	cr_assert_eq(st.filtered[METADATA_PODS_NOT_SYNCED], 7);
	cr_assert_eq(st.filtered[METADATA_OPTED_OUT], 6);
	cr_assert_eq(st.filtered[METADATA_EXCLUDED_NAMESPACE], 5);
	cr_assert_eq(st.filtered[METADATA_KEEP], 4);
	cr_assert_str_eq(metadata_verdict_names[METADATA_PODS_NOT_SYNCED], "pods_not_synced");
	pod_teardown(&f);
}

/* Synced, a pod the index does not know gets the podless verdict, as
 * before: the container may have started after the list (the watch
 * brings it). */
Test(metadata_filters, synced_index_unknown_pod_is_podless)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;

	pod_setup(&f, &o);
	cr_assert_eq(labels_of(f.md, 200, "java", NEW_APP_CGROUP, 301, NULL, 1, &f.l),
		     METADATA_KEEP);
	pod_teardown(&f);
}

/* Without a pod index (--no-kube, no API), no process is held back. */
Test(metadata_filters, no_index_never_waits_for_a_sync)
{
	struct metadata_opts o = base_opts();
	struct metadata *md = md_new(&o);
	struct labels l = { 0 };

	cr_assert_eq(labels_of(md, 100, "app", WEB_APP_CGROUP, 300, NULL, 1, &l), METADATA_KEEP);
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_filters, empty_glob_is_rejected)
{
	const char *include[] = { "" };
	struct metadata_opts o = base_opts();

	o.include_namespaces = include;
	o.ninclude_namespaces = 1;
	cr_assert_null(metadata__new(&o));
	cr_assert_eq(errno, EINVAL);
}

/* ---- --pod-label and --tag ---- */

Test(metadata_names, pod_label_copies_are_sanitized)
{
	const char *keys[] = { "app.kubernetes.io/version", "team-name", "9lives", "absent" };
	struct metadata_opts o = base_opts();
	struct pod_fixture f;

	o.pod_labels = keys;
	o.npod_labels = 4;
	pod_setup(&f, &o);
	upsert_web(f.pods, "\"app.kubernetes.io/version\":\"1.4.2\",\"team-name\":\"checkout\","
			   "\"9lives\":\"cat\"", "");
	labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 1, &f.l);
	expect_set(&f.l, "_9lives=cat,app_kubernetes_io_version=1.4.2,container=app,"
			 "namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,service_name=shop/app,"
			 "team_name=checkout");
	/* Host processes have no pod labels. */
	labels_of(f.md, 10, "nginx", "0::/system.slice/nginx.service\n", 5, NULL, 1, &f.l);
	expect_set(&f.l, "node=node-a,service_name=nginx,systemd_unit=nginx.service");
	pod_teardown(&f);
}

static void expect_rejected(const char *const *tags, size_t ntags, const char *const *keys,
			    size_t nkeys)
{
	struct metadata_opts o = base_opts();

	o.tags = tags;
	o.ntags = ntags;
	o.pod_labels = keys;
	o.npod_labels = nkeys;
	errno = 0;
	cr_assert_null(metadata__new(&o), "accepted tag '%s' / pod label '%s'",
		       ntags ? tags[ntags - 1] : "", nkeys ? keys[nkeys - 1] : "");
	cr_assert_eq(errno, EINVAL);
}

Test(metadata_names, bad_pod_labels_are_rejected)
{
	const char *builtin[] = { "namespace" };
	const char *clash[] = { "a.b", "a-b" };
	const char *reserved[] = { "--x" };
	const char *empty[] = { "" };
	const char *tag[] = { "team_name=x" };
	const char *team[] = { "team-name" };

	expect_rejected(NULL, 0, builtin, 1);
	expect_rejected(NULL, 0, clash, 2);
	expect_rejected(NULL, 0, reserved, 1);
	expect_rejected(NULL, 0, empty, 1);
	expect_rejected(tag, 1, team, 1);
}

Test(metadata_names, tags_on_every_set)
{
	const char *tags[] = { "env=prod", "cluster-name=eu-1", "1st=x", "region=eu=west" };
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct kiln_sample_key k = key_of(0, 1, "swapper/0");

	o.tags = tags;
	o.ntags = 4;
	pod_setup(&f, &o);
	upsert_web(f.pods, "", "");
	labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 1, &f.l);
	expect_set(&f.l, "_1st=x,cluster_name=eu-1,container=app,env=prod,namespace=shop,"
			 "node=node-a,pod=web-7d4b9c-x2x7z,region=eu=west,service_name=shop/app");
	labels_of(f.md, 10, "nginx", "0::/system.slice/nginx.service\n", 5, NULL, 1, &f.l);
	expect_set(&f.l, "_1st=x,cluster_name=eu-1,env=prod,node=node-a,region=eu=west,"
			 "service_name=nginx,systemd_unit=nginx.service");
	metadata__labels(f.md, &k, NULL, 1, &f.l);
	expect_set(&f.l, "_1st=x,cluster_name=eu-1,env=prod,node=node-a,region=eu=west,"
			 "service_name=kernel");
	pod_teardown(&f);
}

Test(metadata_names, bad_tags_are_rejected)
{
	static char long_value[2100];
	const char *cases[][2] = {
		{ "noequals", NULL }, { "=v", NULL }, { "k=", NULL }, { "service_name=x", NULL },
		{ "node=x", NULL }, { "__meta=x", NULL }, { "a=1", "a=2" }, { "a.b=1", "a_b=2" },
		{ "bad=\xff\xfe", NULL }, { "bad=\xc0\xaf", NULL }, { "bad=\xed\xa0\x80", NULL },
		{ long_value, NULL },
	};

	memcpy(long_value, "k=", 2);
	memset(long_value + 2, 'v', 2049);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_rejected(cases[i], cases[i][1] ? 2 : 1, NULL, 0);
}

Test(metadata_names, too_many_labels_is_rejected)
{
	char buf[24][16];
	const char *tags[24];
	struct metadata_opts o = base_opts();
	struct metadata *md;

	for (int i = 0; i < 24; i++) {
		snprintf(buf[i], sizeof(buf[i]), "t%d=v", i);
		tags[i] = buf[i];
	}
	/* 6 built-in + 23 = 29 fit (30 with __name__)... */
	o.tags = tags;
	o.ntags = 23;
	md = md_new(&o);
	metadata__free(md);
	/* ...24 do not. */
	expect_rejected(tags, 24, NULL, 0);
}

/* ---- values ---- */

Test(metadata_values, bounded_and_valid_utf8)
{
	static char node[3000];
	struct metadata_opts o = base_opts();
	struct metadata *md;
	struct metadata_stats st;
	struct labels l = { 0 };
	struct kiln_sample_key k = key_of(50, 0, "\xff\xfe" "abc\xc3");
	const char *v;

	/* 2047 bytes then a 2-byte character: cut before it. */
	memset(node, 'n', 2047);
	memcpy(node + 2047, "\xc3\xa9tail", 6);
	o.node_name = node;
	md = md_new(&o);
	metadata__labels(md, &k, NULL, 1, &l);
	v = labels__get(&l, "node");
	cr_assert_eq(strlen(v), 2047);
	cr_assert_str_eq(labels__get(&l, "service_name"), "??abc?");
	metadata__stats(md, &st);
	cr_assert_eq(st.label_values_truncated, 2);
	cr_assert_eq(st.labels_dropped, 0);
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_values, node_from_env_then_hostname)
{
	struct metadata_opts o = base_opts();
	struct metadata *md;
	struct labels l = { 0 };
	struct kiln_sample_key k = key_of(50, 0, "x");
	char host[256] = "";

	o.node_name = NULL;
	setenv("NODE_NAME", "worker-3", 1);
	md = md_new(&o);
	metadata__labels(md, &k, NULL, 1, &l);
	cr_assert_str_eq(labels__get(&l, "node"), "worker-3");
	metadata__free(md);
	unsetenv("NODE_NAME");
	cr_assert_eq(gethostname(host, sizeof(host)), 0);
	md = md_new(&o);
	metadata__labels(md, &k, NULL, 1, &l);
	cr_assert_str_eq(labels__get(&l, "node"), host);
	labels__release(&l);
	metadata__free(md);
}

/* ---- the cgroup cache ---- */

Test(metadata_cache, hits_misses_and_lru_eviction)
{
	struct metadata_opts o = base_opts();
	struct metadata *md;
	struct metadata_stats st;
	struct labels l = { 0 };

	o.max_cgroups = 2;
	md = md_new(&o);
	labels_of(md, 1, "a", "0::/system.slice/a.service\n", 11, NULL, 1, &l);
	labels_of(md, 2, "b", "0::/system.slice/b.service\n", 12, NULL, 1, &l);
	labels_of(md, 3, "a2", "0::/system.slice/a.service\n", 11, NULL, 1, &l); /* hit; a is newest */
	labels_of(md, 4, "c", "0::/system.slice/c.service\n", 13, NULL, 1, &l);  /* evicts b */
	metadata__stats(md, &st);
	cr_assert_eq(st.cgroup_misses, 3);
	cr_assert_eq(st.cgroup_hits, 1);
	cr_assert_eq(st.cgroup_evictions, 1);
	cr_assert_eq(st.cgroups, 2);
	labels_of(md, 5, "a3", "0::/system.slice/a.service\n", 11, NULL, 1, &l);  /* still there */
	labels_of(md, 6, "b2", "0::/system.slice/b.service\n", 12, NULL, 1, &l);  /* back: evicts c */
	expect_set(&l, "node=node-a,service_name=b,systemd_unit=b.service");
	metadata__stats(md, &st);
	cr_assert_eq(st.cgroup_hits, 2);
	cr_assert_eq(st.cgroup_misses, 4);
	cr_assert_eq(st.cgroup_evictions, 2);
	cr_assert_eq(st.cgroups, 2);
	/* Many cgroups through a small cache: the bound holds. */
	for (int i = 0; i < 1000; i++) {
		char text[64], unit[32];

		snprintf(text, sizeof(text), "0::/system.slice/s%d.service\n", i);
		snprintf(unit, sizeof(unit), "s%d.service", i);
		labels_of(md, 100 + (uint32_t)i, "s", text, 1000 + (uint64_t)i, NULL, 1, &l);
		cr_assert_str_eq(labels__get(&l, "systemd_unit"), unit);
	}
	metadata__stats(md, &st);
	cr_assert_eq(st.cgroups, 2);
	cr_assert_eq(st.cgroup_evictions, 1002);
	labels__release(&l);
	metadata__free(md);
}

Test(metadata_cache, cgroup_id_without_snapshot)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct metadata_stats st;
	struct kiln_sample_key k;

	pod_setup(&f, &o);
	upsert_web(f.pods, "", "");
	/* A v2 text speaks for its cgroup id... */
	labels_of(f.md, 100, "app", WEB_APP_CGROUP, 300, NULL, 1, &f.l);
	k = key_of(101, 300, "app-thread");
	metadata__labels(f.md, &k, NULL, 1, &f.l);
	expect_set(&f.l, "container=app,namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,"
			 "service_name=shop/app");
	/* ...a hybrid text whose v2 line is "/" does not. The id 999999999
	 * names no cgroup here, so it stays unresolved. */
	labels_of(f.md, 110, "helper",
		  "11:memory:/kubepods/burstable/pod" UID_WEB "/" CID_APP "\n0::/\n", 999999999,
		  NULL, 1, &f.l);
	cr_assert_str_eq(labels__get(&f.l, "container"), "app");
	k = key_of(111, 999999999, "helper");
	metadata__labels(f.md, &k, NULL, 1, &f.l);
	expect_set(&f.l, "node=node-a,service_name=helper");
	metadata__stats(f.md, &st);
	cr_assert_eq(st.cgroup_ids_resolved, 0);
	cr_assert_eq(st.cgroup_ids_unresolved, 1);
	pod_teardown(&f);
}

/* The first cgroup2 mount, as metadata.c finds it. */
static bool cgroup2_mount(char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192], root[4096], mnt[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (sep && strncmp(sep, " - cgroup2 ", 11) == 0 &&
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2 &&
		    strcmp(root, "/") == 0) {
			snprintf(out, size, "%s", mnt);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* A real cgroup made to look like a pod's container: samples of it without
 * a snapshot still get the pod's names, through its id. */
Test(metadata_cache, cgroup_id_mapped_to_its_path)
{
	struct metadata_opts o = base_opts();
	struct pod_fixture f;
	struct metadata_stats st;
	struct kiln_sample_key k;
	char mnt[4096], top[4200], pod[4300], ctr[4500];
	union {
		struct file_handle fh;
		char bytes[sizeof(struct file_handle) + 64];
	} h;
	uint64_t id;
	int mount_id;

	if (!cgroup2_mount(mnt, sizeof(mnt)))
		cr_skip_test("no cgroup2 mount in /proc/self/mountinfo: cgroup ids need cgroup v2");
	snprintf(top, sizeof(top), "%s/kiln-test-%d.slice", mnt, (int)getpid());
	snprintf(pod, sizeof(pod), "%s/kubepods-burstable-pod" UID_WEB_US ".slice", top);
	snprintf(ctr, sizeof(ctr), "%s/cri-containerd-" CID_APP ".scope", pod);
	if (mkdir(top, 0755))
		cr_skip_test("needs a cgroup of its own: mkdir %s: %s (run as root)", top,
			     strerror(errno));
	cr_assert_eq(mkdir(pod, 0755), 0, "%s", strerror(errno));
	cr_assert_eq(mkdir(ctr, 0755), 0, "%s", strerror(errno));
	h.fh.handle_bytes = 64;
	cr_assert_eq(name_to_handle_at(AT_FDCWD, ctr, &h.fh, &mount_id, 0), 0, "%s",
		     strerror(errno));
	cr_assert_eq(h.fh.handle_bytes, 8);
	memcpy(&id, h.fh.f_handle, sizeof(id));

	pod_setup(&f, &o);
	upsert_web(f.pods, "", "");
	k = key_of(4000, id, "app-thread");
	metadata__labels(f.md, &k, NULL, 1, &f.l);
	expect_set(&f.l, "container=app,namespace=shop,node=node-a,pod=web-7d4b9c-x2x7z,"
			 "service_name=shop/app");
	metadata__labels(f.md, &k, NULL, 1, &f.l);
	metadata__stats(f.md, &st);
	cr_assert_eq(st.cgroup_ids_resolved, 1);
	cr_assert_eq(st.cgroup_hits, 1);
	pod_teardown(&f);
	rmdir(ctr);
	rmdir(pod);
	rmdir(top);
}

/* ---- the pod watcher ---- */

Test(metadata_kube, watcher_started_for_an_explicit_api)
{
	struct metadata_opts o = base_opts();
	struct metadata *md;
	struct metadata_stats st;

	o.kube_disabled = false;
	o.kube_api = "http://127.0.0.1:9";      /* nothing listens: it retries */
	md = md_new(&o);
	metadata__stats(md, &st);
	cr_assert(st.kube_enabled);
	cr_assert_not(st.kube_synced);
	metadata__free(md);
}

Test(metadata_kube, in_cluster_without_credentials_is_an_error)
{
	struct metadata_opts o = base_opts();
	struct metadata *md;
	struct metadata_stats st;

	if (access("/var/run/secrets/kubernetes.io/serviceaccount/token", F_OK) == 0)
		cr_skip_test("needs a host outside Kubernetes: this one has a service account "
			     "token (/var/run/secrets/kubernetes.io/serviceaccount/token)");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	o.kube_disabled = false;
	errno = 0;
	cr_assert_null(metadata__new(&o));
	cr_assert_neq(errno, 0);
	/* --no-kube: cgroup-derived labels only, no error. */
	o.kube_disabled = true;
	md = md_new(&o);
	metadata__stats(md, &st);
	cr_assert_not(st.kube_enabled);
	metadata__free(md);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}
