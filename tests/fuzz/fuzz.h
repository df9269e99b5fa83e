/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the fuzz targets (tests/fuzz/<target>.c). Each target defines
 * LLVMFuzzerTestOneInput: libFuzzer calls it in `make fuzz` (clang), and
 * tests/fuzz/replay.c calls it on every corpus file in `make test` (gcc).
 * A target checks the parser's documented contract on every input and
 * aborts when it does not hold, so a wrong answer is a finding like a
 * crash. Every target frees all it allocated: leak checks are on. */
#ifndef KILN_TESTS_FUZZ_H
#define KILN_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"

/* In sanitized builds this prints "SUMMARY: ..." where the sanitizers
 * report (libFuzzer's -close_fd_mask=2 keeps that open); NULL otherwise. */
void __sanitizer_report_error_summary(const char *summary) __attribute__((weak));

static inline void fuzz_check_failed(const char *file, int line, const char *what)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "%s:%d: check failed: %s", file, line, what);
	if (__sanitizer_report_error_summary)
		__sanitizer_report_error_summary(msg);
	else
		fprintf(stderr, "%s\n", msg);
	abort();
}

#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			fuzz_check_failed(__FILE__, __LINE__, #cond);          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* LLVMFuzzerInitialize of a target with no other set-up: every message
 * is formatted (the log lines about bad input are part of what is
 * fuzzed); make fuzz closes the target's stderr (-close_fd_mask=2) and the
 * replay sends it to a file. */
#define FUZZ_DEFAULT_INIT                                                      \
	int LLVMFuzzerInitialize(int *argc, char ***argv)                      \
	{                                                                      \
		(void)argc;                                                    \
		(void)argv;                                                    \
		log_level = LOG_DEBUG;                                         \
		return 0;                                                      \
	}

#endif
