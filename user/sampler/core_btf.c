// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: libbpf relocates the BPF object's field offsets (CO-RE) against
 * the kernel's BTF: at every start it reads /sys/kernel/btf/vmlinux a page
 * a read, checks its 100 000+ types and searches them by name for each of
 * the object's, about a third of kiln's start-up CPU. The relocations need
 * far less: the kernel types whose names the object's own types carry,
 * with the types held inside them by value (a struct's members, an
 * array's elements). A relocation never looks past a pointer (any pointer
 * matches any), so every pointer becomes a pointer to void and the cut
 * ends there: a few hundred types. They are written once per boot and
 * BPF object to the cache directory, keyed by both inside the file (a
 * typedef named after the key); libbpf reads that file instead
 * (btf_custom_path). Candidates are the same as in the whole BTF: every
 * kernel type of each wanted name is kept, so each relocation resolves as
 * it would against the kernel's own. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "core/elf.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/log.h"
#include "sampler/core_btf.h"

#define KERNEL_BTF "/sys/kernel/btf/vmlinux"
#define BOOT_ID "/proc/sys/kernel/random/boot_id"
#define KEY_MAGIC "kiln core btf 1"
#define KEY_PREFIX "kiln_core_btf_key_"
#define NEST_MAX 32             /* types held by value inside each other */

/* The object's own BTF (its .BTF section), and that section's hash. */
static struct btf *object_btf(const void *obj, size_t len, uint64_t *hash)
{
	struct btf *btf = NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;

	if (elf__ready())
		return NULL;
	elf = elf_memory((char *)obj, len);
	if (!elf)
		return NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0)
		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;
			Elf_Data *d;
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh))
				break;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".BTF"))
				continue;
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size) {
				*hash = hash__bytes(d->d_buf, d->d_size);
				btf = btf__new(d->d_buf, (__u32)d->d_size);
			}
			break;
		}
	elf_end(elf);
	return btf;
}

/* This boot's kernel BTF and this object: the key of the file cut for
 * both (the kernel's BTF cannot change within a boot). */
static int cache_key(uint64_t obj_hash, uint64_t *key)
{
	int fd = open(BOOT_ID, O_RDONLY | O_CLOEXEC);
	char boot[64];
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, boot, sizeof(boot));
	close(fd);
	if (n <= 0)
		return -EIO;
	if (stat(KERNEL_BTF, &st))
		return -errno;
	*key = hash__add(hash__add(hash__add(hash__str(KEY_MAGIC), hash__bytes(boot, (size_t)n)),
				   (uint64_t)st.st_size),
			 obj_hash);
	return 0;
}

/* 0: the file is kiln's, whole, and cut for key; -ENOENT: none; -ESTALE:
 * another boot's or object's; -EPERM: not kiln's own or corrupt. */
static int read_back(int dirfd, const char *path, const char *key_name, uint64_t *types)
{
	struct stat st;
	struct btf *btf;
	int id;

	if (fstatat(dirfd, CORE_BTF_NAME, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? -ENOENT : -EPERM;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > CORE_BTF_MAX_BYTES)
		return -EPERM;
	btf = btf__parse(path, NULL);
	if (!btf)
		return -EPERM;
	id = btf__find_by_name_kind(btf, key_name, BTF_KIND_TYPEDEF);
	*types = btf__type_cnt(btf) - 1;
	btf__free(btf);
	return id > 0 ? 0 : -ESTALE;
}

struct cut {
	const struct btf *from;
	struct btf *to;
	int *ids;               /* from's id -> to's id + 1; 0: not copied yet */
	int void_ptr;           /* to's void *, 0 until needed */
};

static int copy_type(struct cut *c, __u32 id, int depth);

static int copy_composite(struct cut *c, const struct btf_type *t, const char *name, int depth)
{
	const struct btf_member *m = btf_members(t);
	__u16 n = btf_vlen(t);
	int *member_ids = calloc(n ? n : 1, sizeof(*member_ids)), id = 0;

	if (!member_ids)
		return -ENOMEM;
	/* the members' types first: fields follow their struct directly */
	for (__u16 i = 0; i < n && id >= 0; i++)
		id = member_ids[i] = copy_type(c, m[i].type, depth + 1);
	if (id >= 0)
		id = btf_is_struct(t) ? btf__add_struct(c->to, name, t->size) :
					btf__add_union(c->to, name, t->size);
	for (__u16 i = 0; i < n && id >= 0; i++) {
		int err = btf__add_field(c->to, btf__name_by_offset(c->from, m[i].name_off),
					 member_ids[i], btf_member_bit_offset(t, i),
					 btf_member_bitfield_size(t, i));

		if (err)
			id = err;
	}
	free(member_ids);
	return id;
}

static int copy_enum(struct cut *c, const struct btf_type *t, const char *name)
{
	__u16 n = btf_vlen(t);
	int id;

	if (btf_is_enum(t)) {
		const struct btf_enum *v = btf_enum(t);

		id = btf__add_enum(c->to, name, t->size);
		for (__u16 i = 0; i < n && id >= 0; i++) {
			int err = btf__add_enum_value(c->to, btf__name_by_offset(c->from, v[i].name_off),
						      v[i].val);

			if (err)
				id = err;
		}
		return id;
	}
	const struct btf_enum64 *v = btf_enum64(t);

	id = btf__add_enum64(c->to, name, t->size, btf_kflag(t));
	for (__u16 i = 0; i < n && id >= 0; i++) {
		int err = btf__add_enum64_value(c->to, btf__name_by_offset(c->from, v[i].name_off),
						btf_enum64_value(&v[i]));

		if (err)
			id = err;
	}
	return id;
}

/* Copies type id of c->from (and what it holds by value) into c->to, once;
 * to's id, or -errno. */
static int copy_type(struct cut *c, __u32 id, int depth)
{
	const struct btf_type *t;
	const char *name;
	int r;

	if (id == 0)
		return 0;
	if (c->ids[id])
		return c->ids[id] - 1;
	t = btf__type_by_id(c->from, id);
	if (!t || depth > NEST_MAX)
		return -EINVAL;
	name = btf__name_by_offset(c->from, t->name_off);
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
		r = btf__add_int(c->to, name, t->size, btf_int_encoding(t));
		break;
	case BTF_KIND_FLOAT:
		r = btf__add_float(c->to, name, t->size);
		break;
	case BTF_KIND_PTR:
		if (!c->void_ptr)
			c->void_ptr = btf__add_ptr(c->to, 0);
		r = c->void_ptr;
		break;
	case BTF_KIND_ARRAY: {
		const struct btf_array *a = btf_array(t);
		int elem = copy_type(c, a->type, depth + 1);
		int index = elem < 0 ? elem : copy_type(c, a->index_type, depth + 1);

		r = index < 0 ? index : btf__add_array(c->to, index, elem, a->nelems);
		break;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		r = copy_composite(c, t, name, depth);
		break;
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		r = copy_enum(c, t, name);
		break;
	case BTF_KIND_TYPEDEF:
		r = copy_type(c, t->type, depth + 1);
		if (r >= 0)
			r = btf__add_typedef(c->to, name, r);
		break;
	case BTF_KIND_FWD:
		r = btf__add_fwd(c->to, name, btf_kflag(t) ? BTF_FWD_UNION : BTF_FWD_STRUCT);
		break;
	case BTF_KIND_CONST:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		r = copy_type(c, t->type, depth + 1);   /* relocations look through */
		break;
	default:
		r = 0;          /* a function's type: only ever behind a pointer */
	}
	if (r >= 0)
		c->ids[id] = r + 1;
	return r;
}

/* Types a relocation can be rooted at, by kind. */
static bool root_kind(const struct btf_type *t)
{
	return btf_is_composite(t) || btf_is_any_enum(t) || btf_is_typedef(t);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of local's types that relocations can be rooted at, without
 * a flavour's "___" suffix (sorted, malloc'd; *n of them). */
static char **wanted_names(const struct btf *local, size_t *n)
{
	__u32 count = btf__type_cnt(local);
	char **names = calloc(count, sizeof(*names));

	*n = 0;
	if (!names)
		return NULL;
	for (__u32 id = 1; id < count; id++) {
		const struct btf_type *t = btf__type_by_id(local, id);
		const char *name = btf__name_by_offset(local, t->name_off), *flavour;

		if (!root_kind(t) || !name || !*name)
			continue;
		flavour = strstr(name, "___");
		names[*n] = strndup(name, flavour ? (size_t)(flavour - name) : strlen(name));
		if (!names[*n])
			break;
		(*n)++;
	}
	qsort(names, *n, sizeof(*names), name_cmp);
	return names;
}

static int write_raw(FILE *f, void *ctx)
{
	const struct btf *btf = ctx;
	__u32 size;
	const void *raw = btf__raw_data(btf, &size);

	return raw && fwrite(raw, 1, size, f) == size ? 0 : -EIO;
}

/* Cuts the kernel's types local's names want, adds the key, writes the
 * file. 0 or -errno. */
static int build(int dirfd, const struct btf *local, const char *key_name, uint64_t *types)
{
	struct btf *kernel = btf__load_vmlinux_btf();
	struct cut c = { .from = kernel };
	size_t nnames = 0;
	char **names = NULL;
	uint64_t bytes;
	int err = -ENOMEM, key_type;

	if (!kernel)
		return -errno;
	names = wanted_names(local, &nnames);
	c.to = btf__new_empty();
	c.ids = calloc(btf__type_cnt(kernel), sizeof(*c.ids));
	if (!names || !c.to || !c.ids)
		goto out;
	err = 0;
	for (__u32 id = 1; id < btf__type_cnt(kernel) && err >= 0; id++) {
		const struct btf_type *t = btf__type_by_id(kernel, id);
		const char *name = btf__name_by_offset(kernel, t->name_off);

		if (root_kind(t) && name && *name &&
		    bsearch(&name, names, nnames, sizeof(*names), name_cmp))
			err = copy_type(&c, id, 0);
	}
	key_type = err < 0 ? err : btf__add_int(c.to, "int", 4, BTF_INT_SIGNED);
	err = key_type < 0 ? key_type : btf__add_typedef(c.to, key_name, key_type);
	if (err >= 0) {
		*types = btf__type_cnt(c.to) - 1;
		err = file__write_at(dirfd, CORE_BTF_NAME, CORE_BTF_NAME, 0600, write_raw, c.to,
				     &bytes);
	}
out:
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	free(c.ids);
	btf__free(c.to);
	btf__free(kernel);
	return err < 0 ? err : 0;
}

enum core_btf_result core_btf__prepare(int dirfd, const void *obj, size_t obj_len, char *path,
				       size_t path_len, uint64_t *types)
{
	uint64_t obj_hash = 0, key = 0;
	enum core_btf_result res;
	struct btf *local;
	char key_name[64];
	int err;

	*types = 0;
	if (dirfd < 0)
		return CORE_BTF_OFF;
	local = object_btf(obj, obj_len, &obj_hash);
	if (!local || cache_key(obj_hash, &key)) {
		btf__free(local);
		return CORE_BTF_FAILED;
	}
	snprintf(key_name, sizeof(key_name), KEY_PREFIX "%016llx", (unsigned long long)key);
	snprintf(path, path_len, "/proc/self/fd/%d/" CORE_BTF_NAME, dirfd);
	err = read_back(dirfd, path, key_name, types);
	res = err == 0 ? CORE_BTF_HIT : err == -EPERM ? CORE_BTF_REFUSED : CORE_BTF_BUILT;
	if (res == CORE_BTF_REFUSED) {
		pr_warn("%s in the cache directory: not kiln's own or corrupt: cut again from %s",
			CORE_BTF_NAME, KERNEL_BTF);
		unlinkat(dirfd, CORE_BTF_NAME, 0);      /* a symlink: the link */
	}
	if (res != CORE_BTF_HIT) {
		err = build(dirfd, local, key_name, types);
		if (err) {
			pr_warn("cannot keep the kernel's types for the BPF object in %s: %s; libbpf reads all of %s",
				CORE_BTF_NAME, strerror(-err), KERNEL_BTF);
			res = CORE_BTF_FAILED;
		}
	}
	btf__free(local);
	return res;
}
