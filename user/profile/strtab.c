// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/array.h"
#include "profile/strtab.h"

static bool str_eq(const void *ctx, uint32_t idx, const void *key)
{
	return strcmp(strtab__get(ctx, idx), key) == 0;
}

int strtab__init(struct strtab *t)
{
	uint32_t id;

	memset(t, 0, sizeof(*t));
	return strtab__intern(t, "", &id);
}

uint32_t strtab__find(const struct strtab *t, const char *s)
{
	return idxhash__find(&t->index, hash_str(s), str_eq, t, s);
}

int strtab__intern(struct strtab *t, const char *s, uint32_t *id)
{
	uint64_t hash = hash_str(s);
	size_t n = strlen(s) + 1;
	uint32_t found;
	int err;

	found = idxhash__find(&t->index, hash, str_eq, t, s);
	if (found != IDXHASH_NONE) {
		*id = found;
		return 0;
	}
	if (t->len >= IDXHASH_NONE || n > SIZE_MAX - t->buf_len)
		return -ENOMEM;
	err = array_reserve(t->buf, t->buf_cap, t->buf_len + n);
	if (!err)
		err = array_reserve(t->off, t->off_cap, t->len + 1);
	if (!err)
		err = idxhash__add(&t->index, hash, t->len);
	if (err)
		return err;
	memcpy(t->buf + t->buf_len, s, n);
	t->off[t->len] = t->buf_len;
	t->buf_len += n;
	*id = t->len++;
	return 0;
}

size_t strtab__bytes(const struct strtab *t)
{
	return t->buf_cap + t->off_cap * sizeof(*t->off) +
	       idxhash__bytes(&t->index);
}

void strtab__release(struct strtab *t)
{
	free(t->buf);
	free(t->off);
	idxhash__release(&t->index);
	memset(t, 0, sizeof(*t));
}
