/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of JIT code: for a frame in an anonymous (or memfd) executable
 * mapping, the symbols of the process's perf map (/tmp/perf-<pid>.map,
 * <pid> as the process's own pid namespace numbers it, read inside the
 * process's root) and of the jitdump it maps (jit-<pid>.dump). Each file
 * goes through the safe opener and must belong to one of the process's
 * user ids. Tables are per process instance. The files are opened when
 * the process's mappings show JIT code, and kept open (read again after
 * it exits: a JIT that buffers has written all then); they are read
 * again when a frame in JIT code finds no name and the file changed
 * (size, mtime, inode), at most once a second per process and never more
 * than 1 % of the loop's time (a read that took 10 ms waits 1 s),
 * bounded in bytes together with
 * least-recently-used eviction (a file's table takes at most a quarter of
 * the bound). A process that writes its perf map as it exits has its
 * /tmp kept open (O_PATH) while it runs, to read the map in after.
 * Everything refused is counted (jit_table.h) and logged once
 * per file. Runs on the caller's thread, off the sampling path. */
#ifndef KILN_SYMBOLIZE_JIT_H
#define KILN_SYMBOLIZE_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/proc.h"
#include "symbolize/jit_table.h"

enum jit_source { JIT_PERF_MAP = 0, JIT_DUMP, JIT_SOURCE_COUNT };

struct jit_stats {
	uint64_t reads[JIT_SOURCE_COUNT]; /* files parsed, by kind */
	uint64_t refused[JIT_REFUSAL_COUNT];
	uint64_t evictions; /* tables dropped to stay within max_bytes */
	uint64_t bytes, max_bytes, symbols; /* tables held now */
	uint64_t processes; /* processes with JIT code, tracked */
};

struct jit_cache;

/* proc_root: "/proc" normally (tests may point elsewhere); max_bytes
 * bounds the tables of every process together (0 is allowed: nothing is
 * read). NULL + errno. */
struct jit_cache *jit_cache__new(const char *proc_root, size_t max_bytes);
/* Whether m is where JIT code lives: an anonymous mapping (named or not)
 * or a memfd, no file with symbols of its own. */
bool jit__code_mapping(const struct proc_mapping *m);
/* The name of addr, in a JIT code mapping of snap, or NULL. now:
 * monotonic ns, never going back; it paces the re-reads. A snapshot that
 * ended keeps the tables read while it ran. The name stays valid until the
 * next call. */
const char *jit_cache__name(struct jit_cache *c, const struct proc_snapshot *snap, uint64_t addr,
			    uint64_t now);
/* Whether a command line (/proc/PID/cmdline: NUL-terminated arguments,
 * len bytes) asks a JVM to write its perf map as it exits: the last of
 * -XX:+DumpPerfMapAtExit and -XX:-DumpPerfMapAtExit is the former. An
 * argument cut at len is not looked at. JAVA_TOOL_OPTIONS and other
 * environment variables are not read (they may hold secrets). */
bool jit__asks_exit_map(const char *cmdline, size_t len);
/* Whether snap's process lives and writes its perf map as it exits (a
 * JVM run with -XX:+DumpPerfMapAtExit): its JIT frames without a name
 * now get one then, from the /tmp it had while it ran. Known once
 * jit_cache__name or jit_cache__mapped met it. */
bool jit_cache__names_at_exit(struct jit_cache *c, const struct proc_snapshot *snap);
/* Told of a live snapshot's (re)read mappings: a process with JIT code
 * mappings has its files opened (and read) now, when due, so that they
 * are still there after it exits, however short it lived. */
void jit_cache__mapped(struct jit_cache *c, const struct proc_snapshot *snap, uint64_t now);
/* Forgets the processes procs no longer holds (once a drain). */
void jit_cache__age(struct jit_cache *c, struct proc_table *procs);
void jit_cache__stats(const struct jit_cache *c, struct jit_stats *out);
void jit_cache__free(struct jit_cache *c);

#endif
