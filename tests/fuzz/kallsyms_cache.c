// SPDX-License-Identifier: BSD-2-Clause
/* The kernel symbol cache's file reader (kallsyms__load_cached, seeds:
 * tests/fuzz/kallsyms_cache_seeds.py). Each input is the cache file of a
 * made-up kernel (boot id, two modules, the symbols of
 * tests/fixtures/symbolize/kallsyms.txt) and is read twice: as it is, and
 * with the key and CRC-32 made right, so the checks behind them (sizes,
 * order, offsets) see mutated files too. A file is either refused, and the
 * table read from the text instead (and written back), or used, and then
 * every lookup names a symbol at or below the address, inside the strings. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fuzz.h"
#include "symbolize/kallsyms.h"

#define HEADER 48 /* kallsyms.c's struct cache_hdr */
#define OFF_KEY 8
#define OFF_CRC 40

static char dir[64], kallsyms_path[96], modules_path[96], boot_path[96];
static struct kallsyms_paths paths;
static uint8_t key[8];
static int dirfd = -1;

static void put(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fwrite(data, 1, len, f) == len);
	fclose(f);
}

static void cleanup(void)
{
	static const char *const names[] = { "kallsyms", "modules", "boot_id", "kernel.ksym" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(dirfd, names[i], 0);
	close(dirfd);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char syms[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 T do_one\n"
				   "ffffffff81000200 t helper_two\n"
				   "ffffffffc0a01000 t ext4_foo\t[ext4]\n"
				   "ffffffffc0b00000 t xfs_baz\t[xfs]\n"
				   "ffffffffc0c00000 t bpf_prog_0011223344556677_x\t[bpf]\n";
	static const char mods[] = "ext4 8192 1 - Live 0xffffffffc0a01000\n"
				   "xfs 8192 0 - Live 0xffffffffc0b00000 (E)\n";
	static const char boot[] = "5e69f33c-06f3-4ef2-b5d0-8b85e79eff19\n";
	enum kallsyms_cache_result res;
	struct kallsyms *ks;
	int fd;

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/tmp/kiln-fuzz-ksym.XXXXXX");
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	snprintf(kallsyms_path, sizeof(kallsyms_path), "%s/kallsyms", dir);
	snprintf(modules_path, sizeof(modules_path), "%s/modules", dir);
	snprintf(boot_path, sizeof(boot_path), "%s/boot_id", dir);
	put(kallsyms_path, syms, sizeof(syms) - 1);
	put(modules_path, mods, sizeof(mods) - 1);
	put(boot_path, boot, sizeof(boot) - 1);
	paths = (struct kallsyms_paths){ kallsyms_path, modules_path, boot_path };
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(dirfd >= 0);
	atexit(cleanup);
	/* The key this made-up kernel's cache files carry. */
	ks = kallsyms__load_cached(&paths, dirfd, &res);
	FUZZ_CHECK(ks != NULL && res == KALLSYMS_CACHE_MISS);
	kallsyms__free(ks);
	fd = openat(dirfd, "kernel.ksym", O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0 && pread(fd, key, sizeof(key), OFF_KEY) == sizeof(key));
	close(fd);
	return 0;
}

static void check_lookup(struct kallsyms *ks, uint64_t addr)
{
	struct ksym s;

	if (!kallsyms__lookup(ks, addr, &s))
		return;
	FUZZ_CHECK(s.addr <= addr && addr - s.addr < (1u << 20));
	FUZZ_CHECK(s.name && strlen(s.name) < (1u << 20));
	FUZZ_CHECK(!s.module || strlen(s.module) < (1u << 20));
}

static void check(const uint8_t *data, size_t size)
{
	enum kallsyms_cache_result res;
	struct kallsyms *ks;
	char path[128];

	snprintf(path, sizeof(path), "%s/kernel.ksym", dir);
	put(path, data, size);
	ks = kallsyms__load_cached(&paths, dirfd, &res);
	FUZZ_CHECK(ks != NULL);
	FUZZ_CHECK(res == KALLSYMS_CACHE_HIT || res == KALLSYMS_CACHE_MISS ||
		   res == KALLSYMS_CACHE_REFUSED);
	if (res != KALLSYMS_CACHE_HIT) {
		/* read from the text: every symbol there */
		FUZZ_CHECK(kallsyms__count(ks) == 6);
	}
	check_lookup(ks, 0);
	check_lookup(ks, UINT64_MAX);
	for (uint64_t a = 0xffffffff81000000ull; a < 0xffffffff81000400ull; a += 0x80)
		check_lookup(ks, a);
	for (uint64_t a = 0xffffffffc0a00f00ull; a < 0xffffffffc0c00100ull; a += 0x7fff)
		check_lookup(ks, a);
	kallsyms__free(ks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	uint32_t crc;

	check(data, size);
	if (size < HEADER)
		return 0;
	fixed = malloc(size);
	FUZZ_CHECK(fixed != NULL);
	memcpy(fixed, data, size);
	memcpy(fixed + OFF_KEY, key, sizeof(key));
	crc = (uint32_t)crc32_z(crc32_z(0, NULL, 0), fixed + HEADER, size - HEADER);
	memcpy(fixed + OFF_CRC, &crc, sizeof(crc));
	check(fixed, size);
	free(fixed);
	return 0;
}
