// SPDX-License-Identifier: BSD-2-Clause
/* DESIGN: a process is Python when it maps a file named python* or
 * libpython* whose dynamic symbols hold _PyRuntime, _PyEval_EvalFrameDefault
 * and PyCode_Type. Its version comes from Py_Version (3.11+); the offsets
 * from the table below, one column per minor version, each checked against
 * the running interpreter before BPF may follow them: PyCode_Type's member
 * table and size (3.11, 3.12) or the interpreter's own _Py_DebugOffsets
 * (3.13, whose values are then used), a code object at the end of a
 * thread's current frame. The thread-state key's address is decoded from
 * PyGILState_GetThisThreadState (else the table's), and where glibc keeps
 * the key's value is found by looking for each thread state's address in
 * its own thread's descriptor (PyThreadState.thread_id is pthread_self(),
 * the thread pointer). Every read is a bounded process_vm_readv; nothing a
 * process holds is trusted further than these checks. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "core/elf.h"
#include "core/log.h"
#include "unwind/python.h"

const char *const python_refusal_names[PY_REFUSAL_COUNT] = {
	[PY_REFUSED_VERSION] = "version",
	[PY_REFUSED_SYMBOLS] = "symbols",
	[PY_REFUSED_OFFSETS] = "offsets",
	[PY_REFUSED_TSD] = "thread_state_key",
	[PY_REFUSED_UNREADABLE] = "unreadable",
	[PY_REFUSED_NOT_READY] = "not_initialized",
	[PY_REFUSED_FULL] = "full",
	[PY_REFUSED_WALKER] = "walker",
};

#define THREADS_MAX 64 /* thread states looked at when checking the key */
#define TSD_SCAN 0x800 /* bytes of a thread descriptor searched for its state */
#define TSD_SCAN_FROM 0x100
#define PY_READ_MAX 72 /* the walker reads 80 bytes: a u64 field must end by 80 */
#define CO_READ_MAX 152 /* the namer reads 160 bytes of a code object */

/* One minor version's layout (x86-64, glibc; checked before use). */
struct py_layout {
	uint32_t minor;
	struct kiln_py_offsets o;
	uint16_t runtime_interpreters, runtime_tss, interp_threads, tstate_next, tstate_thread_id;
	uint16_t co_filename, co_name, co_qualname, co_linetable;
	uint16_t ascii_data, compact_data;
};

#define NONE 0xffff

static const struct py_layout layouts[] = {
	{ .minor = 11,
	  .o = { .tstate_cframe = 56,
		 .cframe_frame = 8,
		 .frame_code = 32,
		 .frame_previous = 48,
		 .frame_instr = 56,
		 .frame_entry = 68,
		 .code_argcount = 56,
		 .code_flags = 48,
		 .code_firstlineno = 72,
		 .code_bytecode = 184,
		 .entry_kind = KILN_PY_ENTRY_FLAG },
	  .runtime_interpreters = 40,
	  .runtime_tss = 592,
	  .interp_threads = 16,
	  .tstate_next = 8,
	  .tstate_thread_id = 152,
	  .co_filename = 112,
	  .co_name = 120,
	  .co_qualname = 128,
	  .co_linetable = 136,
	  .ascii_data = 48,
	  .compact_data = 72 },
	{ .minor = 12,
	  .o = { .tstate_cframe = 56,
		 .cframe_frame = 0,
		 .frame_code = 0,
		 .frame_previous = 8,
		 .frame_instr = 56,
		 .frame_entry = 70,
		 .code_argcount = 52,
		 .code_flags = 48,
		 .code_firstlineno = 68,
		 .code_bytecode = 192,
		 .entry_kind = KILN_PY_ENTRY_SHIM,
		 .entry_value = 3 },
	  .runtime_interpreters = 40,
	  .runtime_tss = 1544,
	  .interp_threads = 72,
	  .tstate_next = 8,
	  .tstate_thread_id = 136,
	  .co_filename = 112,
	  .co_name = 120,
	  .co_qualname = 128,
	  .co_linetable = 136,
	  .ascii_data = 40,
	  .compact_data = 56 },
	{ .minor = 13,
	  .o = { .tstate_cframe = NONE,
		 .cframe_frame = 72,
		 .frame_code = 0,
		 .frame_previous = 8,
		 .frame_instr = 56,
		 .frame_entry = 70,
		 .code_argcount = 52,
		 .code_flags = 48,
		 .code_firstlineno = 68,
		 .code_bytecode = 200,
		 .entry_kind = KILN_PY_ENTRY_SHIM,
		 .entry_value = 3 },
	  .runtime_interpreters = 632,
	  .runtime_tss = 2160,
	  .interp_threads = 7344,
	  .tstate_next = 8,
	  .tstate_thread_id = 152,
	  .co_filename = 112,
	  .co_name = 120,
	  .co_qualname = 128,
	  .co_linetable = 136,
	  .ascii_data = 40,
	  .compact_data = 56 },
};

/* ---- the binary ---- */

enum { SYM_RUNTIME, SYM_EVAL, SYM_CODE_TYPE, SYM_GILSTATE, SYM_VERSION, SYM_COUNT };
static const char *const sym_names[SYM_COUNT] = {
	"_PyRuntime", "_PyEval_EvalFrameDefault", "PyCode_Type", "PyGILState_GetThisThreadState",
	"Py_Version",
};

struct py_binary {
	uint64_t addr[SYM_COUNT], size[SYM_COUNT]; /* runtime addresses, 0: absent */
	uint32_t file_minor; /* from the file name, 0: none */
};

/* The minor version in a name like python3.11, libpython3.12.so.1.0. */
static uint32_t name_minor(const char *base)
{
	const char *v = strstr(base, "python3.");
	unsigned long m;
	char *end;

	if (!v)
		return 0;
	m = strtoul(v + 8, &end, 10);
	return end != v + 8 && m < 100 ? (uint32_t)m : 0;
}

/* ---- checks against the running process ---- */

/* 3.11, 3.12: PyCode_Type's size and member table agree with the layout. */
#define TP_BASICSIZE 32
#define TP_MEMBERS 240
#define MEMBER_SIZE 40
#define MEMBERS_MAX 48

static int check_code_type(pid_t pid, uint64_t type, const struct py_layout *l)
{
	static const struct {
		const char *name;
		size_t off;
	} want[] = {
		{ "co_argcount", offsetof(struct py_layout, o.code_argcount) },
		{ "co_flags", offsetof(struct py_layout, o.code_flags) },
		{ "co_firstlineno", offsetof(struct py_layout, o.code_firstlineno) },
		{ "co_filename", offsetof(struct py_layout, co_filename) },
		{ "co_name", offsetof(struct py_layout, co_name) },
		{ "co_qualname", offsetof(struct py_layout, co_qualname) },
	};
	uint8_t members[MEMBERS_MAX * MEMBER_SIZE];
	uint64_t basic, table;
	unsigned found = 0;
	int err;

	if ((err = interp__read_u64(pid, type + TP_BASICSIZE, &basic)) ||
	    (err = interp__read_u64(pid, type + TP_MEMBERS, &table)))
		return err;
	if (basic != l->o.code_bytecode)
		return -EPROTO;
	if ((err = interp__read(pid, table, members, sizeof(members))))
		return err;
	for (int i = 0; i < MEMBERS_MAX; i++) {
		uint64_t name_addr, off;
		char name[24];

		memcpy(&name_addr, members + i * MEMBER_SIZE, 8);
		memcpy(&off, members + i * MEMBER_SIZE + 16, 8);
		if (!name_addr)
			break;
		if (interp__read(pid, name_addr, name, sizeof(name)))
			continue;
		name[sizeof(name) - 1] = 0;
		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
			uint16_t expect;

			if (strcmp(name, want[k].name) != 0)
				continue;
			memcpy(&expect, (const uint8_t *)l + want[k].off, sizeof(expect));
			if (off != expect)
				return -EPROTO;
			found |= 1u << k;
		}
	}
	return found == (1u << (sizeof(want) / sizeof(want[0]))) - 1 ? 0 : -EPROTO;
}

/* 3.13+: _PyRuntime begins with _Py_DebugOffsets; its values replace the
 * table's where they exist. */
#define DBG_VERSION 8
#define DBG_RUNTIME_INTERPRETERS (24 + 16)
#define DBG_INTERP_THREADS (48 + 24)
#define DBG_TSTATE (152)
#define DBG_FRAME (224)
#define DBG_CODE (272)
#define DBG_END (272 + 80)

static int use_debug_offsets(pid_t pid, uint64_t runtime, uint32_t version, struct py_layout *l)
{
	uint8_t d[DBG_END];
	uint64_t v[DBG_END / 8];
	int err = interp__read(pid, runtime, d, sizeof(d));

	if (err)
		return err;
	memcpy(v, d, sizeof(v));
	if (memcmp(d, "xdebugpy", 8) != 0 || (v[DBG_VERSION / 8] >> 16) != (version >> 16))
		return -EPROTO;
	{
		static const uint16_t used[] = {
			DBG_RUNTIME_INTERPRETERS / 8,
			DBG_INTERP_THREADS / 8,
			DBG_TSTATE / 8 + 2,
			DBG_TSTATE / 8 + 4,
			DBG_TSTATE / 8 + 5,
			DBG_FRAME / 8 + 1,
			DBG_FRAME / 8 + 2,
			DBG_FRAME / 8 + 3,
			DBG_FRAME / 8 + 5,
			DBG_CODE / 8 + 1,
			DBG_CODE / 8 + 2,
			DBG_CODE / 8 + 3,
			DBG_CODE / 8 + 4,
			DBG_CODE / 8 + 5,
			DBG_CODE / 8 + 6,
			DBG_CODE / 8 + 9,
		};

		for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
			if (v[used[i]] > 0xffff)
				return -EPROTO;
	}
	l->runtime_interpreters = (uint16_t)v[DBG_RUNTIME_INTERPRETERS / 8];
	l->interp_threads = (uint16_t)v[DBG_INTERP_THREADS / 8];
	l->tstate_next = (uint16_t)v[DBG_TSTATE / 8 + 2];
	l->o.cframe_frame = (uint16_t)v[DBG_TSTATE / 8 + 4];
	l->tstate_thread_id = (uint16_t)v[DBG_TSTATE / 8 + 5];
	l->o.frame_previous = (uint16_t)v[DBG_FRAME / 8 + 1];
	l->o.frame_code = (uint16_t)v[DBG_FRAME / 8 + 2];
	l->o.frame_instr = (uint16_t)v[DBG_FRAME / 8 + 3];
	l->o.frame_entry = (uint16_t)v[DBG_FRAME / 8 + 5];
	l->co_filename = (uint16_t)v[DBG_CODE / 8 + 1];
	l->co_name = (uint16_t)v[DBG_CODE / 8 + 2];
	l->co_qualname = (uint16_t)v[DBG_CODE / 8 + 3];
	l->co_linetable = (uint16_t)v[DBG_CODE / 8 + 4];
	l->o.code_firstlineno = (uint16_t)v[DBG_CODE / 8 + 5];
	l->o.code_argcount = (uint16_t)v[DBG_CODE / 8 + 6];
	l->o.code_bytecode = (uint16_t)v[DBG_CODE / 8 + 9];
	return 0;
}

/* The offsets BPF reads at must lie in the bytes it reads. */
static bool layout_sane(const struct py_layout *l)
{
	const struct kiln_py_offsets *o = &l->o;

	return o->frame_code <= PY_READ_MAX && o->frame_previous <= PY_READ_MAX &&
	       o->frame_instr <= PY_READ_MAX && o->frame_entry < PY_READ_MAX + 8 &&
	       o->code_argcount <= PY_READ_MAX + 4 && o->code_flags <= PY_READ_MAX + 4 &&
	       o->code_firstlineno <= PY_READ_MAX + 4 && o->code_bytecode >= 64 &&
	       l->co_filename <= CO_READ_MAX && l->co_name <= CO_READ_MAX &&
	       l->co_qualname <= CO_READ_MAX && l->co_linetable <= CO_READ_MAX &&
	       l->ascii_data >= 32 && l->ascii_data <= 128 && l->compact_data >= 32 &&
	       l->compact_data <= 128;
}

/* The address of the thread-state key's Py_tss_t, from the code of
 * PyGILState_GetThisThreadState: "mov key(%rip),%edi" (the key itself, 4
 * bytes in) or "lea tss(%rip),%rdi" / "mov $tss,%edi" (the Py_tss_t), or
 * "mov key,%edi" with an absolute address. 0 when none is found. */
static uint64_t decode_tss(pid_t pid, uint64_t fn)
{
	uint8_t c[48];

	if (!fn || interp__read(pid, fn, c, sizeof(c)))
		return 0;
	for (size_t i = 0; i + 7 <= sizeof(c); i++) {
		int32_t d;

		memcpy(&d, c + i + 2, 4);
		if (c[i] == 0x8b && c[i + 1] == 0x3d) /* mov d(%rip),%edi */
			return fn + i + 6 + (int64_t)d - 4;
		if (c[i] == 0x48 && c[i + 1] == 0x8d && c[i + 2] == 0x3d) { /* lea d(%rip),%rdi */
			memcpy(&d, c + i + 3, 4);
			return fn + i + 7 + (int64_t)d;
		}
		if (c[i] == 0x8b && c[i + 1] == 0x3c && c[i + 2] == 0x25) { /* mov abs,%edi */
			memcpy(&d, c + i + 3, 4);
			return (uint64_t)(uint32_t)d - 4;
		}
		if (c[i] == 0xc3 || c[i] == 0xe9) /* ret, jmp: the end */
			break;
	}
	return 0;
}

/* Finds where the key's value sits in the thread descriptors: for each
 * thread state, its thread's descriptor (thread_id) holding its address.
 * 0 and *tsd_off; -EAGAIN when no thread state to check yet; -ENOENT. */
static int find_tsd(pid_t pid, uint64_t runtime, const struct py_layout *l, int32_t key,
		    uint32_t *tsd_off, uint64_t *first_tstate)
{
	uint64_t interp, ts;
	int matched = 0, checked = 0;

	*tsd_off = 0;
	*first_tstate = 0;
	if (interp__read_u64(pid, runtime + l->runtime_interpreters, &interp) || !interp ||
	    interp__read_u64(pid, interp + l->interp_threads, &ts) || !ts)
		return -EAGAIN;
	*first_tstate = ts;
	for (int i = 0; i < THREADS_MAX && ts; i++) {
		uint64_t tp, buf[TSD_SCAN / 8], next = 0;

		if (interp__read_u64(pid, ts + l->tstate_thread_id, &tp) || !tp ||
		    interp__read(pid, tp + TSD_SCAN_FROM, buf, sizeof(buf)))
			goto next;
		checked++;
		if (*tsd_off) {
			uint64_t at = *tsd_off + 16 * (uint64_t)key;

			if (at >= TSD_SCAN_FROM && at < TSD_SCAN_FROM + TSD_SCAN &&
			    buf[(at - TSD_SCAN_FROM) / 8] == ts)
				matched++;
		} else {
			for (size_t w = 0; w < TSD_SCAN / 8; w++) {
				uint64_t off = TSD_SCAN_FROM + w * 8;

				if (buf[w] == ts && off >= 16 * (uint64_t)key) {
					*tsd_off = (uint32_t)(off - 16 * (uint64_t)key);
					matched++;
					break;
				}
			}
		}
next:
		if (interp__read_u64(pid, ts + l->tstate_next, &next))
			break;
		ts = next;
	}
	if (!checked)
		return -EAGAIN;
	return *tsd_off && matched ? 0 : -ENOENT;
}

/* The code object at the end of the current frame of tstate, when there is
 * one, must be a code object: the frame offsets are right. */
static int check_frame(pid_t pid, uint64_t tstate, uint64_t code_type, const struct py_layout *l)
{
	uint64_t cframe = tstate, frame, code, type;

	if (l->o.tstate_cframe != NONE && interp__read_u64(pid, tstate + l->o.tstate_cframe, &cframe))
		return -EFAULT;
	if (!cframe || interp__read_u64(pid, cframe + l->o.cframe_frame, &frame))
		return -EFAULT;
	for (int i = 0; i < 8 && frame; i++) {
		uint8_t entry;

		if (interp__read_u64(pid, frame + l->o.frame_code, &code) ||
		    interp__read(pid, frame + l->o.frame_entry, &entry, 1))
			return -EFAULT;
		if (!(l->o.entry_kind == KILN_PY_ENTRY_SHIM && entry == l->o.entry_value)) {
			if (interp__read_u64(pid, code + 8, &type))
				return -EFAULT;
			return type == code_type ? 0 : -EPROTO;
		}
		if (interp__read_u64(pid, frame + l->o.frame_previous, &frame))
			return -EFAULT;
	}
	return 0; /* no frame to check (between calls) */
}

static int read_failed(int err)
{
	return interp__read_failed(err, PY_REFUSED_UNREADABLE, PY_REFUSED_OFFSETS);
}

/* Detects and checks pid's interpreter in binary b. 0, -EAGAIN (try again
 * later), or a refusal (> 0, enum python_refusal + 1). */
static int detect(pid_t pid, const struct py_binary *b, struct python_info *out)
{
	struct py_layout l;
	uint32_t version = 0, minor, tsd_off;
	uint64_t tss, tstate;
	int32_t tss_val[2];
	int err;

#ifndef __x86_64__
	return PY_REFUSED_TSD + 1;
#endif
	if (b->addr[SYM_VERSION]) {
		if ((err = interp__read(pid, b->addr[SYM_VERSION], &version, sizeof(version))))
			return read_failed(err);
		minor = version >> 16 & 0xff;
		if (version >> 24 != 3)
			return PY_REFUSED_VERSION + 1;
	} else {
		minor = b->file_minor; /* before 3.11: no table anyway */
		version = 3u << 24 | minor << 16;
	}
	l.minor = 0;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			l = layouts[i];
	if (!l.minor)
		return PY_REFUSED_VERSION + 1;
	if (!b->addr[SYM_RUNTIME] || !b->addr[SYM_EVAL] || !b->size[SYM_EVAL] ||
	    !b->addr[SYM_CODE_TYPE])
		return PY_REFUSED_SYMBOLS + 1;
	if (minor >= 13)
		err = use_debug_offsets(pid, b->addr[SYM_RUNTIME], version, &l);
	else
		err = check_code_type(pid, b->addr[SYM_CODE_TYPE], &l);
	if (err)
		return read_failed(err);
	if (!layout_sane(&l))
		return PY_REFUSED_OFFSETS + 1;

	tss = decode_tss(pid, b->addr[SYM_GILSTATE]);
	if (tss < b->addr[SYM_RUNTIME] || tss + 8 > b->addr[SYM_RUNTIME] + b->size[SYM_RUNTIME])
		tss = b->addr[SYM_RUNTIME] + l.runtime_tss;
	if ((err = interp__read(pid, tss, tss_val, sizeof(tss_val))))
		return read_failed(err);
	if (tss_val[0] != 1)
		return -EAGAIN; /* not initialized yet */
	if (tss_val[1] < 0 || tss_val[1] >= 32)
		return PY_REFUSED_TSD + 1;
	err = find_tsd(pid, b->addr[SYM_RUNTIME], &l, tss_val[1], &tsd_off, &tstate);
	if (err == -EAGAIN)
		return -EAGAIN;
	if (err)
		return PY_REFUSED_TSD + 1;
	if ((err = check_frame(pid, tstate, b->addr[SYM_CODE_TYPE], &l)))
		return read_failed(err);

	memset(out, 0, sizeof(*out));
	out->version = version;
	out->bpf.minor = minor;
	out->bpf.tss_addr = tss;
	out->bpf.tsd_off = tsd_off;
	out->bpf.eval_start = b->addr[SYM_EVAL];
	out->bpf.eval_end = b->addr[SYM_EVAL] + b->size[SYM_EVAL];
	out->bpf.code_type = b->addr[SYM_CODE_TYPE];
	out->bpf.o = l.o;
	out->co_filename = l.co_filename;
	out->co_name = l.co_name;
	out->co_qualname = l.co_qualname;
	out->co_linetable = l.co_linetable;
	out->ascii_data = l.ascii_data;
	out->compact_data = l.compact_data;
	return 0;
}

/* ---- processes ---- */

static const char *const python_prefixes[] = { "python", "libpython", NULL };

static bool python_binary(const struct proc_mapping *o, void *binary)
{
	struct py_binary *b = binary;

	b->file_minor = name_minor(o->name);
	/* (3.6 has no _PyRuntime: refused by its version) */
	return interp__symbols(o, sym_names, SYM_COUNT, b->addr, b->size, NULL) == 0 &&
	       (b->addr[SYM_RUNTIME] || b->addr[SYM_EVAL]);
}

static int python_detect(pid_t pid, const void *binary, void *facts)
{
	return detect(pid, binary, facts);
}

static void python_detected(pid_t pid, const void *facts)
{
	const struct python_info *info = facts;

	pr_debug("python: pid %d: CPython %u.%u.%u, eval loop 0x%" PRIx64 "-0x%" PRIx64
		 ", key at 0x%" PRIx64 ", TSD +0x%x",
		 pid, info->version >> 24, info->version >> 16 & 0xff, info->version >> 8 & 0xff,
		 (uint64_t)info->bpf.eval_start, (uint64_t)info->bpf.eval_end,
		 (uint64_t)info->bpf.tss_addr, info->bpf.tsd_off);
}

static const struct interp_kind python_kind = {
	.name = "python",
	.refusal_names = python_refusal_names,
	.nrefusals = PY_REFUSAL_COUNT,
	.full = PY_REFUSED_FULL,
	.walker = PY_REFUSED_WALKER,
	.prog = KILN_PROG_PY,
	.not_ready = PY_REFUSED_NOT_READY,
	.first_runtime = PY_REFUSED_OFFSETS,
	.facts_size = sizeof(struct python_info),
	.bpf_size = sizeof(struct kiln_py_proc),
	.prefixes = python_prefixes,
	.binary_size = sizeof(struct py_binary),
	.binary = python_binary,
	.detect = python_detect,
	.detected = python_detected,
};

struct interp_procs *pythons__new(struct sampler *s, int py_procs_fd, uint32_t max)
{
	return interp_procs__new(&python_kind, s, py_procs_fd, max);
}
