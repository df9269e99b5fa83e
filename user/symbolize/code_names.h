/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of interpreter frames (Python code objects, Ruby instruction
 * sequences): a language's reader reads an object's name, file and line
 * table from its process (process_vm_readv); this cache keeps them per
 * process instance and object address within a byte bound. An entry is
 * used only while the object still matches what BPF saw at the sample
 * (its check, kiln/interp.h), so a freed and reused address never names a
 * frame wrongly: it is read again, or the frame stays unnamed, counted. */
#ifndef KILN_SYMBOLIZE_CODE_NAMES_H
#define KILN_SYMBOLIZE_CODE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of names and line tables cached, all processes of one language;
 * when full the cache starts over (counted). */
#define CODE_NAMES_BYTES (32u << 20)
#define CODE_NAME_MAX 1024 /* characters of a name or file kept */
#define CODE_LINES_MAX (64u << 10) /* a bigger line table is not read: line 0 */

/* Why an interpreter frame got no name. Label values: code_names_failure_names. */
enum code_names_failure {
	CODE_NAMES_GONE = 0, /* no facts for the process (it ended, or never had any) */
	CODE_NAMES_UNREADABLE, /* its memory could not be read (it exited) */
	CODE_NAMES_NOT_CODE, /* the address holds no code object now */
	CODE_NAMES_REUSED, /* the code object there is not the one sampled */
	CODE_NAMES_BAD_STRING, /* a name that is no readable string */
	CODE_NAMES_FAILURE_COUNT
};
extern const char *const code_names_failure_names[CODE_NAMES_FAILURE_COUNT];

struct code_names_stats {
	uint64_t frames, named; /* frames symbolized, and named */
	uint64_t reads; /* code objects read */
	uint64_t failures[CODE_NAMES_FAILURE_COUNT];
	uint64_t bytes, entries; /* cached now */
	uint64_t flushes; /* times the cache was full and started over */
	uint64_t no_lines; /* code objects whose line table was over CODE_LINES_MAX */
};

/* One code object's names, in one allocation (code_names__entry). */
struct code_entry {
	uint32_t instance, check;
	uint64_t addr, aux;
	int32_t firstlineno;
	uint32_t lines_len; /* bytes of the line table at data */
	const char *name, *file;
	size_t bytes;
	uint8_t data[]; /* line table, name, file */
};

/* What a reader fills, before code_names__entry copies it. */
struct code_scratch {
	char name[CODE_NAME_MAX * 4 + 1], file[CODE_NAME_MAX * 4 + 1];
	uint8_t lines[CODE_LINES_MAX];
};

struct code_frame_name {
	const char *name, *file; /* valid until the cache changes */
	uint32_t line;
};

/* A language: read the object at addr of pid (facts: the language's
 * process facts; aux: the frame's third slot, kiln/interp.h, 0 without)
 * into sc and make its entry (code_names__entry), counting st->no_lines;
 * NULL and the failure in *why. line: the line of an instruction index, 0
 * when unknown. */
struct code_lang {
	struct code_entry *(*read)(const void *facts, pid_t pid, uint64_t addr, uint64_t aux,
				   struct code_scratch *sc, struct code_names_stats *st,
				   enum code_names_failure *why);
	uint32_t (*line)(const struct code_entry *e, uint32_t index);
};

struct code_names;

struct code_names *code_names__new(const struct code_lang *lang, size_t max_bytes);
/* Names the frame (object addr, its aux slot, BPF's check, instruction
 * index) of the process instance (pid) described by facts (NULL: none).
 * An entry is per (instance, addr, aux); when one with aux cannot be read
 * (the process is gone), the object's entry without aux serves. 0, or -1
 * with the reason counted. */
int code_names__frame(struct code_names *n, const void *facts, pid_t pid, uint32_t instance,
		      uint64_t addr, uint64_t aux, uint32_t check, uint32_t index,
		      struct code_frame_name *out);
/* Reads and caches object addr (with its aux slot, 0 without) of a live
 * process now, unless cached: its name survives the process's exit. True
 * when it was not cached (read now, or tried). */
bool code_names__prefetch(struct code_names *n, const void *facts, pid_t pid, uint32_t instance,
			  uint64_t addr, uint64_t aux);
void code_names__stats(const struct code_names *n, struct code_names_stats *out);
void code_names__free(struct code_names *n);

/* A new entry holding sc's name and file and lines_len bytes of its line
 * table (instance and addr set by the cache). NULL: out of memory. */
struct code_entry *code_names__entry(const struct code_scratch *sc, uint32_t lines_len,
				     uint32_t check, int32_t firstlineno);

/* Appends code point cp to out as UTF-8 (a surrogate or beyond U+10FFFF:
 * U+FFFD or '?'), if it fits with a NUL after it. */
void code_names__put_utf8(uint32_t cp, char *out, size_t *o, size_t cap);

#endif
