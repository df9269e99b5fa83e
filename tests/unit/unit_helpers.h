/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the unit test files. */
#ifndef KILN_TESTS_UNIT_HELPERS_H
#define KILN_TESTS_UNIT_HELPERS_H

#include <stdbool.h>
#include <stdint.h>

#include "metadata/metadata.h"
#include "profile/profile.h"

/* Folded output of p as a malloc'd string; asserts it was written. */
char *folded_text(const struct profile *p);
/* Default read limits for tests: 64 MiB, a million nodes. */
extern const struct read_limits test_limits;
/* Reads text (folded stacks) into p; asserts it was read. */
void read_text(struct profile *p, const char *text);
/* A new profile of text (folded stacks). */
struct profile *profile_of(const char *text);
/* A user frame of /usr/bin/app (build id deadbeef, mapped at 0x400000 ..
 * 0x500000 from offset 0x1000), and a kernel frame ([kernel.kallsyms]
 * mapped from UNIT_KSTART, 16 MiB). */
#define UNIT_KSTART 0xffffffff81000000ULL
struct frame app_frame(const char *name, uint64_t addr);
struct frame kernel_frame(const char *name, uint64_t addr);
/* app;main;work x3, app;main;work;do_syscall_64 (kernel, at UNIT_KSTART +
 * 0x100) x2, app;main x1: main at 0x401000, work at 0x401100. */
struct profile *cpu_profile_sample(void);
/* Sets *l to the canonical label set of the NULL-terminated name, value,
 * name, value, ... arguments (sorted by name, as the metadata stage makes
 * them). Release with labels__release. */
void labels_of_pairs(struct labels *l, ...);
/* The same from an array of n name, value pairs (pairs[2i], pairs[2i+1]). */
void labels_of_array(struct labels *l, const char *const *pairs, size_t n);
/* A fresh directory under /tmp (mkdtemp of "/tmp/kiln-<what>-XXXXXX"),
 * written into path (at least 64 bytes). */
void temp_dir(char *path, size_t size, const char *what);
/* Writes text to root/sub/name, creating root/sub. */
void write_under(const char *root, const char *sub, const char *name, const char *text);
/* Removes dir and its files, with one level of subdirectories. */
void remove_dir(const char *dir);

/* Waiting for a condition. Nothing in the unit tests asserts on elapsed
 * time: a test polls for the state it needs and gives up only after
 * UNIT_WAIT_S, a hang guard far beyond any loaded host's delay. */
#define UNIT_WAIT_S 30
#define UNIT_STR_(x) #x
#define UNIT_STR(x) UNIT_STR_(x)
/* The deadline of a wait starting now (CLOCK_MONOTONIC, ns). */
uint64_t unit_deadline(void);
/* Pauses a moment (10 ms) before the condition is polled again; false
 * once the deadline has passed. */
bool unit_poll_pause(uint64_t deadline);

/* Polls cond until it holds, or fails the test with the printf-style
 * message, which names what never happened ("no watch after the list"). */
#define POLL_UNTIL(cond, ...)                                                   \
	do {                                                                    \
		uint64_t poll_end_ = unit_deadline();                           \
		while (!(cond))                                                 \
			if (!unit_poll_pause(poll_end_))                        \
				cr_assert_fail("polled " UNIT_STR(UNIT_WAIT_S) \
					       " s in vain: " __VA_ARGS__);     \
	} while (0)

#endif
