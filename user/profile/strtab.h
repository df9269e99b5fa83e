/* SPDX-License-Identifier: BSD-2-Clause */
/* Interned strings with dense ids: id 0 is always "", so the table can be
 * used as a pprof string table as it stands. */
#ifndef KILN_PROFILE_STRTAB_H
#define KILN_PROFILE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/hashmap.h"

struct strtab {
	char *buf;              /* the strings back to back, each NUL-ended */
	size_t buf_len, buf_cap;
	size_t *off;            /* id -> offset in buf */
	size_t len, off_cap;
	struct hashmap index;
};

/* Sets up t holding only "". 0 or -ENOMEM. */
int strtab__init(struct strtab *t);
/* Id of s, copying s in on first sight. 0 or -ENOMEM. */
int strtab__intern(struct strtab *t, const char *s, uint32_t *id);
/* Id of s, or HASHMAP_NO_INDEX when s was never interned. */
uint32_t strtab__find(const struct strtab *t, const char *s);

/* The string of id; valid until the next intern. */
static inline const char *strtab__get(const struct strtab *t, uint32_t id)
{
	return t->buf + t->off[id];
}

size_t strtab__bytes(const struct strtab *t);
/* Releases everything; t must be initialized again before reuse. */
void strtab__release(struct strtab *t);

#endif
