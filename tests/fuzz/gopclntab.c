// SPDX-License-Identifier: BSD-2-Clause
/* core/gopclntab: a Go function table as the bytes of a binary's
 * .gopclntab (seeds: tests/fuzz/gopclntab_seeds.py). */
#include "core/gopclntab.h"
#include "fuzz.h"

FUZZ_DEFAULT_INIT

#define TEXT_START 0x401000

static void check_inline_trees(const struct gopclntab *t, const struct go_func *f,
			       const uint8_t *data, size_t size)
{
	size_t esize = gopclntab__inline_entry_size(t);
	uint8_t slots[3];
	unsigned n = gopclntab__inline_slots(t, slots);

	FUZZ_CHECK(n >= 1 && n <= 3 && (esize == 16 || esize == 20));
	for (unsigned k = 0; k < n; k++) {
		struct go_inlined in;
		uint64_t vaddr;
		uint32_t count;

		if (!gopclntab__inline_tree(t, f, slots[k], 0, &vaddr, &count))
			continue;
		FUZZ_CHECK(count >= 1 && count <= GO_INLINE_MAX);
		/* the tree's address taken as an offset into the input */
		for (uint32_t i = 0; i < count && i < 64; i++) {
			uint64_t at = (vaddr % size) + (uint64_t)i * esize;

			if (at + esize > size)
				break;
			if (gopclntab__inline_entry(t, data + at, count, &in) == 0)
				FUZZ_CHECK((const uint8_t *)in.name >= data &&
					   (const uint8_t *)in.name < data + size);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gopclntab t;

	if (gopclntab__open(&t, data, size, TEXT_START) != 0)
		return 0;
	FUZZ_CHECK(t.nfunc > 0 && t.nfunc <= GOPCLNTAB_FUNCS_MAX);
	for (uint64_t i = 0; i < t.nfunc && i < 4096; i++) {
		struct go_pcvalue it;
		struct go_func f;
		uint64_t s, e;
		int32_t v;
		int64_t found;

		if (gopclntab__func(&t, i, &f) != 0)
			continue;
		FUZZ_CHECK(f.entry < f.end && f.name);
		FUZZ_CHECK((const uint8_t *)f.name >= data && (const uint8_t *)f.name < data + size);
		/* the function found for its entry holds that entry */
		found = gopclntab__find(&t, f.entry);
		if (found >= 0) {
			struct go_func g;

			if (gopclntab__func(&t, (uint64_t)found, &g) == 0)
				FUZZ_CHECK(g.entry <= f.entry && f.entry < g.end);
		}
		if (gopclntab__pcvalue(&t, &f, f.pcsp, &it))
			while (gopclntab__pcvalue_next(&it, &s, &e, &v) == 1)
				FUZZ_CHECK(f.entry <= s && s <= e && e <= f.end);
		if (gopclntab__value_at(&t, &f, f.pcfile, f.entry, &v)) {
			const char *file = gopclntab__file(&t, &f, v);

			FUZZ_CHECK(!file || ((const uint8_t *)file >= data &&
					     (const uint8_t *)file < data + size));
		}
		(void)gopclntab__value_at(&t, &f, f.pcln, f.end - 1, &v);
		/* the pcdata and funcdata arrays lie inside the table; an inline
		 * tree's entries, read here from the table's own bytes as if it
		 * were the file, decode or are refused */
		FUZZ_CHECK(!f.npcdata || f.pcdata + 4ull * f.npcdata <= size);
		(void)gopclntab__pcdata_at(&t, &f, GO_PCDATA_INLINE_INDEX, f.entry, &v);
		check_inline_trees(&t, &f, data, size);
	}
	return 0;
}
