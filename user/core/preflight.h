/* SPDX-License-Identifier: BSD-2-Clause */
/* Start-up checks: each problem that would stop the sampler is reported as
 * one sentence saying what is wrong and what to do. */
#ifndef KILN_CORE_PREFLIGHT_H
#define KILN_CORE_PREFLIGHT_H

/* 0 when kiln can run, else -1 after logging why (exit status 2). */
int preflight__check(void);

#endif
