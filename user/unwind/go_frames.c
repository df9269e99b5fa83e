// SPDX-License-Identifier: BSD-2-Clause
#include <string.h>

#include "unwind/go_frames.h"

/* A frame's stack-pointer delta beyond this is not believed. */
#define SP_DELTA_MAX (1 << 24)

/* Packages whose Go functions call assembly that may use rbp as a
 * scratch register (vendor/ copies included). */
static const char *const clobbered_callers[] = {
	"crypto/sha1.", "crypto/sha256.", "crypto/sha512.", "crypto/elliptic.",
	"internal/cpu.", "internal/chacha8rand.", "golang.org/x/crypto/curve25519.",
	"golang.org/x/crypto/chacha20poly1305.",
	/* Go 1.24 on: the FIPS module's copies */
	"crypto/internal/fips140/sha256.", "crypto/internal/fips140/sha512.",
	"crypto/internal/fips140/nistec.",
};

static const char *const stop_names[] = {
	"runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mcall",
};

static const char *const signal_names[] = {
	"runtime.sigreturn", "runtime.sigreturn__sigaction",
};

static const char *const switch_names[] = {
	"runtime.systemstack",
};

static const char *const handler_names[] = {
	"runtime.sigtramp", "runtime.cgoSigtramp",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define SPANS_MAX 256   /* pcsp ranges of one function followed */

/* name equals one of names, ignoring an ABI suffix (".abi0") */
static bool named(const char *name, const char *const names[], size_t n)
{
	size_t len = strlen(name);

	if (len > 5 && strcmp(name + len - 5, ".abi0") == 0)
		len -= 5;
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && strncmp(name, names[i], len) == 0)
			return true;
	return false;
}

static bool in_package(const char *name, const char *const pkgs[], size_t n)
{
	const char *vendor = strncmp(name, "vendor/", 7) == 0 ? name + 7 : name;

	for (size_t i = 0; i < n; i++)
		if (strncmp(vendor, pkgs[i], strlen(pkgs[i])) == 0)
			return true;
	return false;
}

static bool is_asm(const struct gopclntab *t, const struct go_func *f)
{
	const char *file;
	size_t len;
	int32_t v;

	if (f->flag & GO_FUNC_ASM)
		return true;
	/* before Go 1.19 no flag says so: the source file does */
	if (t->version >= GOPCLNTAB_1_20 || !gopclntab__value_at(t, f, f->pcfile, f->entry, &v))
		return false;
	file = gopclntab__file(t, f, v);
	len = file ? strlen(file) : 0;
	return len > 2 && strcmp(file + len - 2, ".s") == 0;
}

/* Where the prologue has saved rbp at CFA - 16, given the first range with
 * a frame (starting at pc, delta v): from pc for push rbp (just before pc,
 * v 8), from after the store for mov rbp, v-8(rsp) (at pc); 0 when the
 * code shows neither. */
static uint64_t fp_saved_from(const struct go_frames_io *io, uint64_t pc, int32_t v)
{
	uint8_t c[8];
	uint32_t disp;

	if (v == 8 && io->read_code(io->ctx, pc - 1, c, 1) && c[0] == 0x55)
		return pc;
	if (!io->read_code(io->ctx, pc, c, sizeof(c)) || c[0] != 0x48 || c[1] != 0x89 ||
	    c[3] != 0x24)
		return 0;
	if (c[2] == 0x6c)       /* mov %rbp, disp8(%rsp) */
		return c[4] == (uint32_t)v - 8 && v - 8 < 0x80 ? pc + 5 : 0;
	if (c[2] != 0xac)       /* mov %rbp, disp32(%rsp) */
		return 0;
	disp = (uint32_t)c[4] | (uint32_t)c[5] << 8 | (uint32_t)c[6] << 16 | (uint32_t)c[7] << 24;
	return disp == (uint32_t)v - 8 ? pc + 8 : 0;
}

/* pcsp spans of f; a table that does not read, or a delta out of range,
 * makes the whole function one frame-pointer span. */
static int sp_spans(const struct gopclntab *t, const struct go_func *f,
		    const struct go_frames_io *io)
{
	struct go_span spans[SPANS_MAX], whole = { .start = f->entry, .end = f->end,
						    .kind = GO_SPAN_FP };
	struct go_pcvalue it;
	uint64_t s, e, saved = 0;
	int32_t v;
	size_t n = 0;
	int r, err;

	if (!gopclntab__pcvalue(t, f, f->pcsp, &it))
		return io->emit(io->ctx, &whole);
	while ((r = gopclntab__pcvalue_next(&it, &s, &e, &v)) == 1) {
		if (v < 0 || v > SP_DELTA_MAX || n == SPANS_MAX)
			return io->emit(io->ctx, &whole);
		if (e > s)
			spans[n++] = (struct go_span){ .start = s, .end = e, .kind = GO_SPAN_SP,
						       .cfa_off = v + 8 };
	}
	if (r < 0 || n == 0)
		return io->emit(io->ctx, &whole);
	/* padding after the code: never executed, the last rule goes on */
	spans[n - 1].end = f->end;
	for (size_t i = 0; i < n; i++) {
		struct go_span *sp = &spans[i];

		if (!saved && sp->cfa_off > 8) {
			saved = fp_saved_from(io, sp->start, sp->cfa_off - 8);
			if (!saved)
				saved = UINT64_MAX;     /* no prologue: never */
		}
		if (saved > sp->start && saved < sp->end && sp->cfa_off > 8) {
			/* the store itself: rbp not saved yet */
			struct go_span window = *sp;

			window.end = saved;
			if ((err = io->emit(io->ctx, &window)))
				return err;
			sp->start = saved;
		}
		sp->fp_at_cfa_m16 = saved <= sp->start && sp->cfa_off > 8;
		if ((err = io->emit(io->ctx, sp)))
			return err;
	}
	return 0;
}

int go_frames__spans(const struct gopclntab *t, const struct go_func *f,
		     const struct go_frames_io *io)
{
	struct go_span one = { .start = f->entry, .end = f->end, .kind = GO_SPAN_FP };

	if (named(f->name, handler_names, COUNT(handler_names)))
		return sp_spans(t, f, io);
	if ((f->flag & GO_FUNC_TOPFRAME) || named(f->name, stop_names, COUNT(stop_names))) {
		one.kind = GO_SPAN_STOP;
		return io->emit(io->ctx, &one);
	}
	if (named(f->name, signal_names, COUNT(signal_names))) {
		one.kind = GO_SPAN_SIGNAL;
		return io->emit(io->ctx, &one);
	}
	if (named(f->name, switch_names, COUNT(switch_names))) {
		one.kind = GO_SPAN_FP_SWITCH;
		return io->emit(io->ctx, &one);
	}
	/* other stack switches (morestack, gogo): pcsp is of no use */
	if (f->flag & GO_FUNC_SPWRITE)
		return io->emit(io->ctx, &one);
	if (is_asm(t, f) || in_package(f->name, clobbered_callers, COUNT(clobbered_callers)))
		return sp_spans(t, f, io);
	return io->emit(io->ctx, &one);
}
