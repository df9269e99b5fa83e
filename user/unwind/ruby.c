// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: a process is Ruby when it maps a file named ruby* or libruby*
 * whose symbols hold rb_vm_exec and ruby_current_vm_ptr. Its version comes
 * from ruby_version (else the file name); the offsets from the table
 * below, checked against the running VM before BPF may follow them: the
 * VM's main thread must point to an execution context that points back to
 * it, whose current control frame lies in its VM stack, and whose Ruby
 * frames hold instruction sequences. The sampled thread's own context is
 * ruby_current_ec, a general-dynamic TLS variable of libruby: BPF reads it
 * through the thread's DTV, with the module id the dynamic linker wrote
 * into its DTPMOD64 slot (1 for a ruby executable that defines it). That
 * path is checked on the main thread, whose thread pointer is found in
 * its rb_thread_t (pthread_self(): the word that points to itself). When
 * it does not check out, the fallback is the main ractor's running EC,
 * which BPF uses only for the thread holding the GVL. */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/elf.h"
#include "core/log.h"
#include "unwind/ruby.h"

const char *const ruby_refusal_names[RB_REFUSAL_COUNT] = {
	[RB_REFUSED_VERSION] = "version",
	[RB_REFUSED_SYMBOLS] = "symbols",
	[RB_REFUSED_OFFSETS] = "offsets",
	[RB_REFUSED_THREAD] = "thread",
	[RB_REFUSED_UNREADABLE] = "unreadable",
	[RB_REFUSED_NOT_READY] = "not_initialized",
	[RB_REFUSED_FULL] = "full",
	[RB_REFUSED_WALKER] = "walker",
};

#define THREAD_SCAN 512 /* bytes of the main rb_thread_t searched for its tp */
#define FRAMES_CHECKED 8 /* control frames of the main EC checked */
#define RELA_MAX (1u << 20) /* relocations looked at for the TLS slot */
#define DTV_MODULES_MAX 4096 /* a sane TLS module id */
#define R_X86_64_DTPMOD64_ 16
#define BODY_READ_MAX 96 /* the walker reads 96 bytes of an iseq body */

/* One minor version's layout (x86-64, glibc; checked before use). */
struct rb_layout {
	const char *version; /* "3.1" */
	struct kiln_rb_offsets o;
	uint16_t vm_main_ractor, vm_main_thread, thread_ec;
	uint16_t body_path, body_label, body_base_label, info_body, info_positions, info_size,
		info_succ, body_local_iseq, class_ext, ext_iv_tbl;
};

static const struct rb_layout layouts[] = {
	{ .version = "3.1",
	  .o = { .ec_vm_stack = 0,
		 .ec_vm_stack_size = 8,
		 .ec_cfp = 16,
		 .ec_thread = 48,
		 .cfp_size = 64,
		 .cfp_pc = 0,
		 .cfp_iseq = 16,
		 .cfp_ep = 32,
		 .iseq_body = 16,
		 .body_type = 0,
		 .body_size = 4,
		 .body_encoded = 8,
		 .body_first_lineno = 88,
		 .ractor_running_ec = 520 },
	  .vm_main_ractor = 32,
	  .vm_main_thread = 40,
	  .thread_ec = 40,
	  .body_path = 64,
	  .body_base_label = 72,
	  .body_label = 80,
	  .body_local_iseq = 176,
	  .class_ext = 24,
	  .ext_iv_tbl = 8,
	  .info_body = 120,
	  .info_positions = 128,
	  .info_size = 136,
	  .info_succ = 144 },
};

enum { SYM_EXEC, SYM_VM, SYM_EC, SYM_RACTOR, SYM_VERSION, SYM_OBJECT, SYM_COUNT };
static const char *const sym_names[SYM_COUNT] = {
	"rb_vm_exec",	"ruby_current_vm_ptr", "ruby_current_ec", "ruby_single_main_ractor",
	"ruby_version", "rb_cObject",
};

struct rb_binary {
	uint64_t addr[SYM_COUNT], size[SYM_COUNT], bias;
	uint64_t modid_slot; /* the DTPMOD64 slot of ruby_current_ec, 0: none */
	bool executable; /* the main program (its TLS module is 1) */
	char file_version[8]; /* "3.1" from the file name, "": none */
};

/* "3.1" from a name like libruby-3.1.so.3.1.2 or ruby3.1. */
static void name_version(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/'), *v;

	base = base ? base + 1 : path;
	out[0] = 0;
	v = strpbrk(base, "0123456789");
	if (v && v[0] >= '1' && v[0] <= '9' && v[1] == '.' && v[2] >= '0' && v[2] <= '9' &&
	    (v[3] < '0' || v[3] > '9'))
		snprintf(out, len, "%.3s", v);
}

/* Whether the file is the main program, and the DTPMOD64 slot of
 * ruby_current_ec among its dynamic relocations. */
static void tls_module(const struct proc_mapping *m, struct rb_binary *b)
{
	Elf *elf = elf__begin_fd(m->bin->fd, m->bin->path);
	size_t nph = 0, seen = 0;
	Elf_Scn *scn = NULL;

	if (!elf)
		return;
	if (elf_getphdrnum(elf, &nph) == 0)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
				b->executable = true;
		}
	while (!b->modid_slot && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Scn *symscn;
		Elf_Data *data, *syms;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_entsize == 0)
			continue;
		symscn = elf_getscn(elf, sh.sh_link);
		data = elf_getdata(scn, NULL);
		if (!symscn || !gelf_getshdr(symscn, &symsh) || !data ||
		    !(syms = elf_getdata(symscn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n && seen < RELA_MAX; i++, seen++) {
			GElf_Rela r;
			GElf_Sym s;
			const char *name;

			if (!gelf_getrela(data, (int)i, &r) ||
			    GELF_R_TYPE(r.r_info) != R_X86_64_DTPMOD64_ ||
			    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s))
				continue;
			name = elf_strptr(elf, symsh.sh_link, s.st_name);
			if (name && strcmp(name, "ruby_current_ec") == 0) {
				b->modid_slot = r.r_offset + b->bias;
				break;
			}
		}
	}
	elf_end(elf);
}

static int read_failed(int err)
{
	return interp__read_failed(err, RB_REFUSED_UNREADABLE, RB_REFUSED_OFFSETS);
}

/* The main thread's thread pointer: the word of its rb_thread_t that is
 * pthread_self(), whose descriptor begins with itself (tcb) and has it
 * again at +16 (self). 0 and its offset, or -ENOENT. */
static int find_thread_pointer(pid_t pid, uint64_t th, uint64_t *tp, uint16_t *off)
{
	uint64_t buf[THREAD_SCAN / 8];

	if (interp__read(pid, th, buf, sizeof(buf)))
		return -EFAULT;
	for (size_t i = 0; i < THREAD_SCAN / 8; i++) {
		uint64_t self[3];

		if (buf[i] < 4096 || (buf[i] & 7) ||
		    interp__read(pid, buf[i], self, sizeof(self)) || self[0] != buf[i] ||
		    self[2] != buf[i])
			continue;
		*tp = buf[i];
		*off = (uint16_t)(i * 8);
		return 0;
	}
	return -ENOENT;
}

/* The execution context ec is sane: it names thread th (when th), its
 * current frame lies in its VM stack, and its Ruby frames hold iseqs. */
static int check_ec(pid_t pid, uint64_t ec, uint64_t th, const struct kiln_rb_offsets *o)
{
	uint64_t e[7], end, cfp;

	if (interp__read(pid, ec, e, sizeof(e)))
		return -EFAULT;
	if (th && e[o->ec_thread / 8] != th)
		return -EPROTO;
	if (e[o->ec_vm_stack_size / 8] >= (1u << 28))
		return -EPROTO;
	end = e[o->ec_vm_stack / 8] + 8 * e[o->ec_vm_stack_size / 8];
	cfp = e[o->ec_cfp / 8];
	if (cfp < e[o->ec_vm_stack / 8] || cfp >= end)
		return -EPROTO;
	for (int i = 0; i < FRAMES_CHECKED && cfp + o->cfp_size <= end; i++, cfp += o->cfp_size) {
		uint64_t iseq, ep, flags, iflags;

		if (interp__read_u64(pid, cfp + o->cfp_iseq, &iseq) ||
		    interp__read_u64(pid, cfp + o->cfp_ep, &ep) ||
		    interp__read_u64(pid, ep, &flags))
			return -EFAULT;
		if ((flags & KILN_RB_FRAME_CFRAME) || !iseq)
			continue;
		if (interp__read_u64(pid, iseq, &iflags))
			return -EFAULT;
		if ((iflags & 0x1f) != 0x1a || (iflags >> 12 & 0xf) != 7)
			return -EPROTO; /* not T_IMEMO / imemo_iseq */
	}
	return 0;
}

int ruby__ivars(pid_t pid, const struct ruby_info *info, uint64_t klass, uint64_t (*kv)[2],
		size_t max)
{
	/* st_table: entries_start, entries_bound, entries at 32, 40, 48;
	 * an entry is {hash, key, record} */
	uint64_t ext, tbl, head[7], e[RUBY_IVARS_MAX][3];
	size_t n;
	int err;

	if ((err = interp__read_u64(pid, klass + info->class_ext, &ext)) ||
	    (err = interp__read_u64(pid, ext + info->ext_iv_tbl, &tbl)))
		return err;
	if (!tbl)
		return 0;
	if ((err = interp__read(pid, tbl, head, sizeof(head))))
		return err;
	if (head[5] < head[4] || head[5] - head[4] > RUBY_IVARS_MAX)
		return -E2BIG;
	n = head[5] - head[4];
	if (n > max)
		n = max;
	if (n && (err = interp__read(pid, head[6] + 24 * head[4], e, 24 * n)))
		return err;
	for (size_t i = 0; i < n; i++) {
		kv[i][0] = e[i][1];
		kv[i][1] = e[i][2];
	}
	return (int)n;
}

/* The IDs of __classpath__ and __attached__: the key of Object's
 * instance variable that is the String "Object", and the key of its
 * singleton class's that is Object. Left 0 when not found. */
static void learn_class_ids(pid_t pid, uint64_t object_sym, struct ruby_info *info)
{
	uint64_t obj, meta, kv[RUBY_IVARS_MAX][2], head[3];
	int n;

	if (!object_sym || interp__read_u64(pid, object_sym, &obj) || !obj ||
	    interp__read_u64(pid, obj + 8, &meta))
		return;
	n = ruby__ivars(pid, info, obj, kv, RUBY_IVARS_MAX);
	for (int i = 0; i < n; i++)
		/* an embedded String (T_STRING, length 6 in bits 14-18) */
		if (interp__read(pid, kv[i][1], head, sizeof(head)) == 0 &&
		    (head[0] & 0x1f) == 0x05 && !(head[0] & 1u << 13) &&
		    (head[0] >> 14 & 0x1f) == 6 && memcmp(&head[2], "Object", 6) == 0)
			info->classpath_id = kv[i][0];
	n = ruby__ivars(pid, info, meta, kv, RUBY_IVARS_MAX);
	for (int i = 0; i < n; i++)
		if (kv[i][1] == obj)
			info->attached_id = kv[i][0];
}

static bool layout_sane(const struct kiln_rb_offsets *o)
{
	return o->ec_vm_stack <= 16 && o->ec_vm_stack_size <= 16 && o->ec_cfp <= 16 &&
	       o->ec_thread <= 48 && o->cfp_pc <= 32 && o->cfp_iseq <= 32 && o->cfp_ep <= 32 &&
	       o->cfp_size >= 40 && o->iseq_body <= 16 && o->body_type + 4 <= BODY_READ_MAX &&
	       o->body_size + 4 <= BODY_READ_MAX && o->body_encoded + 8 <= BODY_READ_MAX &&
	       o->body_first_lineno + 4 <= BODY_READ_MAX;
}

/* Detects and checks pid's interpreter in binary b. 0, -EAGAIN (try again
 * later), or a refusal (> 0, enum ruby_refusal + 1). */
static int detect(pid_t pid, const struct rb_binary *b, struct ruby_info *out)
{
	const struct rb_layout *l = NULL;
	char version[16] = "";
	uint64_t vm, th, ec, tp, ractor = 0;
	uint16_t tid_off = 0;
	int err;

#ifndef __x86_64__
	return RB_REFUSED_THREAD + 1;
#endif
	if (b->addr[SYM_VERSION]) {
		if ((err = interp__read(pid, b->addr[SYM_VERSION], version, sizeof(version) - 1)) &&
		    (err = interp__read(pid, b->addr[SYM_VERSION], version, 6)))
			return read_failed(err);
		version[sizeof(version) - 1] = 0;
	} else {
		snprintf(version, sizeof(version), "%s", b->file_version);
	}
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		size_t n = strlen(layouts[i].version);

		if (strncmp(version, layouts[i].version, n) == 0 &&
		    (version[n] == '.' || version[n] == 0))
			l = &layouts[i];
	}
	if (!l)
		return RB_REFUSED_VERSION + 1;
	if (!b->addr[SYM_EXEC] || !b->size[SYM_EXEC] || !b->addr[SYM_VM])
		return RB_REFUSED_SYMBOLS + 1;
	if (!layout_sane(&l->o))
		return RB_REFUSED_OFFSETS + 1;
	if ((err = interp__read_u64(pid, b->addr[SYM_VM], &vm)))
		return read_failed(err);
	if (!vm)
		return -EAGAIN; /* not set up yet */
	/* While the VM is being set up its pointers may lead nowhere yet. */
	if ((err = interp__read_u64(pid, vm + l->vm_main_thread, &th)))
		return read_failed(err);
	if (!th || interp__read_u64(pid, th + l->thread_ec, &ec) || !ec)
		return -EAGAIN;
	if ((err = check_ec(pid, ec, th, &l->o)))
		return read_failed(err);

	memset(out, 0, sizeof(*out));
	out->bpf.o = l->o;
	if (find_thread_pointer(pid, th, &tp, &tid_off) == 0) {
		uint64_t modid = 1, dtv, block, tls_ec;

		out->bpf.o.thread_id = tid_off;
		/* the TLS slot, checked on the main thread */
		if (b->addr[SYM_EC] &&
		    (b->executable ||
		     (b->modid_slot && interp__read_u64(pid, b->modid_slot, &modid) == 0)) &&
		    modid && modid < DTV_MODULES_MAX && interp__read_u64(pid, tp + 8, &dtv) == 0 &&
		    interp__read_u64(pid, dtv + 16 * modid, &block) == 0 &&
		    interp__read_u64(pid, block + b->addr[SYM_EC] - 1, &tls_ec) == 0 && tls_ec &&
		    check_ec(pid, tls_ec, th, &l->o) == 0) {
			out->bpf.ec_kind = KILN_RB_EC_TLS;
			out->bpf.tls_modid = modid;
			out->bpf.tls_off = b->addr[SYM_EC] - 1;
		} else if (b->addr[SYM_RACTOR] &&
			   interp__read_u64(pid, b->addr[SYM_RACTOR], &ractor) == 0 && ractor &&
			   interp__read_u64(pid, vm + l->vm_main_ractor, &tls_ec) == 0 &&
			   tls_ec == ractor) {
			/* the fallback: the GVL holder's, for its own thread */
			out->bpf.ec_kind = KILN_RB_EC_RUNNING;
			out->bpf.main_ractor = b->addr[SYM_RACTOR];
		}
	}
	if (!out->bpf.ec_kind)
		return RB_REFUSED_THREAD + 1;
	snprintf(out->version, sizeof(out->version), "%s", version);
	out->bpf.eval_start = b->addr[SYM_EXEC];
	out->bpf.eval_end = b->addr[SYM_EXEC] + b->size[SYM_EXEC];
	out->body_path = l->body_path;
	out->body_label = l->body_label;
	out->body_base_label = l->body_base_label;
	out->body_local_iseq = l->body_local_iseq;
	out->class_ext = l->class_ext;
	out->ext_iv_tbl = l->ext_iv_tbl;
	out->info_body = l->info_body;
	out->info_positions = l->info_positions;
	out->info_size = l->info_size;
	out->info_succ = l->info_succ;
	learn_class_ids(pid, b->addr[SYM_OBJECT], out);
	return 0;
}

/* ---- processes ---- */

static const char *const ruby_prefixes[] = { "ruby", "libruby", NULL };

static bool ruby_binary(const struct proc_mapping *o, void *binary)
{
	struct rb_binary *b = binary;

	name_version(o->name, b->file_version, sizeof(b->file_version));
	if (interp__symbols(o, sym_names, SYM_COUNT, b->addr, b->size, &b->bias) ||
	    !b->addr[SYM_EXEC])
		return false;
	tls_module(o, b);
	return true;
}

static int ruby_detect(pid_t pid, const void *binary, void *facts)
{
	return detect(pid, binary, facts);
}

static void ruby_detected(pid_t pid, const void *facts)
{
	const struct ruby_info *info = facts;

	pr_debug("ruby: pid %d: Ruby %s, rb_vm_exec 0x%" PRIx64 "-0x%" PRIx64
		 ", EC from %s (module %" PRIu64 ", +0x%" PRIx64 "), thread id at +%u",
		 pid, info->version, (uint64_t)info->bpf.eval_start, (uint64_t)info->bpf.eval_end,
		 info->bpf.ec_kind == KILN_RB_EC_TLS ? "its TLS slot" : "the GVL holder",
		 (uint64_t)info->bpf.tls_modid, (uint64_t)info->bpf.tls_off, info->bpf.o.thread_id);
}

static const struct interp_kind ruby_kind = {
	.name = "ruby",
	.refusal_names = ruby_refusal_names,
	.nrefusals = RB_REFUSAL_COUNT,
	.full = RB_REFUSED_FULL,
	.walker = RB_REFUSED_WALKER,
	.prog = KILN_PROG_RB,
	.not_ready = RB_REFUSED_NOT_READY,
	.first_runtime = RB_REFUSED_OFFSETS,
	.facts_size = sizeof(struct ruby_info),
	.bpf_size = sizeof(struct kiln_rb_proc),
	.prefixes = ruby_prefixes,
	.binary_size = sizeof(struct rb_binary),
	.binary = ruby_binary,
	.detect = ruby_detect,
	.detected = ruby_detected,
};

struct interp_procs *rubies__new(struct sampler *s, int rb_procs_fd, uint32_t max)
{
	return interp_procs__new(&ruby_kind, s, rb_procs_fd, max);
}
