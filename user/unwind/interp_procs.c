// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: one table per language, keyed by process instance, of entries
 * whose facts the language fills; the BPF map gets an entry only once the
 * facts are checked, and loses it when the process ends (unless the pid's
 * entry is already the next program's). Every read of another process is
 * a bounded process_vm_readv. */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <bpf/bpf.h>

#include "core/elf.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/log.h"
#include "sampler/sampler.h"
#include "unwind/interp_procs.h"

#define SYMBOLS_MAX (1u << 22) /* symbols looked at in one file */
#define LOGGED_MAX 4096 /* binaries whose refusal was logged */

struct interp_procs {
	const struct interp_kind *kind;
	struct sampler *sampler;
	int fd;
	uint32_t max, used;
	struct hashmap procs; /* instance -> struct interp_proc */
	size_t npending; /* of those, INTERP_PENDING: tried, not ready yet */
	struct hashmap logged; /* binary key hash -> 1 */
	size_t nlogged;
	struct interp_stats st;
};

struct interp_procs *interp_procs__new(const struct interp_kind *kind, struct sampler *s,
				       int map_fd, uint32_t max)
{
	struct interp_procs *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->kind = kind;
	p->sampler = s;
	p->fd = map_fd;
	p->max = max;
	return p;
}

int interp__read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int interp__read_u64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return interp__read(pid, addr, v, sizeof(*v));
}

int interp__read_failed(int err, unsigned unreadable, unsigned other)
{
	return (int)(err == -EFAULT || err == -EPERM || err == -ESRCH ? unreadable : other) + 1;
}

bool interp__named(const char *path, const char *const *prefixes)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (; *prefixes; prefixes++)
		if (strncmp(base, *prefixes, strlen(*prefixes)) == 0)
			return true;
	return false;
}

/* What interp__symbols reads of a file: its executable segments and the
 * symbols of one list of names, by file offset (value 0: absent; a TLS
 * symbol's is its offset in the block plus one). */
#define FILE_SEGS 4
#define FILE_SYMBOLS 16
struct symbol_file {
	char key[sizeof(((struct binary *)0)->key)];
	const char *const *names;
	uint64_t value[FILE_SYMBOLS], size[FILE_SYMBOLS];
	uint32_t tls; /* bit k: names[k] is a TLS symbol */
	struct {
		uint64_t offset, filesz, vaddr;
	} seg[FILE_SEGS];
	size_t nseg;
};

/* The files last read, by the binary's key (what kiln's fstat of the
 * opened file says, never what the file claims): a language's processes
 * mostly run one interpreter, whose symbol tables (megabytes for an
 * unstripped python3.11, read into fresh memory) are then read once, not
 * at each process. The oldest replaced when full; the main loop's alone. */
#define SYMBOL_FILES 8
static struct symbol_file symbol_files[SYMBOL_FILES];
static unsigned symbol_files_next;

static int read_symbol_file(const struct binary *bin, const char *const *names, size_t n,
			    struct symbol_file *f)
{
	Elf *elf = elf__begin_fd(bin->fd, bin->path);
	size_t nph = 0, seen = 0;
	Elf_Scn *scn = NULL;

	if (!elf)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph && f->nseg < FILE_SEGS; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X))
				f->seg[f->nseg++] = (typeof(f->seg[0])){ ph.p_offset, ph.p_filesz,
									 ph.p_vaddr };
		}
	}
	while (f->nseg && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t count;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || sh.sh_entsize == 0)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < count && seen < SYMBOLS_MAX; i++, seen++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			if (s.st_value == 0 && GELF_ST_TYPE(s.st_info) != STT_TLS)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name)
				continue;
			for (size_t k = 0; k < n; k++)
				if (!f->value[k] && name[0] == names[k][0] &&
				    strcmp(name, names[k]) == 0) {
					f->value[k] = GELF_ST_TYPE(s.st_info) == STT_TLS ?
							      s.st_value + 1 : s.st_value;
					f->tls |= (GELF_ST_TYPE(s.st_info) == STT_TLS) << k;
					f->size[k] = s.st_size;
				}
		}
	}
	elf_end(elf);
	snprintf(f->key, sizeof(f->key), "%s", bin->key);
	f->names = names;
	return 0;
}

int interp__symbols(const struct proc_mapping *m, const char *const *names, size_t n,
		    uint64_t *addr, uint64_t *size, uint64_t *bias_out)
{
	struct symbol_file *f = NULL, fresh;
	uint64_t bias = 0;
	bool have_bias = false;
	/* a file kiln opened and fstat'ed (binary.key "f:..."): its key says
	 * what it is */
	bool keyed = m->bin->key[0] == 'f';

	if (n > FILE_SYMBOLS)
		return -EINVAL;
	for (unsigned i = 0; keyed && i < SYMBOL_FILES && !f; i++)
		if (symbol_files[i].names == names && strcmp(symbol_files[i].key, m->bin->key) == 0)
			f = &symbol_files[i];
	if (!f) {
		if (read_symbol_file(m->bin, names, n, &fresh))
			return -EINVAL;
		f = &fresh;
		if (keyed) {
			f = &symbol_files[symbol_files_next++ % SYMBOL_FILES];
			*f = fresh;
		}
	}
	for (size_t i = 0; i < f->nseg && !have_bias; i++)
		if (m->pgoff >= f->seg[i].offset && m->pgoff < f->seg[i].offset + f->seg[i].filesz) {
			bias = m->start - m->pgoff - (f->seg[i].vaddr - f->seg[i].offset);
			have_bias = true;
		}
	if (!have_bias)
		return -ENOENT;
	for (size_t k = 0; k < n; k++)
		if (!addr[k] && f->value[k]) {
			addr[k] = f->tls >> k & 1 ? f->value[k] : f->value[k] + bias;
			size[k] = f->size[k];
		}
	if (bias_out)
		*bias_out = bias;
	return 0;
}

static struct interp_proc *pending(struct interp_procs *p, const struct proc_snapshot *s)
{
	struct interp_proc *e = p ? hashmap__get_u64(&p->procs, s->instance) : NULL;

	if (!p || s->ended || (e && e->state != INTERP_PENDING))
		return NULL;
	if (e)
		return e;
	e = calloc(1, sizeof(*e) + p->kind->facts_size);
	if (!e || hashmap__put_u64(&p->procs, s->instance, e)) {
		free(e);
		return NULL;
	}
	e->instance = s->instance;
	e->pid = s->pid;
	e->facts = e + 1;
	p->npending++;
	return e;
}

/* e, pending, is settled: its facts in the map, or refused. */
static void settle(struct interp_procs *p, struct interp_proc *e, int state)
{
	e->state = state;
	p->npending--;
}

static void refuse(struct interp_procs *p, struct interp_proc *e, unsigned why,
		   const struct binary *bin)
{
	uint64_t h = hash__str(bin ? bin->key : "?");

	settle(p, e, INTERP_REFUSED);
	if (why >= p->kind->nrefusals)
		return;
	p->st.refused[why]++;
	if (p->nlogged < LOGGED_MAX && !hashmap__get_u64(&p->logged, h) &&
	    hashmap__put_u64(&p->logged, h, (void *)1) == 0) {
		p->nlogged++;
		pr_warn("%s: %s (pid %d): no %s frames (%s); its stacks keep their native frames; further cases counted only",
			p->kind->name, bin && bin->path ? bin->path : "?", e->pid, p->kind->name,
			p->kind->refusal_names[why]);
	}
}

static bool retry(struct interp_procs *p, struct interp_proc *e, int not_ready,
		  const struct binary *bin)
{
	if (++e->attempts < INTERP_ATTEMPTS_MAX)
		return true;
	if (not_ready >= 0)
		refuse(p, e, (unsigned)not_ready, bin);
	else
		settle(p, e, INTERP_REFUSED);
	return false;
}

static int accept(struct interp_procs *p, struct interp_proc *e, const struct binary *bin)
{
	uint32_t key = (uint32_t)e->pid;

	memcpy(e->facts, &e->instance, sizeof(e->instance));
	/* its walker loaded at the first such process (a few ms of the
	 * verifier's, which starts without one save), then at once */
	if (sampler__load_walker(p->sampler, p->kind->prog)) {
		refuse(p, e, p->kind->walker, bin);
		return -ENOEXEC;
	}
	if (p->used >= p->max || bpf_map_update_elem(p->fd, &key, e->facts, BPF_ANY)) {
		refuse(p, e, p->kind->full, bin);
		return -ENOSPC;
	}
	p->used++;
	settle(p, e, INTERP_OK);
	p->st.detected++;
	p->st.processes++;
	return 0;
}

/* The index of s's first mapping of an open file named as k's
 * interpreter, s->nmaps when none. */
static size_t first_named(const struct interp_kind *k, const struct proc_snapshot *s)
{
	size_t i = 0;

	while (i < s->nmaps && !(s->maps[i].bin && s->maps[i].bin->fd >= 0 &&
				 interp__named(s->maps[i].name, k->prefixes)))
		i++;
	return i;
}

bool interp_procs__candidate(const struct interp_procs *p, const struct proc_snapshot *s)
{
	return p && first_named(p->kind, s) < s->nmaps;
}

void interp_procs__mapped(struct interp_procs *p, const struct proc_snapshot *s)
{
	const struct interp_kind *k = p ? p->kind : NULL;
	uint64_t binary[INTERP_BINARY_MAX / 8];
	const struct proc_mapping *m = NULL;
	struct interp_proc *e;
	size_t i = k ? first_named(k, s) : 0;
	int r;

	if (!k || i == s->nmaps || !(e = pending(p, s)))
		return;
	/* The first such file with the interpreter in it: an executable
	 * linked with the interpreter's library has none of its own. */
	for (; !m && i < s->nmaps; i++) {
		const struct proc_mapping *o = &s->maps[i];

		if (!o->bin || o->bin->fd < 0 || !interp__named(o->name, k->prefixes))
			continue;
		memset(binary, 0, sizeof(binary));
		if (k->binary(o, binary))
			m = o;
	}
	if (!m) {
		/* named so, but no interpreter (yet: its library may be
		 * mapped by the next read) */
		retry(p, e, -1, NULL);
		return;
	}
	memset(e->facts, 0, k->facts_size);
	r = k->detect(s->pid, binary, e->facts);
	if (r == -EAGAIN)
		retry(p, e, (int)k->not_ready, m->bin);
	else if (r > 0 && (unsigned)(r - 1) >= k->first_runtime)
		retry(p, e, r - 1, m->bin);
	else if (r > 0)
		refuse(p, e, (unsigned)(r - 1), m->bin);
	else if (accept(p, e, m->bin) == 0)
		k->detected(s->pid, e->facts);
}

void interp_procs__ended(struct interp_procs *p, const struct proc_snapshot *s)
{
	struct interp_proc *e = p ? hashmap__del_u64(&p->procs, s->instance) : NULL;
	uint32_t key = (uint32_t)s->pid;

	if (!e)
		return;
	if (e->state == INTERP_PENDING)
		p->npending--;
	if (e->state == INTERP_OK) {
		uint8_t cur[256];
		uint32_t inst;

		/* The pid's entry may already be the next program's. */
		if (p->kind->bpf_size <= sizeof(cur) &&
		    bpf_map_lookup_elem(p->fd, &key, cur) == 0 &&
		    (memcpy(&inst, cur, sizeof(inst)), inst == s->instance))
			bpf_map_delete_elem(p->fd, &key);
		p->used--;
		p->st.processes--;
	}
	free(e);
}

bool interp_procs__pending(const struct interp_procs *p)
{
	return p && p->npending;
}

const void *interp_procs__get(const struct interp_procs *p, uint32_t instance)
{
	const struct interp_proc *e = p ? hashmap__get_u64(&p->procs, instance) : NULL;

	return e && e->state == INTERP_OK ? e->facts : NULL;
}

void interp_procs__stats(const struct interp_procs *p, struct interp_stats *out)
{
	if (p)
		*out = p->st;
	else
		memset(out, 0, sizeof(*out));
}

static void free_proc(uint64_t hash, void *val, void *ctx)
{
	(void)hash;
	(void)ctx;
	free(val);
}

void interp_procs__free(struct interp_procs *p)
{
	if (!p)
		return;
	hashmap__each(&p->procs, free_proc, NULL);
	hashmap__clear(&p->procs);
	hashmap__clear(&p->logged);
	free(p);
}
