// SPDX-License-Identifier: BSD-2-Clause
/* cgroup__identify and cgroup__identify_line: /proc/PID/cgroup text. */
#include <string.h>

#include "fuzz.h"
#include "metadata/cgroup.h"

FUZZ_DEFAULT_INIT

static bool lower_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static void check_identity(const struct cgroup_identity *id)
{
	size_t cid = strnlen(id->container_id, sizeof(id->container_id));
	size_t uid = strnlen(id->pod_uid, sizeof(id->pod_uid));
	size_t unit = strnlen(id->systemd_unit, sizeof(id->systemd_unit));

	FUZZ_CHECK(id->kind >= CGROUP_INVALID && id->kind <= CGROUP_CONTAINER);
	FUZZ_CHECK(cid < sizeof(id->container_id) && uid < sizeof(id->pod_uid) &&
		   unit < sizeof(id->systemd_unit));
	/* Ids are exactly 64 lowercase hex; UIDs 36 (dashed) or 32 hex. */
	FUZZ_CHECK(cid == 0 || (cid == CGROUP_CONTAINER_ID_LEN && lower_hex(id->container_id)));
	FUZZ_CHECK(uid == 0 || uid == 32 || uid == 36);
	FUZZ_CHECK(!unit || (unit > 8 && !strcmp(id->systemd_unit + unit - 8, ".service")));
	FUZZ_CHECK((id->kind == CGROUP_CONTAINER) == (cid > 0));
	FUZZ_CHECK(id->kind != CGROUP_POD_ONLY || uid > 0);
	FUZZ_CHECK(id->kind >= CGROUP_POD_ONLY || (uid == 0 && !id->runtime && !id->qos));
	FUZZ_CHECK(!id->qos || uid > 0);
	FUZZ_CHECK(cgroup_kind_name(id->kind) != NULL);
	(void)cgroup_runtime_name(id->runtime);
	(void)cgroup_qos_name(id->qos);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *p = text, *end = text + size;
	struct cgroup_identity whole, line, first_best;
	enum cgroup_kind best = CGROUP_INVALID, k;
	unsigned lines = 0, invalid = 0;

	k = cgroup__identify(text, size, &whole);
	FUZZ_CHECK(k == whole.kind);
	check_identity(&whole);
	memset(&first_best, 0, sizeof(first_best));
	/* The whole text's identity is that of its strongest line, the
	 * first of equals. */
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((eol ? eol : end) - p);

		k = cgroup__identify_line(p, n, &line);
		FUZZ_CHECK(k == line.kind);
		check_identity(&line);
		if (k > best) {
			best = k;
			first_best = line;
		}
		invalid += k == CGROUP_INVALID;
		lines++;
		p = eol ? eol + 1 : end;
	}
	FUZZ_CHECK(whole.kind == best);
	FUZZ_CHECK(whole.lines == lines && whole.invalid_lines == invalid);
	if (best >= CGROUP_POD_ONLY) {
		FUZZ_CHECK(!strcmp(whole.container_id, first_best.container_id));
		FUZZ_CHECK(!strcmp(whole.pod_uid, first_best.pod_uid));
		FUZZ_CHECK(whole.runtime == first_best.runtime && whole.qos == first_best.qos);
	}
	return 0;
}
