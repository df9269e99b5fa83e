// SPDX-License-Identifier: BSD-2-Clause
/* The pod index: PodList and watch-event objects as the API sends them,
 * lookups by container id and pod UID, bounds and hostile input. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/pods.h"

#define CID_APP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CID_SIDE "1111111111111111111111111111111111111111111111111111111111111111"
#define CID_INIT "2222222222222222222222222222222222222222222222222222222222222222"
#define CID_EPH "3333333333333333333333333333333333333333333333333333333333333333"
#define CID_NEW "4444444444444444444444444444444444444444444444444444444444444444"
#define CID_ETCD "5555555555555555555555555555555555555555555555555555555555555555"
#define UID_WEB "6b1f7a7e-3c2a-4d55-9d3e-0a1b2c3d4e5f"
#define UID_ETCD_API "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a"
#define MIRROR_ETCD "3c0ad6de1e87c6a1b2f9ecb4d0e2a7f1"

/* A PodList as GET /api/v1/pods returns it: a regular pod with a sidecar,
 * an init and an ephemeral container, and a static pod (mirror object). */
static const char pod_list_json[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1042\"},"
	"\"items\":["
	"{\"metadata\":{\"name\":\"web-7d4b9c\",\"namespace\":\"shop\",\"uid\":\"" UID_WEB "\","
	"\"resourceVersion\":\"1001\",\"labels\":{\"app.kubernetes.io/name\":\"web\",\"tier\":\"front\"},"
	"\"annotations\":{\"pyroscope.io/service_name\":\"shop-web\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"web-7d4b9c\"}]},"
	"\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"app\"},{\"name\":\"envoy\"}]},"
	"\"status\":{\"phase\":\"Running\","
	"\"initContainerStatuses\":[{\"name\":\"migrate\",\"containerID\":\"containerd://" CID_INIT "\"}],"
	"\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://" CID_APP "\",\"ready\":true},"
	"{\"name\":\"envoy\",\"containerID\":\"cri-o://" CID_SIDE "\"},"
	"{\"name\":\"waiting\",\"containerID\":\"\"},{\"name\":\"pending\"}],"
	"\"ephemeralContainerStatuses\":[{\"name\":\"debugger\",\"containerID\":\"docker://" CID_EPH "\"}]}},"
	"{\"metadata\":{\"name\":\"etcd-node-a\",\"namespace\":\"kube-system\",\"uid\":\"" UID_ETCD_API "\","
	"\"annotations\":{\"kubernetes.io/config.mirror\":\"" MIRROR_ETCD "\","
	"\"kubernetes.io/config.hash\":\"" MIRROR_ETCD "\",\"kubernetes.io/config.source\":\"file\"}},"
	"\"spec\":{\"nodeName\":\"node-a\"},"
	"\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"etcd\",\"containerID\":\"containerd://" CID_ETCD "\"}]}}"
	"]}";

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);

	cr_assert_not_null(j, "fixture JSON: %s (line %d)", err.text, err.line);
	return j;
}

static struct pods *loaded(void)
{
	struct pods *p = pods__new(100);
	json_t *list = parse(pod_list_json);

	cr_assert_not_null(p);
	cr_assert_eq(pods__replace(p, list), 0);
	json_decref(list);
	return p;
}

/* Applies one watch-stream line the way the watcher does. */
static int apply_event(struct pods *p, const char *line)
{
	json_t *ev = parse(line), *obj = json_object_get(ev, "object");
	const char *type = json_string_value(json_object_get(ev, "type"));
	int err = -EINVAL;

	cr_assert_not_null(type);
	if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED"))
		err = pods__upsert(p, obj);
	else if (!strcmp(type, "DELETED"))
		err = pods__remove(p, obj);
	json_decref(ev);
	return err;
}

Test(pods, list_indexes_containers_by_id_with_names)
{
	struct pods *p = loaded();
	struct pod_info info;

	cr_assert_eq(pods__count(p), 2);
	cr_assert(pods__lookup(p, CID_APP, NULL, &info));
	cr_assert_str_eq(info.uid, UID_WEB);
	cr_assert_str_eq(info.namespace_, "shop");
	cr_assert_str_eq(info.name, "web-7d4b9c");
	cr_assert_str_eq(info.container, "app");
	cr_assert_str_eq(info.service_name, "shop-web");
	cr_assert_not(info.opted_out);
	cr_assert_eq(info.nlabels, 2);
	cr_assert_str_eq(pod_info__label(&info, "app.kubernetes.io/name"), "web");
	cr_assert_str_eq(pod_info__label(&info, "tier"), "front");
	cr_assert_null(pod_info__label(&info, "missing"));
	pod_info__release(&info);

	/* cri-o:// and docker:// prefixes, init and ephemeral statuses. */
	cr_assert(pods__lookup(p, CID_SIDE, NULL, &info));
	cr_assert_str_eq(info.container, "envoy");
	pod_info__release(&info);
	cr_assert(pods__lookup(p, CID_INIT, NULL, &info));
	cr_assert_str_eq(info.container, "migrate");
	pod_info__release(&info);
	cr_assert(pods__lookup(p, CID_EPH, NULL, &info));
	cr_assert_str_eq(info.container, "debugger");
	cr_assert_str_eq(info.name, "web-7d4b9c");
	pod_info__release(&info);

	/* Prefixed ids are not what the cgroup side passes. */
	cr_assert_not(pods__lookup(p, "containerd://" CID_APP, NULL, &info));
	cr_assert_not(pods__lookup(p, CID_NEW, NULL, &info));
	cr_assert_not(pods__lookup(p, NULL, NULL, &info));
	pods__free(p);
}

Test(pods, pod_uid_fallback_in_both_spellings)
{
	struct pods *p = loaded();
	struct pod_info info;

	/* The sandbox: a container id that no status lists, plus the pod UID
	 * the systemd driver writes with underscores. */
	cr_assert(pods__lookup(p, CID_NEW, "6b1f7a7e_3c2a_4d55_9d3e_0a1b2c3d4e5f", &info));
	cr_assert_str_eq(info.name, "web-7d4b9c");
	cr_assert_null(info.container);
	pod_info__release(&info);
	cr_assert(pods__lookup(p, NULL, UID_WEB, &info));
	cr_assert_str_eq(info.uid, UID_WEB);
	pod_info__release(&info);
	cr_assert(pods__lookup(p, NULL, "6B1F7A7E-3C2A-4D55-9D3E-0A1B2C3D4E5F", &info));
	pod_info__release(&info);
	cr_assert_not(pods__lookup(p, NULL, "6b1f7a7e-0000-4d55-9d3e-0a1b2c3d4e5f", &info));
	cr_assert_not(pods__lookup(p, NULL, "not/a uid", &info));
	cr_assert_not(pods__lookup(p, NULL, "", &info));
	/* The container id wins over a UID of another pod. */
	cr_assert(pods__lookup(p, CID_ETCD, UID_WEB, &info));
	cr_assert_str_eq(info.name, "etcd-node-a");
	pod_info__release(&info);
	pods__free(p);
}

Test(pods, static_pod_found_by_mirror_uid)
{
	struct pods *p = loaded();
	struct pod_info info;

	cr_assert(pods__lookup(p, NULL, MIRROR_ETCD, &info));
	cr_assert_str_eq(info.name, "etcd-node-a");
	cr_assert_str_eq(info.namespace_, "kube-system");
	cr_assert_str_eq(info.uid, MIRROR_ETCD, "the cgroup-side UID is the mirror one");
	cr_assert_null(info.service_name);
	cr_assert_eq(info.nlabels, 0);
	pod_info__release(&info);
	cr_assert(pods__lookup(p, CID_ETCD, NULL, &info));
	cr_assert_str_eq(info.uid, MIRROR_ETCD);
	cr_assert_str_eq(info.container, "etcd");
	pod_info__release(&info);
	/* The API UID still finds it. */
	cr_assert(pods__lookup(p, NULL, UID_ETCD_API, &info));
	pod_info__release(&info);
	pods__free(p);
}

Test(pods, watch_events_added_modified_deleted)
{
	struct pods *p = loaded();
	struct pod_info info;
	uint64_t g0 = pods__generation(p), g1, g2;

	cr_assert_eq(apply_event(p,
		"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
		"\"metadata\":{\"name\":\"batch-1\",\"namespace\":\"jobs\",\"uid\":\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\","
		"\"resourceVersion\":\"1050\",\"annotations\":{\"kiln.dev/profile\":\"false\"}},"
		"\"spec\":{\"nodeName\":\"node-a\"},\"status\":{\"phase\":\"Pending\"}}}"), 0);
	g1 = pods__generation(p);
	cr_assert_gt(g1, g0);
	cr_assert_eq(pods__count(p), 3);
	cr_assert(pods__lookup(p, NULL, "aaaaaaaa_bbbb_cccc_dddd_eeeeeeeeeeee", &info));
	cr_assert(info.opted_out);
	cr_assert_null(info.container);
	pod_info__release(&info);
	cr_assert_not(pods__lookup(p, CID_NEW, NULL, &info));

	/* MODIFIED: the container started; the profile annotation went away. */
	cr_assert_eq(apply_event(p,
		"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
		"\"metadata\":{\"name\":\"batch-1\",\"namespace\":\"jobs\",\"uid\":\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\","
		"\"resourceVersion\":\"1051\",\"labels\":{\"job-name\":\"batch\"}},"
		"\"spec\":{\"nodeName\":\"node-a\"},\"status\":{\"phase\":\"Running\","
		"\"containerStatuses\":[{\"name\":\"worker\",\"containerID\":\"containerd://" CID_NEW "\"}]}}}"), 0);
	g2 = pods__generation(p);
	cr_assert_gt(g2, g1);
	cr_assert_eq(pods__count(p), 3);
	cr_assert(pods__lookup(p, CID_NEW, NULL, &info));
	cr_assert_str_eq(info.container, "worker");
	cr_assert_not(info.opted_out);
	cr_assert_str_eq(pod_info__label(&info, "job-name"), "batch");
	pod_info__release(&info);

	/* A MODIFIED that changes nothing kiln keeps (status.phase only). */
	cr_assert_eq(apply_event(p,
		"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
		"\"metadata\":{\"name\":\"batch-1\",\"namespace\":\"jobs\",\"uid\":\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\","
		"\"resourceVersion\":\"1052\",\"labels\":{\"job-name\":\"batch\"}},"
		"\"spec\":{\"nodeName\":\"node-a\"},\"status\":{\"phase\":\"Succeeded\","
		"\"containerStatuses\":[{\"name\":\"worker\",\"containerID\":\"containerd://" CID_NEW "\"}]}}}"), 0);
	cr_assert_eq(pods__generation(p), g2);

	/* A restarted container replaces the old id. */
	cr_assert_eq(apply_event(p,
		"{\"type\":\"MODIFIED\",\"object\":{"
		"\"metadata\":{\"name\":\"web-7d4b9c\",\"namespace\":\"shop\",\"uid\":\"" UID_WEB "\"},"
		"\"status\":{\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://" CID_NEW "a\"}]}}}"), 0);
	cr_assert_not(pods__lookup(p, CID_APP, NULL, &info));
	cr_assert_not(pods__lookup(p, CID_SIDE, NULL, &info));
	cr_assert(pods__lookup(p, CID_NEW "a", NULL, &info));
	cr_assert_null(info.service_name);
	pod_info__release(&info);

	cr_assert_eq(apply_event(p,
		"{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
		"\"metadata\":{\"name\":\"batch-1\",\"namespace\":\"jobs\",\"uid\":\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\","
		"\"resourceVersion\":\"1060\",\"deletionTimestamp\":\"2024-05-01T10:00:00Z\"},"
		"\"status\":{\"phase\":\"Succeeded\"}}}"), 0);
	cr_assert_gt(pods__generation(p), g2);
	cr_assert_eq(pods__count(p), 2);
	cr_assert_not(pods__lookup(p, CID_NEW, NULL, &info));
	cr_assert_not(pods__lookup(p, NULL, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", &info));
	/* Deleting an unknown pod is fine and changes nothing. */
	g2 = pods__generation(p);
	cr_assert_eq(apply_event(p,
		"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"x\",\"namespace\":\"y\","
		"\"uid\":\"ffffffff-bbbb-cccc-dddd-eeeeeeeeeeee\"}}}"), 0);
	cr_assert_eq(pods__generation(p), g2);
	pods__free(p);
}

Test(pods, replace_drops_pods_missing_from_the_new_list)
{
	struct pods *p = loaded();
	struct pod_info info;
	json_t *list = parse("{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
			     "\"metadata\":{\"resourceVersion\":\"2000\"},\"items\":null}");
	uint64_t g = pods__generation(p);

	cr_assert_eq(pods__replace(p, list), 0);
	cr_assert_eq(pods__count(p), 0);
	cr_assert_gt(pods__generation(p), g);
	cr_assert_not(pods__lookup(p, CID_APP, UID_WEB, &info));
	cr_assert_not(pods__lookup(p, NULL, MIRROR_ETCD, &info));
	json_decref(list);
	pods__free(p);
}

Test(pods, mirror_object_recreated_keeps_the_static_uid)
{
	struct pods *p = loaded();
	struct pod_info info;

	/* The kubelet recreates a deleted mirror pod under a new API UID. */
	cr_assert_eq(apply_event(p,
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"etcd-node-a\","
		"\"namespace\":\"kube-system\",\"uid\":\"11111111-2222-3333-4444-555555555555\","
		"\"annotations\":{\"kubernetes.io/config.mirror\":\"" MIRROR_ETCD "\"}}}}"), 0);
	cr_assert_eq(apply_event(p,
		"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"etcd-node-a\","
		"\"namespace\":\"kube-system\",\"uid\":\"" UID_ETCD_API "\","
		"\"annotations\":{\"kubernetes.io/config.mirror\":\"" MIRROR_ETCD "\"}}}}"), 0);
	cr_assert(pods__lookup(p, NULL, MIRROR_ETCD, &info));
	cr_assert_str_eq(info.name, "etcd-node-a");
	pod_info__release(&info);
	pods__free(p);
}

Test(pods, unusable_objects_are_counted_not_indexed)
{
	static const char *const bad[] = {
		"[]", "\"pod\"", "42", "null", "{}",
		"{\"metadata\":[]}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":7}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"\"}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"../etc\"}}",
		"{\"metadata\":{\"name\":null,\"namespace\":\"b\",\"uid\":\"abc\"}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":{},\"uid\":\"abc\"}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"abc\",\"labels\":\"x=y\"}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"abc\",\"annotations\":[1]}}",
		"{\"metadata\":{\"name\":\"a\\u0000b\",\"namespace\":\"b\",\"uid\":\"abc\"}}",
	};
	struct pods *p = pods__new(10);
	struct pods_stats st;
	struct pod_info info;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

		cr_assert_not_null(j, "fixture %zu", i);
		cr_assert_eq(pods__upsert(p, j), -EINVAL, "object %zu: %s", i, bad[i]);
		json_decref(j);
	}
	pods__stats(p, &st);
	cr_assert_eq(st.bad_objects, sizeof(bad) / sizeof(bad[0]));
	cr_assert_eq(pods__count(p), 0);
	cr_assert_eq(pods__generation(p), 0);
	cr_assert_eq(pods__remove(p, NULL), -EINVAL);

	/* Wrong types where optional fields go are ignored, not fatal. */
	{
		json_t *j = parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"abc\","
				  "\"labels\":{\"ok\":\"1\",\"num\":2,\"obj\":{}},"
				  "\"annotations\":{\"pyroscope.io/service_name\":5,"
				  "\"kubernetes.io/config.mirror\":\"bad uid!\"}},"
				  "\"status\":{\"containerStatuses\":{\"name\":\"x\"},"
				  "\"initContainerStatuses\":[7,null,{\"containerID\":3},"
				  "{\"containerID\":\"containerd://" CID_APP "\",\"name\":[]}]}}");

		cr_assert_eq(pods__upsert(p, j), 0);
		json_decref(j);
		cr_assert(pods__lookup(p, CID_APP, NULL, &info));
		cr_assert_null(info.container);
		cr_assert_null(info.service_name);
		cr_assert_eq(info.nlabels, 1);
		cr_assert_str_eq(info.uid, "abc");
		pod_info__release(&info);
		pods__stats(p, &st);
		cr_assert_eq(st.labels_dropped, 2);
		cr_assert_eq(st.bad_mirror_uids, 1);
	}

	/* A list that is not a PodList leaves the index as it was. */
	{
		json_t *j = parse("{\"kind\":\"Status\",\"items\":{}}");
		uint64_t g = pods__generation(p);

		cr_assert_eq(pods__replace(p, j), -EINVAL);
		cr_assert_eq(pods__count(p), 1);
		cr_assert_eq(pods__generation(p), g);
		json_decref(j);
		j = json_integer(3);
		cr_assert_eq(pods__replace(p, j), -EINVAL);
		json_decref(j);
	}
	/* A list with some bad items keeps the good ones. */
	{
		json_t *j = parse("{\"kind\":\"PodList\",\"items\":[1,{\"metadata\":{}},"
				  "{\"metadata\":{\"name\":\"c\",\"namespace\":\"d\",\"uid\":\"def\"}}]}");

		cr_assert_eq(pods__replace(p, j), 0);
		cr_assert_eq(pods__count(p), 1);
		cr_assert(pods__lookup(p, NULL, "def", &info));
		pod_info__release(&info);
		json_decref(j);
	}
	pods__free(p);
}

Test(pods, truncated_and_garbage_text_never_reaches_the_index)
{
	struct pods *p = pods__new(10);
	size_t n = strlen(pod_list_json);

	/* Every prefix of a PodList is rejected by the decoder (the watcher
	 * never hands the index a partial object), and a prefix that still
	 * decodes (none do here) would have to be a complete object. */
	for (size_t cut = 0; cut < n; cut += 7) {
		json_t *j = json_loadb(pod_list_json, cut, 0, NULL);

		cr_assert_null(j, "prefix of %zu bytes decoded", cut);
	}
	/* Bytes flipped into the whole list: whatever decodes is handled. */
	for (size_t i = 0; i < n; i += 13) {
		char *t = strdup(pod_list_json);
		json_t *j;

		t[i] = (char)(t[i] ^ 0x5a);
		j = json_loads(t, JSON_DECODE_ANY, NULL);
		if (j) {
			int e = pods__replace(p, j);

			cr_assert(e == 0 || e == -EINVAL, "flip at %zu: %d", i, e);
			json_decref(j);
		}
		free(t);
	}
	cr_assert_leq(pods__count(p), 2);
	pods__free(p);
}

Test(pods, huge_label_maps_are_bounded)
{
	struct pods *p = pods__new(10);
	json_t *pod = parse("{\"metadata\":{\"name\":\"big\",\"namespace\":\"ns\",\"uid\":\"b16\"}}");
	json_t *labels = json_object(), *ann = json_object();
	char key[64], *longval = malloc(4096), *longkey = malloc(600);
	struct pod_info info;
	struct pods_stats st;

	memset(longval, 'v', 4095);
	longval[4095] = '\0';
	memset(longkey, 'k', 599);
	longkey[599] = '\0';
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "label-%d", i);
		json_object_set_new(labels, key, json_string("value"));
	}
	json_object_set_new(labels, "too-long-value", json_string(longval));
	json_object_set_new(labels, longkey, json_string("x"));
	json_object_set_new(ann, "pyroscope.io/service_name", json_string(longval));
	json_object_set_new(json_object_get(pod, "metadata"), "labels", labels);
	json_object_set_new(json_object_get(pod, "metadata"), "annotations", ann);

	cr_assert_eq(pods__upsert(p, pod), 0);
	cr_assert(pods__lookup(p, NULL, "b16", &info));
	cr_assert_eq(info.nlabels, 64);
	for (size_t i = 0; i < info.nlabels; i++) {
		cr_assert_leq(strlen(info.labels[i].key), 256);
		cr_assert_leq(strlen(info.labels[i].value), 1024);
	}
	cr_assert_null(info.service_name, "an over-long annotation is not used");
	pod_info__release(&info);
	pods__stats(p, &st);
	cr_assert_eq(st.labels_dropped, 5002 - 64);
	json_decref(pod);
	free(longval);
	free(longkey);
	pods__free(p);
}

Test(pods, max_pods_bound_skips_new_pods_only)
{
	struct pods *p = pods__new(3);
	struct pods_stats st;
	struct pod_info info;
	char text[256];

	for (int i = 0; i < 10; i++) {
		json_t *j;

		snprintf(text, sizeof(text),
			 "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"n\",\"uid\":\"uid-%d\"}}", i, i);
		j = parse(text);
		cr_assert_eq(pods__upsert(p, j), i < 3 ? 0 : -ENOSPC);
		json_decref(j);
	}
	cr_assert_eq(pods__count(p), 3);
	pods__stats(p, &st);
	cr_assert_eq(st.skipped_max_pods, 7);
	cr_assert_not(pods__lookup(p, NULL, "uid-5", &info));

	/* Updating a known pod still works at the bound. */
	{
		json_t *j = parse("{\"metadata\":{\"name\":\"p1\",\"namespace\":\"n\",\"uid\":\"uid-1\","
				  "\"labels\":{\"v\":\"2\"}}}");

		cr_assert_eq(pods__upsert(p, j), 0);
		json_decref(j);
		cr_assert(pods__lookup(p, NULL, "uid-1", &info));
		cr_assert_str_eq(pod_info__label(&info, "v"), "2");
		pod_info__release(&info);
	}
	/* A list longer than the bound keeps the first max_pods items. */
	{
		json_t *j = parse("{\"items\":["
				  "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"a1\"}},"
				  "{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\",\"uid\":\"b1\"}},"
				  "{\"metadata\":{\"name\":\"c\",\"namespace\":\"n\",\"uid\":\"c1\"}},"
				  "{\"metadata\":{\"name\":\"d\",\"namespace\":\"n\",\"uid\":\"d1\"}}]}");

		cr_assert_eq(pods__replace(p, j), 0);
		json_decref(j);
		cr_assert_eq(pods__count(p), 3);
		cr_assert_not(pods__lookup(p, NULL, "d1", &info));
		cr_assert(pods__lookup(p, NULL, "c1", &info));
		pod_info__release(&info);
	}
	pods__free(p);
}

Test(pods, many_pods_churn)
{
	/* Enough inserts and deletes to grow the tables and exercise
	 * backward-shift deletion; every survivor stays reachable. */
	struct pods *p = pods__new(5000);
	struct pod_info info;
	char text[512];

	for (int i = 0; i < 2000; i++) {
		json_t *j;

		snprintf(text, sizeof(text),
			 "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"n\",\"uid\":\"u%d\"},"
			 "\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"containerID\":\"containerd://c%060d\"}]}}",
			 i, i, i);
		j = parse(text);
		cr_assert_eq(pods__upsert(p, j), 0);
		json_decref(j);
	}
	for (int i = 0; i < 2000; i += 2) {
		json_t *j;

		snprintf(text, sizeof(text), "{\"metadata\":{\"uid\":\"u%d\"}}", i);
		j = parse(text);
		cr_assert_eq(pods__remove(p, j), 0);
		json_decref(j);
	}
	cr_assert_eq(pods__count(p), 1000);
	for (int i = 0; i < 2000; i++) {
		char cid[80];

		snprintf(cid, sizeof(cid), "c%060d", i);
		cr_assert_eq(pods__lookup(p, cid, NULL, &info), i % 2 == 1, "pod %d", i);
		if (i % 2) {
			snprintf(text, sizeof(text), "p%d", i);
			cr_assert_str_eq(info.name, text);
			pod_info__release(&info);
		}
	}
	pods__free(p);
}

Test(pods, free_and_release_accept_null)
{
	pods__free(NULL);
	pod_info__release(NULL);
}

/* ---- a list in pages ---- */

/* A PodList page of n pods named <prefix>-<first..first+n-1>, with a
 * continue token when more follow. */
static json_t *page_of(const char *prefix, int first, int n, bool more)
{
	json_t *items = json_array(), *page;

	for (int i = first; i < first + n; i++) {
		char uid[64], name[64], text[512];

		snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", i);
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		snprintf(text, sizeof(text),
			 "{\"metadata\":{\"uid\":\"%s\",\"namespace\":\"ns\",\"name\":\"%s\"}}", uid,
			 name);
		cr_assert_eq(json_array_append_new(items, parse(text)), 0);
	}
	page = json_pack("{s:s, s:{s:s, s:s*}, s:o}", "kind", "PodList", "metadata",
			 "resourceVersion", "7", "continue", more ? "token" : NULL, "items", items);
	cr_assert_not_null(page);
	return page;
}

static bool has_uid(struct pods *p, int i)
{
	struct pod_info info;
	char uid[64];

	snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", i);
	if (!pods__lookup(p, NULL, uid, &info))
		return false;
	pod_info__release(&info);
	return true;
}

static void list_page(struct pods *p, const char *prefix, int first, int n, bool more)
{
	json_t *page = page_of(prefix, first, n, more);

	cr_assert_eq(pods__list_page(p, page), 0);
	json_decref(page);
}

Test(pods_paged, pages_are_indexed_as_they_come_and_synced_at_the_end)
{
	struct pods *p = pods__new(100);

	cr_assert_not(pods__synced(p));
	pods__list_begin(p);
	list_page(p, "a", 0, 3, true);
	/* Found before the list ends, but not synced yet. */
	cr_assert(has_uid(p, 0) && has_uid(p, 2));
	cr_assert_not(pods__synced(p));
	list_page(p, "a", 3, 3, true);
	list_page(p, "a", 6, 1, false);
	pods__list_end(p);
	cr_assert(pods__synced(p));
	cr_assert_eq(pods__count(p), 7);
	pods__free(p);
}

Test(pods_paged, relist_keeps_old_pods_until_its_end_then_drops_the_unnamed)
{
	struct pods *p = pods__new(100);
	uint64_t g;

	pods__list_begin(p);
	list_page(p, "a", 0, 4, false);
	pods__list_end(p);
	/* A relist that no longer names pods 0 and 1, in two pages. */
	pods__list_begin(p);
	list_page(p, "a", 2, 2, true);
	cr_assert(has_uid(p, 0), "a relist must not empty the index before it ends");
	list_page(p, "a", 4, 2, false);
	cr_assert(has_uid(p, 1) && has_uid(p, 5));
	g = pods__generation(p);
	pods__list_end(p);
	cr_assert_gt(pods__generation(p), g);
	cr_assert_not(has_uid(p, 0));
	cr_assert_not(has_uid(p, 1));
	for (int i = 2; i < 6; i++)
		cr_assert(has_uid(p, i), "pod %d", i);
	cr_assert_eq(pods__count(p), 4);
	cr_assert(pods__synced(p));
	pods__free(p);
}

Test(pods_paged, aborted_list_keeps_the_index_and_the_next_list_reconciles)
{
	struct pods *p = pods__new(100);

	pods__list_begin(p);
	list_page(p, "a", 0, 2, false);
	pods__list_end(p);
	pods__list_begin(p);
	list_page(p, "a", 5, 1, true);
	pods__list_abort(p);
	/* A page outside a list is refused. */
	{
		json_t *page = page_of("a", 9, 1, false);

		cr_assert_eq(pods__list_page(p, page), -EINVAL);
		json_decref(page);
	}
	cr_assert(has_uid(p, 0) && has_uid(p, 5));
	pods__list_begin(p);
	list_page(p, "a", 1, 1, false);
	pods__list_end(p);
	cr_assert_eq(pods__count(p), 1);
	cr_assert(has_uid(p, 1));
	pods__free(p);
}

Test(pods_paged, max_pods_counts_the_pods_of_the_list)
{
	struct pods *p = pods__new(16);
	struct pods_stats st;

	pods__list_begin(p);
	list_page(p, "a", 0, 10, true);
	list_page(p, "a", 10, 10, false);
	pods__list_end(p);
	cr_assert_eq(pods__count(p), 16);
	pods__stats(p, &st);
	cr_assert_eq(st.skipped_max_pods, 4);
	/* A relist of 16 other pods: the 16 old ones do not fill the bound. */
	pods__list_begin(p);
	list_page(p, "b", 100, 8, true);
	list_page(p, "b", 108, 8, false);
	pods__list_end(p);
	cr_assert_eq(pods__count(p), 16);
	cr_assert(has_uid(p, 100) && has_uid(p, 115));
	cr_assert_not(has_uid(p, 0));
	pods__free(p);
}

Test(pods_paged, bad_items_and_bad_pages)
{
	struct pods *p = pods__new(16);
	json_t *bad = parse("{\"kind\":\"PodList\",\"metadata\":{},\"items\":"
			    "[{\"metadata\":{\"name\":\"x\"}},7]}");
	json_t *not_list = parse("{\"items\":{}}");
	struct pods_stats st;

	pods__list_begin(p);
	cr_assert_eq(pods__list_page(p, bad), 0);
	cr_assert_eq(pods__list_page(p, not_list), -EINVAL);
	pods__list_end(p);
	pods__stats(p, &st);
	cr_assert_eq(st.bad_objects, 3);
	cr_assert_eq(pods__count(p), 0);
	json_decref(bad);
	json_decref(not_list);
	pods__free(p);
}
