/* SPDX-License-Identifier: BSD-2-Clause */
/* Turns one drained sample (process snapshot + kernel and user stacks) into
 * frames, root first: process name, user frames outermost first, then
 * kernel frames. Kernel symbols from kallsyms, user symbols from the ELF
 * files the snapshot maps, through the shared symbol cache. */
#ifndef KILN_SYMBOLIZE_SYMBOLIZER_H
#define KILN_SYMBOLIZE_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/sample.h"
#include "core/frame.h"
#include "proc/proc.h"
#include "symbolize/kallsyms.h"
#include "symbolize/debuginfod.h"
#include "symbolize/jit.h"
#include "symbolize/py_names.h"
#include "symbolize/rb_names.h"
#include "symbolize/symcache.h"
#include "unwind/python.h"

/* Source frames inlined into the machine frames of one stack at most
 * (Go's); past them a frame is shown as its function alone, counted. */
#define SYMBOLIZER_MAX_INLINED 128
/* Frames of one stack: root + both stacks + inlined calls. */
#define SYMBOLIZER_MAX_FRAMES (2 + 2 * KILN_MAX_STACK_DEPTH + SYMBOLIZER_MAX_INLINED)
/* Bytes of a symbol table's key in the cache directory: the file's
 * identity and build id, and its debug file's identity. */
#define SYMBOLIZER_DISK_KEY_MAX 512

struct symbolizer_stats {
	/* Frames weighted by their sample counts. */
	uint64_t kernel_frames, kernel_resolved;
	uint64_t user_frames, user_resolved;
	/* Samples whose user stack was cut at a return address outside every
	 * mapping (the callers beyond it shown as one [unknown] frame). */
	uint64_t user_stacks_cut;
	uint64_t symtab_loads, symtab_failures;
	/* Of symtab_loads, those read from the cache directory; tables
	 * written there. */
	uint64_t symtab_disk_hits, symtab_disk_writes;
	/* Tables loaded again because their debug file arrived from a
	 * debuginfod server; debug files fetched but refused by the readers. */
	uint64_t debuginfod_reloads, debuginfod_unusable;
	/* User frames in JIT code (anonymous or memfd executable mappings),
	 * and those named from a perf map or jitdump (in user_resolved too). */
	uint64_t jit_frames, jit_resolved;
	/* Frames with a source file and line (Go's function table), the
	 * calls shown inlined into them, and those left out past
	 * SYMBOLIZER_MAX_INLINED. */
	uint64_t source_frames, inlined_frames, inlined_dropped;
	/* Kernel symbol tables taken from the cache directory, read from
	 * /proc/kallsyms, and cache files refused (not kiln's, corrupt); the
	 * BPF programs' names listed for what a cached table lacks, and the
	 * programs left out of those lists (over BPF_KSYMS_PROGS_MAX). */
	uint64_t kallsyms_cached, kallsyms_read, kallsyms_cache_refused;
	uint64_t kallsyms_bpf, bpf_programs_skipped;
	/* User frames found named already this drain (frame_memo.h), named
	 * and looked up first, and named ones it had no room for. */
	uint64_t frame_memo_hits, frame_memo_misses, frame_memo_full;
};

struct symbolizer;

/* cache_bytes bounds the ELF symbol cache; a table no stack needed for
 * cache_ttl_ns leaves it at the next symbolizer__expire (0: only the byte
 * bound evicts). jit_bytes bounds the JIT symbols of perf maps and
 * jitdump files (jit.h; 0: none read). Kernel frames stay unnamed until
 * symbolizer__load_kernel_symbols. NULL + errno. */
struct symbolizer *symbolizer__new(size_t cache_bytes, uint64_t cache_ttl_ns, size_t jit_bytes,
				   struct proc_table *procs);
/* Looks up, on the debuginfod servers of DEBUGINFOD_URLS and in the
 * background (symbolize/debuginfod.h), the debug files of the binaries
 * whose local sources (.symtab, the build-id and debuglink files,
 * MiniDebugInfo) hold no debug symbols. Nothing happens when
 * DEBUGINFOD_URLS is unset or opts->lookups is 0, or (logged) when the
 * lookups cannot be started. */
void symbolizer__use_debuginfod(struct symbolizer *sym, const struct debuginfod_opts *opts);
/* Loads the kernel's symbols: from cache_dir's table for this boot and
 * these modules (NULL: none), else by reading paths->kallsyms (tens of ms,
 * most of it the kernel formatting the file; the table is then written to
 * cache_dir), so that a caller can start sampling first. A failure is
 * logged: kernel frames then stay unnamed. paths must outlive sym. */
void symbolizer__load_kernel_symbols(struct symbolizer *sym, const struct kallsyms_paths *paths,
				     const char *cache_dir);
/* Fills frames[] (SYMBOLIZER_MAX_FRAMES entries) for a stack seen count
 * times and returns how many. Strings point into the symbolizer and stay
 * valid until the next call. snap may be NULL (process unknown). uflags:
 * the user stack's KILN_STACK_* (a truncated one gets a "[truncated]"
 * frame where its missing callers would be). */
size_t symbolizer__stack(struct symbolizer *sym, const char *comm,
			 struct proc_snapshot *snap, const uint64_t *kips, uint32_t kn,
			 const uint64_t *uips, uint32_t un, uint32_t uflags, uint64_t count,
			 struct frame *frames);
/* Call once a drain, before its stacks: the tables they use are marked
 * used at now (monotonic ns), and the cached tables idle longer than
 * cache_ttl_ns are freed (cheap when none is). True when tables were freed
 * now or loaded since the last call: both leave freed pages in the heap
 * (loading frees the ELF file's raw symbols once sorted), worth handing
 * back to the system. */
bool symbolizer__age(struct symbolizer *sym, uint64_t now);
/* What the last symbolizer__stack's frames wait for, their names may
 * change once it arrived: a debug file being looked up, the perf map a
 * live process writes as it exits (a bit each, 0: nothing). */
enum { SYMBOLIZER_WAIT_DEBUG_FILE = 1, SYMBOLIZER_WAIT_JIT = 2 };
unsigned symbolizer__waiting(const struct symbolizer *sym);
/* Takes the last stack's frames out of the frame counters: its caller
 * holds it, to name it again later. */
void symbolizer__uncount(struct symbolizer *sym);
/* Lookups that ended (any way) as of the last symbolizer__age: when it
 * changes, frames that waited may be named now. */
uint64_t symbolizer__lookups_ended(const struct symbolizer *sym);
/* Waits at most timeout_ns for the lookups queued or under way; returns
 * how many still are (0 without debuginfod). Their files are used from the
 * next symbolizer__age on. */
size_t symbolizer__wait_lookups(struct symbolizer *sym, uint64_t timeout_ns);
void symbolizer__debuginfod_stats(const struct symbolizer *sym, struct debuginfod_stats *out);
/* For the process table's observer: snap's mappings were (re)read; a
 * process with JIT code has its perf map and jitdump opened now, while it
 * runs (jit.h). */
void symbolizer__mapped(struct symbolizer *sym, const struct proc_snapshot *snap);
void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out);
void symbolizer__cache_stats(const struct symbolizer *sym, struct symcache_stats *out);
void symbolizer__jit_stats(const struct symbolizer *sym, struct jit_stats *out);
/* Interpreter frames (the (code, where) slot pairs of include/kiln/interp.h)
 * of language lang are named from the code objects of the processes
 * procs knows; without it (or for a process it does not know) they stay
 * unnamed, counted. */
void symbolizer__use_interp(struct symbolizer *sym, enum kiln_interp_lang lang,
			   struct interp_procs *procs);
/* Keeps the symbol tables of ELF files in the unwind table cache's
 * directory (unwind/table_cache.h), under its bound: a later run reads a
 * file's table there instead of its ELF sections. tables may be NULL. */
struct table_cache;
void symbolizer__use_table_cache(struct symbolizer *sym, struct table_cache *tables);
/* A stack of instance's first sample this drain: reads the names of its
 * interpreter frames not read yet (a Ruby frame's method entry is known
 * only from its stack) while the process lives. True when it read one
 * (or tried): more may follow soon. */
bool symbolizer__interp_stack(struct symbolizer *sym, uint32_t instance, const uint64_t *uips,
			      uint32_t un);
void symbolizer__interp_stats(const struct symbolizer *sym, enum kiln_interp_lang lang,
			      struct code_names_stats *out);
void symbolizer__free(struct symbolizer *sym);

#endif
