/* SPDX-License-Identifier: BSD-2-Clause */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/lazy_lib.h"
#include "core/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int resolve(struct lazy_lib *l)
{
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		pr_warn("cannot load %s (%s): what needs it is off", l->soname, dlerror());
		return -1;
	}
	for (size_t i = 0; i < l->n; i++) {
		l->fns[i] = dlsym(h, l->names[i]);
		if (!l->fns[i]) {
			pr_warn("%s has no %s: what needs it is off", l->soname, l->names[i]);
			dlclose(h);
			return -1;
		}
	}
	return 1;       /* never closed: its functions may run until exit */
}

bool lazy_lib__load(struct lazy_lib *l)
{
	int state = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);

	if (state)
		return state > 0;
	pthread_mutex_lock(&lock);
	state = l->state;
	if (!state) {
		state = resolve(l);
		__atomic_store_n(&l->state, state, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return state > 0;
}

bool lazy_lib__loaded(const struct lazy_lib *l)
{
	return __atomic_load_n(&l->state, __ATOMIC_ACQUIRE) > 0;
}
