/* SPDX-License-Identifier: BSD-2-Clause */
/* `kiln agent`: continuous profiling. Runs until SIGTERM or SIGINT; every
 * interval it drains the sampler, builds one pprof per label set and hands
 * them to the exporters (Pyroscope push or /ingest, files). */
#ifndef KILN_AGENT_H
#define KILN_AGENT_H

#include "core/config.h"

int agent_main(int argc, char **argv);
/* Its options and --help (kiln help-markdown documents them). */
extern const struct config_command agent_command;

#endif
