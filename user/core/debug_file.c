/* SPDX-License-Identifier: BSD-2-Clause */
/* Separate debug files by build id and .gnu_debuglink (debug_file.h). A
 * CRC is computed only over a file the safe opener accepted, so it reads at
 * most ELF_FILE_MAX bytes. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/debug_file.h"
#include "core/elf.h"
#include "core/log.h"
#include "core/safe_open.h"

static int file_crc32(int fd, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;

	for (;;) {
		ssize_t r = pread(fd, buf, sizeof(buf), off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	*out = (uint32_t)crc;
	return 0;
}

/* One candidate, path as the process sees it, opened by the safe opener
 * inside root (a FIFO, a directory, a symlink out of the root or a file
 * over ELF_FILE_MAX is refused and counted there, before a byte is read).
 * It must not be the main file itself, must be ELF, and must match by
 * build id (want_id) or by the debuglink CRC (want_crc, when want_id is
 * NULL). */
static bool try_file(const char *root, const char *file, const struct stat *self,
		     const char *want_id, uint32_t want_crc, debug_file_accept_fn accept,
		     void *ctx)
{
	char id[2 * ELF_BUILD_ID_MAX + 1];
	struct stat sb;
	uint32_t crc;
	Elf *elf;
	int fd;

	fd = safe_open__in(root, file, ELF_FILE_MAX, &sb);
	if (fd < 0)
		return false;
	if (self && sb.st_dev == self->st_dev && sb.st_ino == self->st_ino)
		goto reject;
	if (!want_id && (file_crc32(fd, &crc) != 0 || crc != want_crc)) {
		pr_debug("debug file '%s': CRC mismatch", file);
		goto reject;
	}
	elf = elf__begin_fd(fd, file);
	if (!elf)
		goto reject;
	if (elf_kind(elf) != ELF_K_ELF ||
	    (want_id && (elf__read_build_id(elf, file, id, sizeof(id)) != 0 ||
			 strcmp(id, want_id) != 0))) {
		elf_end(elf);
		goto reject;
	}
	return accept(elf, fd, file, ctx);
reject:
	close(fd);
	return false;
}

/* The debuglink section: the file name, NUL, padding to 4, a CRC32 in the
 * file's byte order. 0 or -EINVAL. */
static int read_debuglink(Elf *elf, Elf_Scn *scn, char name[DEBUGLINK_NAME_MAX + 1],
			  uint32_t *crc)
{
	const unsigned char *p;
	size_t name_len, crc_off;
	GElf_Shdr sh;
	Elf_Data *d;

	if (!gelf_getshdr(scn, &sh) || sh.sh_size > DEBUGLINK_SECTION_MAX)
		return -EINVAL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return -EINVAL;
	p = d->d_buf;
	name_len = strnlen((const char *)p, d->d_size);
	crc_off = (name_len + 4) & ~(size_t)3;
	if (name_len == 0 || name_len > DEBUGLINK_NAME_MAX || crc_off + 4 > d->d_size ||
	    memchr(p, '/', name_len))
		return -EINVAL;
	memcpy(name, p, name_len + 1);
	if (elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB)
		*crc = (uint32_t)p[crc_off] << 24 | (uint32_t)p[crc_off + 1] << 16 |
		       (uint32_t)p[crc_off + 2] << 8 | p[crc_off + 3];
	else
		*crc = (uint32_t)p[crc_off + 3] << 24 | (uint32_t)p[crc_off + 2] << 16 |
		       (uint32_t)p[crc_off + 1] << 8 | p[crc_off];
	return 0;
}

bool debug_file__find(Elf *elf, Elf_Scn *debuglink, int fd, const char *build_id,
		      const char *root, const char *path, debug_file_accept_fn accept,
		      void *ctx)
{
	char file[PATH_MAX], dir[PATH_MAX], name[DEBUGLINK_NAME_MAX + 1];
	struct stat self, *selfp = fstat(fd, &self) == 0 ? &self : NULL;
	const char *slash;
	bool host;
	uint32_t crc;
	int n;

	root = root ? root : "";
	host = !root[0] || strcmp(root, "/") == 0;
	if (build_id && build_id[0]) {
		n = snprintf(file, sizeof(file), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			     build_id, build_id + 2);
		if (n > 0 && (size_t)n < sizeof(file) &&
		    (try_file(root, file, selfp, build_id, 0, accept, ctx) ||
		     (!host && try_file("/", file, selfp, build_id, 0, accept, ctx))))
			return true;
	}
	if (!debuglink || !path || path[0] != '/' || !(slash = strrchr(path, '/')) ||
	    read_debuglink(elf, debuglink, name, &crc) != 0)
		return false;
	n = snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return false;
	/* Next to the file, in its .debug/, under /usr/lib/debug. */
	for (int i = 0; i < 3; i++) {
		if (i == 0)
			n = snprintf(file, sizeof(file), "%s/%s", dir, name);
		else if (i == 1)
			n = snprintf(file, sizeof(file), "%s/.debug/%s", dir, name);
		else
			n = snprintf(file, sizeof(file), "/usr/lib/debug%s/%s", dir, name);
		if (n > 0 && (size_t)n < sizeof(file) &&
		    try_file(root, file, selfp, NULL, crc, accept, ctx))
			return true;
	}
	return false;
}

bool debug_file__try(int fd, const char *build_id, const char *path,
		     debug_file_accept_fn accept, void *ctx)
{
	struct stat self;

	if (!build_id || !build_id[0] || !path)
		return false;
	return try_file("", path, fstat(fd, &self) == 0 ? &self : NULL, build_id, 0, accept, ctx);
}
