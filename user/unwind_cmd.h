/* SPDX-License-Identifier: BSD-2-Clause */
/* `kiln unwind-table FILE [PC]` (not listed in --help; a debugging aid
 * and what the unit tests compare with readelf): the unwind table kiln
 * builds for one ELF file (user/unwind/unwind_table.h). */
#ifndef KILN_UNWIND_CMD_H
#define KILN_UNWIND_CMD_H

/* argv[0] is "unwind-table". Exit status: 0, 1 (no table), 2 (usage). */
int unwind_table_main(int argc, char **argv);

#endif
