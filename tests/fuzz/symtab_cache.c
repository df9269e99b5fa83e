/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbol table cache's file reader (symtab__decode and symtab__adopt;
 * seeds: tests/fuzz/table_cache_seeds.sh). Each input is read twice: as it is,
 * and with its format, loader fingerprint and CRC-32 made right, so the
 * checks behind them (counts, sizes, names, order) see mutated files too;
 * the key is the one the input names. A table read must be one
 * symtab__lookup can take: every lookup a symbol at or below the address
 * with a name inside the table; it encodes to a file that reads back the
 * same table, and a smaller bound refuses that file whole. symtab__adopt,
 * given a copy, says the same and keeps the same table. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_file.h"
#include "symbolize/elf_symtab.h"

#define HEADER 192 /* elf_symtab.c's struct cache_header */
#define OFF_FORMAT 8
#define OFF_KEY_LEN 12
#define OFF_LOADER 16
#define KEY_MAX 512

static uint8_t version[16]; /* format, key length, loader: as this build writes them */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct symtab *st;
	uint8_t *buf;
	size_t len;

	(void)argc;
	(void)argv;
	FUZZ_CHECK(fd >= 0);
	st = symtab__load_fd(fd, "", "/proc/self/exe");
	close(fd);
	FUZZ_CHECK(st != NULL);
	FUZZ_CHECK(symtab__encode(st, "k", &buf, &len) == 0);
	memcpy(version, buf + OFF_FORMAT, sizeof(version));
	free(buf);
	symtab__free(st);
	return 0;
}

static void check_lookups(const struct symtab *st)
{
	static const uint64_t offs[] = { 0, 1, 0x1000, 0x1234, 0x10000, 0x123456, UINT64_MAX };

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t vaddr = 0;
		const struct sym *s = symtab__lookup(st, offs[i], &vaddr, &(struct sym){ 0 });

		if (!s)
			continue;
		FUZZ_CHECK(s->start <= vaddr);
		FUZZ_CHECK(s->name && strlen(s->name) < SYMTAB_DEFAULT_MAX_BYTES);
	}
}

/* symtab__adopt of a copy of the input says what symtab__decode said,
 * and keeps the same table. */
static void check_adopt(const uint8_t *data, size_t size, const char *key, int err,
			const struct symtab *st)
{
	struct symtab *own = NULL;
	uint8_t *copy = malloc(size ? size : 1);

	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data, size);
	FUZZ_CHECK(symtab__adopt(copy, size, key, SYMTAB_DEFAULT_MAX_BYTES, &own) == err);
	FUZZ_CHECK(!err == (own != NULL));
	if (!own)
		return;
	FUZZ_CHECK(symtab__count(own) == symtab__count(st) &&
		   symtab__bytes(own) == symtab__bytes(st));
	check_lookups(own);
	symtab__free(own);
}

static void check(const uint8_t *data, size_t size, const char *key)
{
	struct symtab *st = NULL, *back = NULL;
	uint8_t *buf;
	size_t len;
	int err = symtab__decode(data, size, key, SYMTAB_DEFAULT_MAX_BYTES, &st);

	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -ESTALE || err == -EBADMSG ||
		   err == -EFBIG || err == -ENOMEM);
	FUZZ_CHECK(!err == (st != NULL));
	check_adopt(data, size, key, err, st);
	if (!st)
		return;
	FUZZ_CHECK(symtab__bytes(st) <= SYMTAB_DEFAULT_MAX_BYTES);
	check_lookups(st);
	FUZZ_CHECK(symtab__encode(st, key, &buf, &len) == 0);
	FUZZ_CHECK(symtab__decode(buf, len, key, SYMTAB_DEFAULT_MAX_BYTES, &back) == 0);
	FUZZ_CHECK(symtab__count(back) == symtab__count(st) &&
		   symtab__bytes(back) == symtab__bytes(st) &&
		   strcmp(symtab__build_id(back), symtab__build_id(st)) == 0);
	symtab__free(back);
	back = NULL;
	FUZZ_CHECK(symtab__decode(buf, len, key, symtab__bytes(st) - 1, &back) == -EFBIG && !back);
	free(buf);
	symtab__free(st);
}

static void fix(uint8_t *file)
{
	memcpy(file + OFF_FORMAT, version, 4);
	memcpy(file + OFF_LOADER, version + 8, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cache_file_target t = { HEADER, OFF_KEY_LEN, KEY_MAX, fix, check };

	cache_file_input(&t, data, size);
	return 0;
}
