// SPDX-License-Identifier: BSD-2-Clause
/* Per-function comparison of two profiles, for `kiln diff --format text`
 * and the CI regression check: both profiles go into one flame tree (so
 * functions are matched by name, module and kind), per-function totals
 * are taken in each column and turned into shares of that column's total. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/flame.h"

struct profile_diff {
	struct flame fl;                /* owns the names the changes point at */
	struct func_change *changes;
	size_t n;
};

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int change_cmp(const void *a, const void *b)
{
	const struct func_change *x = a, *y = b;
	double dx = fabs(x->total_new - x->total_base), dy = fabs(y->total_new - y->total_base);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	dx = fabs(x->self_new - x->self_base);
	dy = fabs(y->self_new - y->self_base);
	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

struct profile_diff *profile_diff__new(const struct profile *base,
				       const struct profile *cur)
{
	struct profile_diff *d = calloc(1, sizeof(*d));
	struct func_totals *t = NULL;
	int err = d ? 0 : -ENOMEM;

	if (!err)
		err = flame__init(&d->fl);
	if (!err)
		err = flame__add(&d->fl, cur, FLAME_NEW);
	if (!err)
		err = flame__add(&d->fl, base, FLAME_BASE);
	if (!err)
		err = flame__order(&d->fl);
	if (!err)
		err = flame__func_totals(&d->fl, &t);
	if (!err) {
		d->changes = calloc(d->fl.nfuncs, sizeof(*d->changes));
		err = d->changes ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !err && i < d->fl.nfuncs; i++) {
		const struct flame_func *fn = &d->fl.funcs[i];
		const uint64_t *all = d->fl.total;

		if (!t[i].total[FLAME_NEW] && !t[i].total[FLAME_BASE])
			continue;
		d->changes[d->n++] = (struct func_change){
			.name = flame__str(&d->fl, fn->name),
			.module = flame__str(&d->fl, fn->module),
			.self_base = share(t[i].self[FLAME_BASE], all[FLAME_BASE]),
			.self_new = share(t[i].self[FLAME_NEW], all[FLAME_NEW]),
			.total_base = share(t[i].total[FLAME_BASE], all[FLAME_BASE]),
			.total_new = share(t[i].total[FLAME_NEW], all[FLAME_NEW]),
		};
	}
	free(t);
	if (err) {
		profile_diff__free(d);
		errno = -err;
		return NULL;
	}
	qsort(d->changes, d->n, sizeof(*d->changes), change_cmp);
	return d;
}

const struct func_change *profile_diff__changes(const struct profile_diff *d,
						size_t *n)
{
	*n = d->n;
	return d->changes;
}

int profile_diff__write_text(const struct profile_diff *d, size_t top, FILE *f)
{
	size_t shown = 0;

	fprintf(f, "base %" PRIu64 " samples, new %" PRIu64 " samples; shares of each one's total, "
		"changes in percentage points\n",
		d->fl.total[FLAME_BASE], d->fl.total[FLAME_NEW]);
	fprintf(f, "%10s %10s %8s  %10s %10s %8s  %s\n", "total base", "total new",
		"change", "self base", "self new", "change", "function");
	for (size_t i = 0; i < d->n && shown < top; i++) {
		const struct func_change *c = &d->changes[i];
		double dt = c->total_new - c->total_base, ds = c->self_new - c->self_base;

		/* what would print as +0.00 is no change */
		if (fabs(dt) < 0.005 && fabs(ds) < 0.005)
			break;
		fprintf(f, "%9.2f%% %9.2f%% %+8.2f  %9.2f%% %9.2f%% %+8.2f  %s%s%s%s\n",
			c->total_base, c->total_new, dt, c->self_base, c->self_new, ds,
			c->name, *c->module ? " (" : "", c->module, *c->module ? ")" : "");
		shown++;
	}
	if (!shown)
		fprintf(f, "no function's share changed\n");
	return ferror(f) ? -EIO : 0;
}

bool func_change__regressed(const struct func_change *c, double points,
			    const char *glob)
{
	return c->total_new - c->total_base > points &&
	       (!glob || !fnmatch(glob, c->name, 0));
}

void profile_diff__free(struct profile_diff *d)
{
	if (!d)
		return;
	flame__release(&d->fl);
	free(d->changes);
	free(d);
}
