/* SPDX-License-Identifier: BSD-2-Clause */
/* The one retry backoff of kiln: exponential with jitter.
 *
 * The nominal step of the n-th consecutive failure is min doubled n - 1
 * times, at most max; the wait is a uniform point of the step's upper half
 * [step / 2, step], so agents restarted together spread out while a retry
 * never comes sooner than half the step. */
#ifndef KILN_CORE_BACKOFF_H
#define KILN_CORE_BACKOFF_H

#include <stdint.h>

/* The wait in seconds before retrying after `failures` consecutive
 * failures (0 counts as 1), r a uniform 32-bit draw (backoff__random). */
double backoff__delay(unsigned failures, double min, double max, uint32_t r);
/* A draw for backoff__delay: getrandom, or the clock when that fails. */
uint32_t backoff__random(void);

#endif
