/* SPDX-License-Identifier: BSD-2-Clause */
/* `kiln record`: a one-shot profile of the host, some pids, or a command. */
#ifndef KILN_RECORD_H
#define KILN_RECORD_H

/* argv[0] is "record". Returns the process exit status. */
int record_main(int argc, char **argv);

#endif
