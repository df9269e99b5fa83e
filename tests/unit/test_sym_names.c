// SPDX-License-Identifier: BSD-2-Clause
/* A symbol table's names in blocks: kept as they are while small,
 * deflated past SYM_NAMES_DEFLATE_FROM, every name read back the same
 * however the lookups hop between blocks, and a list read from a file
 * checked whole. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/sym_names.h"

/* Names shaped like demangled C++ ones, different for each i. */
static size_t name_of(size_t i, char *buf, size_t cap)
{
	static const char *const ns[] = { "v8::internal::compiler::", "node::crypto::",
					  "std::__1::basic_string<char>::", "" };
	int n = snprintf(buf, cap, "%sGraphReducer%zu::Reduce(v8::internal::Node*, int%s)",
			 ns[i % 4], i * 7919 % 100003, i % 3 ? "" : ", unsigned long");

	return (size_t)n;
}

static void build(struct sym_names *out, size_t count, size_t max)
{
	struct sym_names_builder b;
	char name[256];

	sym_names__builder_init(&b, max);
	for (size_t i = 0; i < count; i++)
		cr_assert_eq(sym_names__add(&b, name, name_of(i, name, sizeof(name))), 0,
			     "name %zu", i);
	cr_assert_eq(sym_names__finish(&b, out), 0);
}

static void expect_names(const struct sym_names *n)
{
	char want[256];

	/* strides that jump between blocks more often than the table
	 * keeps inflated ones, and back */
	for (size_t stride = 1; stride < 40; stride += 13)
		for (size_t k = 0; k < n->count; k++) {
			size_t i = k * stride % n->count;
			const char *got = sym_names__get(n, i);

			name_of(i, want, sizeof(want));
			cr_assert_not_null(got, "name %zu", i);
			cr_assert_str_eq(got, want, "name %zu", i);
		}
	cr_assert_null(sym_names__get(n, n->count));
}

Test(sym_names, small_lists_stay_as_they_are)
{
	struct sym_names n;

	build(&n, 1000, 1 << 20);
	cr_assert_not(n.deflated);
	cr_assert_eq(n.nblocks, sym_names__nblocks(1000));
	expect_names(&n);
	cr_assert_eq(sym_names__bytes(&n),
		     n.len + (n.nblocks + 1) * sizeof(*n.blocks) + n.count * sizeof(*n.refs));
	sym_names__release(&n);
}

Test(sym_names, large_lists_are_deflated_and_read_back)
{
	size_t count = 20000, plain = 0;
	struct sym_names n;
	char name[256];

	for (size_t i = 0; i < count; i++)
		plain += name_of(i, name, sizeof(name)) + 1;
	cr_assert_gt(plain, SYM_NAMES_DEFLATE_FROM);
	build(&n, count, 16 << 20);
	cr_assert(n.deflated);
	cr_assert_lt(sym_names__bytes(&n), plain / 3, "%zu bytes for %zu of names",
		     sym_names__bytes(&n), plain);
	expect_names(&n);
	sym_names__release(&n);
}

Test(sym_names, a_bound_refuses_before_it_is_passed)
{
	struct sym_names_builder b;
	char name[256];
	int err = 0;
	size_t i;

	sym_names__builder_init(&b, 4096);
	for (i = 0; i < 1000 && !err; i++)
		err = sym_names__add(&b, name, name_of(i, name, sizeof(name)));
	cr_assert_eq(err, -EFBIG);
	cr_assert_leq(b.n.len, 4096);
	sym_names__builder_release(&b);
}

/* Names that deflate to almost nothing are bounded as they are added. */
Test(sym_names, names_as_added_are_bounded_too)
{
	struct sym_names_builder b;
	char name[SYM_NAMES_NAME_MAX];
	size_t added = 0;
	int err = 0;

	memset(name, 'b', sizeof(name));
	sym_names__builder_init(&b, 1 << 20);
	while (!err && added < 100000)
		if (!(err = sym_names__add(&b, name, sizeof(name) - 1)))
			added++;
	cr_assert_eq(err, -EFBIG);
	cr_assert(b.n.deflated);
	cr_assert_leq(added * sizeof(name), SYM_NAMES_INFLATED_FACTOR << 20);
	cr_assert_gt(added * sizeof(name), (SYM_NAMES_INFLATED_FACTOR << 20) - sizeof(name));
	cr_assert_lt(b.n.len, 1 << 16, "%zu bytes stored", b.n.len);
	sym_names__builder_release(&b);
}

/* A copy of n as a file's reader makes it: no block_max, no cache. */
static void copy_as_read(const struct sym_names *n, struct sym_names *out)
{
	*out = (struct sym_names){ .len = n->len, .count = n->count, .nblocks = n->nblocks,
				   .deflated = n->deflated };
	out->data = malloc(n->len);
	out->blocks = malloc((n->nblocks + 1) * sizeof(*n->blocks));
	out->refs = malloc(n->count * sizeof(*n->refs));
	cr_assert(out->data && out->blocks && out->refs);
	memcpy(out->data, n->data, n->len);
	memcpy(out->blocks, n->blocks, (n->nblocks + 1) * sizeof(*n->blocks));
	memcpy(out->refs, n->refs, n->count * sizeof(*n->refs));
}

static void expect_checked(const struct sym_names *n, void (*spoil)(struct sym_names *c),
			   int err)
{
	struct sym_names c;

	copy_as_read(n, &c);
	if (spoil)
		spoil(&c);
	cr_assert_eq(sym_names__check(&c), err);
	if (!err) {
		cr_assert_eq(c.block_max, n->block_max);
		cr_assert_eq(sym_names__bytes(&c), sym_names__bytes(n));
		expect_names(&c);
	}
	sym_names__release(&c);
}

static void lengthen_block(struct sym_names *c)
{
	c->blocks[2].raw++;
}

static void shorten_block(struct sym_names *c)
{
	c->blocks[2].raw--;
}

static void swap_blocks(struct sym_names *c)
{
	c->blocks[1].off = c->blocks[2].off + 1;
}

static void claim_plain(struct sym_names *c)
{
	c->deflated = false;
}

static void repeat_ref(struct sym_names *c)
{
	c->refs[SYM_NAMES_BLOCK + 5] = c->refs[SYM_NAMES_BLOCK + 4];
}

static void ref_past_block(struct sym_names *c)
{
	c->refs[2 * SYM_NAMES_BLOCK - 1] = c->blocks[1].raw;
}

static void first_ref_inside(struct sym_names *c)
{
	c->refs[3 * SYM_NAMES_BLOCK] = 1;
}

static void ref_inside_a_name(struct sym_names *c)
{
	c->refs[SYM_NAMES_BLOCK + 5]++;
}

static void end_without_nul(struct sym_names *c)
{
	c->data[c->len - 1] = 'x';
}

Test(sym_names, a_list_read_from_a_file_is_checked)
{
	struct sym_names small, large;

	build(&small, 1000, 1 << 20);
	build(&large, 20000, 16 << 20);
	for (int k = 0; k < 2; k++) {
		const struct sym_names *n = k ? &large : &small;

		expect_checked(n, NULL, 0);
		expect_checked(n, swap_blocks, -EBADMSG);
		expect_checked(n, repeat_ref, -EBADMSG);
		expect_checked(n, ref_past_block, -EBADMSG);
		expect_checked(n, first_ref_inside, -EBADMSG);
	}
	/* plain blocks are read whole (deflated ones as they are inflated) */
	expect_checked(&small, lengthen_block, -EBADMSG);
	expect_checked(&small, shorten_block, -EBADMSG);
	expect_checked(&large, claim_plain, -EBADMSG);
	expect_checked(&small, ref_inside_a_name, -EBADMSG);
	expect_checked(&small, end_without_nul, -EBADMSG);
	sym_names__release(&small);
	sym_names__release(&large);
}

/* A deflated block that is not what the table says reads as no name, each
 * time, and the others as they are. */
static void expect_unreadable_block(void (*spoil)(struct sym_names *c))
{
	struct sym_names large, c;
	char want[256];

	build(&large, 20000, 16 << 20);
	copy_as_read(&large, &c);
	spoil(&c);
	cr_assert_eq(sym_names__check(&c), 0);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < 5 * SYM_NAMES_BLOCK; i++) {
			const char *got = sym_names__get(&c, i);

			if (i / SYM_NAMES_BLOCK == (spoil == ref_inside_a_name ? 1 : 2)) {
				cr_assert_null(got, "name %zu of the spoiled block: %s", i, got);
				continue;
			}
			name_of(i, want, sizeof(want));
			cr_assert_str_eq(got, want, "name %zu", i);
		}
	sym_names__release(&c);
	sym_names__release(&large);
}

Test(sym_names, a_deflated_block_unlike_its_entry_reads_as_no_name)
{
	expect_unreadable_block(lengthen_block);
	expect_unreadable_block(shorten_block);
	expect_unreadable_block(ref_inside_a_name);
}
