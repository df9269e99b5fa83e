// SPDX-License-Identifier: BSD-2-Clause
/* demangle__rust: a symbol name from an ELF file, as elf_symtab.c hands it
 * over (at most 1024 bytes, NUL-terminated). */
#include <string.h>

#include "fuzz.h"
#include "symbolize/demangle.h"

FUZZ_DEFAULT_INIT

#define NAME_MAX_IN 1024 /* elf_symtab.c's DEMANGLE_IN_MAX */
#define OUT_MAX (64u << 10) /* elf_symtab.c's DEMANGLE_OUT_MAX */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[NAME_MAX_IN + 1], out[256];
	size_t n = size < NAME_MAX_IN ? size : NAME_MAX_IN, total = 1;
	int r;

	memcpy(name, data, n);
	name[n] = '\0';
	r = demangle__rust(name, out, sizeof(out), OUT_MAX, &total);
	FUZZ_CHECK(r >= -1 && r <= 1);
	FUZZ_CHECK(memchr(out, '\0', sizeof(out)) != NULL);
	if (r == 1) {
		FUZZ_CHECK(total <= OUT_MAX);
		FUZZ_CHECK(strlen(out) == (total < sizeof(out) ? total : sizeof(out) - 1));
		/* Only names that look like Rust ones are taken. */
		FUZZ_CHECK(name[0] == '_' && (name[1] == 'R' || name[1] == 'Z'));
	} else {
		FUZZ_CHECK(out[0] == '\0' && total == 0);
	}
	return 0;
}
