/* SPDX-License-Identifier: BSD-2-Clause */
/* A shared library loaded when kiln first calls into it, not at exec.
 * libcurl (Pyroscope, the Kubernetes API), libmicrohttpd (/metrics) and
 * libdebuginfod bring about thirty libraries with them (TLS, Kerberos,
 * LDAP, PKCS#11): linked, they cost every kiln process ~4 ms of
 * relocation and ~6 MB of RSS, though `kiln record` and an agent that
 * writes files never use them. lazy_stubs.c defines their functions
 * under their own names, each forwarding to the real one. */
#ifndef KILN_CORE_LAZY_LIB_H
#define KILN_CORE_LAZY_LIB_H

#include <stdbool.h>
#include <stddef.h>

struct lazy_lib {
	const char *soname;             /* the ABI the headers are of */
	const char *const *names;       /* n symbols, resolved into fns */
	void **fns;
	size_t n;
	int state;                      /* 0 untried, 1 loaded, -1 failed (atomic) */
};

/* Loads l on the first call (thread-safe): true when every one of its
 * symbols resolved. A failure is logged once, with dlerror's reason, and
 * stands for the rest of the run. */
bool lazy_lib__load(struct lazy_lib *l);

/* Whether l was loaded, without loading it (for clean-up functions). */
bool lazy_lib__loaded(const struct lazy_lib *l);

#endif
