// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
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
	return hashmap__find_idx(&t->index, hash__chunks(s, strlen(s)), str_eq, t, s);
}

int strtab__intern(struct strtab *t, const char *s, uint32_t *id)
{
	size_t n = strlen(s) + 1;
	uint64_t hash = hash__chunks(s, n - 1);
	uint32_t found;
	int err;

	found = hashmap__find_idx(&t->index, hash, str_eq, t, s);
	if (found != HASHMAP_NO_INDEX) {
		*id = found;
		return 0;
	}
	if (t->len >= HASHMAP_NO_INDEX || n > SIZE_MAX - t->buf_len)
		return -ENOMEM;
	err = array_reserve(t->buf, t->buf_cap, t->buf_len + n);
	if (!err)
		err = array_reserve(t->off, t->off_cap, t->len + 1);
	if (!err)
		err = hashmap__add_idx(&t->index, hash, t->len);
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
	       hashmap__bytes(&t->index);
}

void strtab__release(struct strtab *t)
{
	free(t->buf);
	free(t->off);
	hashmap__clear(&t->index);
	memset(t, 0, sizeof(*t));
}
