// SPDX-License-Identifier: BSD-2-Clause
/* The pod index from API objects: pods__upsert / pods__remove of a Pod,
 * pods__replace of a PodList, a list in pages (a JSON array of PodList
 * pages, each through the watcher's page parser kube__list_page), and
 * lookups by what the object names. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "metadata/kube.h"
#include "metadata/pods.h"

FUZZ_DEFAULT_INIT

#define MAX_PODS 3

static const char *str_member(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

enum expect { MUST_NOT = -1, MAY = 0, MUST = 1 };

/* Looks up every container id and the UID the object carries; a pod just
 * upserted into an empty index must be found by its UID under its names,
 * and an empty index finds nothing. */
static void lookups(struct pods *p, const json_t *obj, enum expect expect)
{
	static const char *const keys[] = {
		"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses",
	};
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *status = json_object_get(obj, "status");
	struct pod_info info;
	size_t i;
	json_t *cs;

	if (pods__lookup(p, NULL, str_member(meta, "uid"), &info)) {
		FUZZ_CHECK(info.uid && info.namespace_ && info.name);
		FUZZ_CHECK(expect != MUST_NOT);
		if (expect == MUST) {
			FUZZ_CHECK(!strcmp(info.namespace_, str_member(meta, "namespace")));
			FUZZ_CHECK(!strcmp(info.name, str_member(meta, "name")));
		}
		FUZZ_CHECK(!info.container);
		for (size_t l = 0; l < info.nlabels; l++)
			FUZZ_CHECK(pod_info__label(&info, info.labels[l].key) != NULL);
		pod_info__release(&info);
	} else {
		FUZZ_CHECK(expect != MUST);
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		json_array_foreach(json_object_get(status, keys[k]), i, cs) {
			const char *id = str_member(cs, "containerID"), *sep;

			if (!id)
				continue;
			sep = strstr(id, "://");
			if (pods__lookup(p, sep ? sep + 3 : id, NULL, &info)) {
				FUZZ_CHECK(expect != MUST_NOT);
				FUZZ_CHECK(info.uid && info.namespace_ && info.name);
				pod_info__release(&info);
			}
		}
	}
}

/* An array of pages: listed twice (a relist), then aborted once. */
static void paged(struct pods *p, const json_t *pages)
{
	char rv[KUBE_RV_MAX + 1], cont[KUBE_CONTINUE_MAX + 1];
	size_t i;
	json_t *page;

	for (int round = 0; round < 3; round++) {
		pods__list_begin(p);
		json_array_foreach(pages, i, page) {
			char *text = json_dumps(page, JSON_COMPACT | JSON_ENCODE_ANY);
			int err;

			if (!text)
				continue;
			err = kube__list_page(p, text, strlen(text), rv, cont);
			free(text);
			FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -EINVAL || err == -ENODATA ||
				   err == -E2BIG);
			FUZZ_CHECK(err || rv[0]);
			FUZZ_CHECK(strlen(cont) <= KUBE_CONTINUE_MAX);
			/* Within a list, the old and the new pods: at most twice. */
			FUZZ_CHECK(pods__count(p) <= 2 * MAX_PODS);
		}
		if (round == 2) {
			pods__list_abort(p);
		} else {
			pods__list_end(p);
			FUZZ_CHECK(pods__synced(p));
			FUZZ_CHECK(pods__count(p) <= MAX_PODS);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pods *p = pods__new(MAX_PODS);
	const json_t *items;
	json_error_t jerr;
	json_t *j, *item;
	struct pods_stats st;
	uint64_t gen;
	size_t i;
	int err;

	FUZZ_CHECK(p);
	j = json_loadb((const char *)data, size, 0, &jerr);
	if (!j) {
		/* Not JSON: nothing to index, but the index must refuse it. */
		FUZZ_CHECK(pods__upsert(p, NULL) == -EINVAL);
		pods__free(p);
		return 0;
	}
	items = json_object_get(j, "items");
	if (json_is_array(j)) {
		paged(p, j);
	} else if (items) {
		err = pods__replace(p, j);
		FUZZ_CHECK(err == 0 || err == -EINVAL);
		FUZZ_CHECK(pods__count(p) <= MAX_PODS);
		json_array_foreach(items, i, item)
			lookups(p, item, MAY);
		/* Then the items one by one, as watch events would bring them. */
		json_array_foreach(items, i, item) {
			err = pods__upsert(p, item);
			FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOSPC);
			FUZZ_CHECK(pods__count(p) <= MAX_PODS);
		}
		json_array_foreach(items, i, item)
			pods__remove(p, item);
		FUZZ_CHECK(pods__count(p) == 0);
	} else {
		err = pods__upsert(p, j);
		FUZZ_CHECK(err == 0 || err == -EINVAL);
		FUZZ_CHECK(pods__count(p) == (err == 0));
		lookups(p, j, err == 0 ? MUST : MUST_NOT);
		/* The same object again changes nothing. */
		gen = pods__generation(p);
		FUZZ_CHECK(pods__upsert(p, j) == err);
		FUZZ_CHECK(pods__generation(p) == gen);
		err = pods__remove(p, j);
		FUZZ_CHECK(err == 0 || err == -EINVAL);
		FUZZ_CHECK(pods__count(p) == 0);
		lookups(p, j, MUST_NOT);
	}
	pods__stats(p, &st);
	json_decref(j);
	pods__free(p);
	return 0;
}
