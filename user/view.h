/* SPDX-License-Identifier: BSD-2-Clause */
/* `kiln view` (render or convert profiles) and `kiln diff` (compare two). */
#ifndef KILN_VIEW_H
#define KILN_VIEW_H

#include "core/config.h"

/* argv[0] is "view". Returns the process exit status. */
int view_main(int argc, char **argv);
/* argv[0] is "diff". Returns the process exit status. */
int diff_main(int argc, char **argv);
/* Their options and --help (kiln help-markdown documents them). */
extern const struct config_command view_command, diff_command;

#endif
