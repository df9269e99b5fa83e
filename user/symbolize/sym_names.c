// SPDX-License-Identifier: BSD-2-Clause
/* The names of a symbol table in blocks (sym_names.h).
 *
 * DESIGN: names are appended as they come, the start of every
 * SYM_NAMES_BLOCK-th recorded. Once the stored bytes pass
 * SYM_NAMES_DEFLATE_FROM at a block's start, the blocks so far are deflated
 * and each later block is deflated as its last name arrives, so a large
 * table never holds all its names inflated, not even while it is built.
 * Each block is its own raw deflate stream and inflates alone; the cache
 * file's CRC is what checks them on the disk. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/array.h"
#include "symbolize/sym_names.h"

#define LEVEL 6
#define WINDOW_BITS (-15)               /* raw deflate */
#define INFLATER_BYTES (8u << 10)       /* zlib's inflate state, about 7 KiB */

#define SLOTS (2 * SYM_NAMES_CACHED)   /* open addressing, at most half full */
#define SLOT_SHIFT (32 - 10)
_Static_assert(SLOTS == 1u << (32 - SLOT_SHIFT), "SLOTS is 2^(32 - SLOT_SHIFT)");

struct sym_names_cache {
	z_stream z;
	bool z_open;
	char *block;                    /* block_i inflated: block_max bytes */
	uint32_t block_i;               /* UINT32_MAX: none */
	uint32_t slot_name[SLOTS];      /* name index + 1; 0: empty */
	uint32_t slot_off[SLOTS];       /* its copy in names */
	char *names;                    /* SYM_NAMES_CACHE_BYTES */
	size_t names_len, cached;
};

size_t sym_names__nblocks(size_t count)
{
	return (count + SYM_NAMES_BLOCK - 1) / SYM_NAMES_BLOCK;
}

void sym_names__builder_init(struct sym_names_builder *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max < UINT32_MAX ? max : UINT32_MAX - 1;
	b->inflated_max = max < SIZE_MAX / SYM_NAMES_INFLATED_FACTOR ?
				  max * SYM_NAMES_INFLATED_FACTOR : SIZE_MAX;
}

static int reserve(struct sym_names_builder *b, size_t more)
{
	if (b->n.len + more > b->max)
		return -EFBIG;
	return array_reserve(b->n.data, b->cap, b->n.len + more);
}

/* Deflates raw[0, len) to the end of data as block i. */
static int pack(struct sym_names_builder *b, const char *raw, size_t len, size_t i)
{
	z_stream *z = b->z;
	size_t bound = deflateBound(z, len);
	int err = reserve(b, bound);

	if (err)
		return err;
	deflateReset(z);
	z->next_in = (Bytef *)raw;
	z->avail_in = (uInt)len;
	z->next_out = (Bytef *)b->n.data + b->n.len;
	z->avail_out = (uInt)bound;
	if (deflate(z, Z_FINISH) != Z_STREAM_END)
		return -ENOMEM;
	b->n.blocks[i] = (struct sym_names_block){ (uint32_t)b->n.len, (uint32_t)len };
	b->n.len += bound - z->avail_out;
	return 0;
}

static struct sym_names_cache *new_cache(void)
{
	struct sym_names_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->block_i = UINT32_MAX;
	return c;
}

/* Deflates the blocks stored so far, all complete (at a block's start). */
static int start_deflating(struct sym_names_builder *b)
{
	char *plain = b->n.data;
	size_t plain_len = b->n.len;
	z_stream *z = calloc(1, sizeof(*z));
	int err = 0;

	if (!z || deflateInit2(z, LEVEL, Z_DEFLATED, WINDOW_BITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	b->z = z;
	b->n.data = NULL;
	b->n.len = b->cap = 0;
	b->n.deflated = true;
	/* (pack rewrites entry i, read before; entry i + 1 is read first) */
	for (size_t i = 0; i < b->n.nblocks && !err; i++) {
		size_t off = b->n.blocks[i].off;
		size_t end = i + 1 < b->n.nblocks ? b->n.blocks[i + 1].off : plain_len;

		err = pack(b, plain + off, end - off, i);
	}
	free(plain);
	return err;
}

static int pack_text(struct sym_names_builder *b)
{
	int err = pack(b, b->text, b->text_len, b->n.nblocks - 1);

	b->text_len = 0;
	return err;
}

int sym_names__add(struct sym_names_builder *b, const char *s, size_t len)
{
	int err;

	if (len >= SYM_NAMES_NAME_MAX)
		len = SYM_NAMES_NAME_MAX - 1;
	if (b->inflated + len + 1 > b->inflated_max)
		return -EFBIG;
	b->inflated += len + 1;
	if (array_reserve(b->n.refs, b->refs_cap, b->n.count + 1))
		return -ENOMEM;
	if (b->n.count % SYM_NAMES_BLOCK == 0) {
		if (!b->n.deflated && b->n.len > SYM_NAMES_DEFLATE_FROM) {
			err = start_deflating(b);
			if (err)
				return err;
		}
		/* (room for the entry after the last, which finish writes) */
		if (array_reserve(b->n.blocks, b->blocks_cap, b->n.nblocks + 2))
			return -ENOMEM;
		b->n.blocks[b->n.nblocks++] = (struct sym_names_block){ (uint32_t)b->n.len, 0 };
	}
	if (b->n.deflated) {
		if (array_reserve(b->text, b->text_cap, b->text_len + len + 1))
			return -ENOMEM;
		b->n.refs[b->n.count] = (uint32_t)b->text_len;
		memcpy(b->text + b->text_len, s, len);
		b->text[b->text_len + len] = '\0';
		b->text_len += len + 1;
	} else {
		err = reserve(b, len + 1);
		if (err)
			return err;
		b->n.refs[b->n.count] = (uint32_t)(b->n.len - b->n.blocks[b->n.nblocks - 1].off);
		memcpy(b->n.data + b->n.len, s, len);
		b->n.data[b->n.len + len] = '\0';
		b->n.len += len + 1;
	}
	b->n.count++;
	return b->n.deflated && b->n.count % SYM_NAMES_BLOCK == 0 ? pack_text(b) : 0;
}

int sym_names__finish(struct sym_names_builder *b, struct sym_names *out)
{
	struct sym_names *n = &b->n;
	int err = 0;

	if (n->deflated && n->count % SYM_NAMES_BLOCK)
		err = pack_text(b);
	if (!err && n->nblocks) {
		n->blocks[n->nblocks] = (struct sym_names_block){ (uint32_t)n->len, 0 };
		for (size_t i = 0; i < n->nblocks; i++) {
			if (!n->deflated)
				n->blocks[i].raw = n->blocks[i + 1].off - n->blocks[i].off;
			if (n->blocks[i].raw > n->block_max)
				n->block_max = n->blocks[i].raw;
		}
		if (n->len < b->cap) {
			char *p = realloc(n->data, n->len);

			if (p)
				n->data = p;
		}
		if (n->nblocks + 1 < b->blocks_cap) {
			struct sym_names_block *p = realloc(n->blocks, (n->nblocks + 1) * sizeof(*p));

			if (p)
				n->blocks = p;
		}
		if (n->count < b->refs_cap) {
			uint32_t *p = realloc(n->refs, n->count * sizeof(*p));

			if (p)
				n->refs = p;
		}
	}
	if (!err && n->deflated && !(n->cache = new_cache()))
		err = -ENOMEM;
	if (!err) {
		*out = *n;
		memset(n, 0, sizeof(*n));
	}
	sym_names__builder_release(b);
	return err;
}

void sym_names__builder_release(struct sym_names_builder *b)
{
	sym_names__release(&b->n);
	free(b->text);
	if (b->z) {
		deflateEnd(b->z);
		free(b->z);
	}
	memset(b, 0, sizeof(*b));
}

/* Inflates block i into out (its raw bytes): false when it does not give
 * exactly that many. */
static bool inflate_block(z_stream *z, const struct sym_names *n, size_t i, char *out)
{
	const struct sym_names_block *blk = &n->blocks[i];

	inflateReset(z);
	z->next_in = (Bytef *)n->data + blk->off;
	z->avail_in = blk[1].off - blk->off;
	z->next_out = (Bytef *)out;
	z->avail_out = blk->raw;
	/* (with Z_FINISH and the whole output room, zlib needs no window) */
	return inflate(z, Z_FINISH) == Z_STREAM_END && z->avail_out == 0 && z->avail_in == 0;
}

/* One past block b's last name. */
static size_t block_end(const struct sym_names *n, size_t b)
{
	size_t end = (b + 1) * SYM_NAMES_BLOCK;

	return end < n->count ? end : n->count;
}

/* Block b's raw text ends a name at its end and before each of its names
 * but the first (sym_names__check saw the refs inside it, in order). */
static bool names_at_refs(const struct sym_names *n, size_t b, const char *raw)
{
	size_t first = b * SYM_NAMES_BLOCK, end = block_end(n, b);

	if (raw[n->blocks[b].raw - 1] != '\0')
		return false;
	for (size_t k = first + 1; k < end; k++)
		if (raw[n->refs[k] - 1] != '\0')
			return false;
	return true;
}

/* Name i of a deflated table, from its block inflated. */
static const char *inflated_name(const struct sym_names *n, size_t i)
{
	struct sym_names_cache *c = n->cache;
	size_t b = i / SYM_NAMES_BLOCK;

	if (c->block_i != b) {
		if (!c->block && !(c->block = malloc(n->block_max)))
			return NULL;
		if (!c->z_open && !(c->z_open = inflateInit2(&c->z, WINDOW_BITS) == Z_OK))
			return NULL;
		c->block_i = UINT32_MAX;
		if (!inflate_block(&c->z, n, b, c->block) || !names_at_refs(n, b, c->block))
			return NULL;
		c->block_i = (uint32_t)b;
	}
	return c->block + n->refs[i];
}

static size_t slot_of(size_t i)
{
	return (uint32_t)((uint32_t)i * 0x9e3779b1u) >> SLOT_SHIFT;
}

/* Name i of a deflated table: its copy, or one made now. */
static const char *cached_name(const struct sym_names *n, size_t i)
{
	struct sym_names_cache *c = n->cache;
	size_t h = slot_of(i), len;
	const char *name;

	for (; c->slot_name[h]; h = (h + 1) % SLOTS)
		if (c->slot_name[h] == i + 1)
			return c->names + c->slot_off[h];
	name = inflated_name(n, i);
	if (!name || (!c->names && !(c->names = malloc(SYM_NAMES_CACHE_BYTES))))
		return NULL;
	len = strlen(name) + 1;
	if (c->cached == SYM_NAMES_CACHED || c->names_len + len > SYM_NAMES_CACHE_BYTES) {
		memset(c->slot_name, 0, sizeof(c->slot_name));
		c->cached = c->names_len = 0;
		h = slot_of(i);
	}
	memcpy(c->names + c->names_len, name, len);
	c->slot_name[h] = (uint32_t)i + 1;
	c->slot_off[h] = (uint32_t)c->names_len;
	c->names_len += len;
	c->cached++;
	return c->names + c->slot_off[h];
}

const char *sym_names__get(const struct sym_names *n, size_t i)
{
	if (i >= n->count)
		return NULL;
	if (n->deflated)
		return cached_name(n, i);
	return n->data + n->blocks[i / SYM_NAMES_BLOCK].off + n->refs[i];
}

size_t sym_names__bytes(const struct sym_names *n)
{
	size_t b = n->len + (n->nblocks ? (n->nblocks + 1) * sizeof(*n->blocks) : 0) +
		   n->count * sizeof(*n->refs);

	if (n->deflated)
		b += sizeof(struct sym_names_cache) + INFLATER_BYTES + n->block_max +
		     SYM_NAMES_CACHE_BYTES;
	return b;
}

/* The refs of block b: the first 0, each after the one before, all inside
 * the block. */
static bool refs_in_block(const struct sym_names *n, size_t b)
{
	size_t first = b * SYM_NAMES_BLOCK, end = block_end(n, b);

	if (n->refs[first] != 0)
		return false;
	for (size_t k = first + 1; k < end; k++)
		if (n->refs[k] <= n->refs[k - 1])
			return false;
	return n->refs[end - 1] < n->blocks[b].raw;
}

/* raw[0, len) holds exactly the names refs say, each ending in NUL. */
static bool holds_names(const char *raw, size_t len, const uint32_t *refs, size_t names)
{
	const char *p = raw, *end = raw + len;

	for (size_t k = 0; k < names; k++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));

		if (!nul || refs[k] != (size_t)(p - raw))
			return false;
		p = nul + 1;
	}
	return p == end;
}

int sym_names__check(struct sym_names *n)
{
	size_t nb = sym_names__nblocks(n->count);

	n->block_max = 0;
	if (n->nblocks != nb || n->cache)
		return -EBADMSG;
	if (!nb)
		return n->len ? -EBADMSG : 0;
	if (!n->blocks || !n->refs || n->blocks[0].off != 0 || n->blocks[nb].off != n->len)
		return -EBADMSG;
	for (size_t i = 0; i < nb; i++) {
		const struct sym_names_block *blk = &n->blocks[i];
		size_t names = block_end(n, i) - i * SYM_NAMES_BLOCK;

		if (blk[1].off < blk->off || blk->raw == 0 ||
		    blk->raw > SYM_NAMES_BLOCK * SYM_NAMES_NAME_MAX || !refs_in_block(n, i))
			return -EBADMSG;
		if (!n->deflated && (blk->raw != blk[1].off - blk->off ||
				     !holds_names(n->data + blk->off, blk->raw,
						  n->refs + i * SYM_NAMES_BLOCK, names)))
			return -EBADMSG;
		if (blk->raw > n->block_max)
			n->block_max = blk->raw;
	}
	if (n->deflated && !(n->cache = new_cache()))
		return -ENOMEM;
	return 0;
}

void sym_names__release(struct sym_names *n)
{
	if (n->cache) {
		if (n->cache->z_open)
			inflateEnd(&n->cache->z);
		free(n->cache->block);
		free(n->cache->names);
		free(n->cache);
	}
	free(n->data);
	free(n->blocks);
	free(n->refs);
	memset(n, 0, sizeof(*n));
}
