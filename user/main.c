// SPDX-License-Identifier: BSD-2-Clause
/* kiln command line: dispatches to the commands. */
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "record.h"
#include "view.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: kiln COMMAND [OPTIONS]\n"
		"\n"
		"A system-wide CPU profiler for Linux (eBPF, cpu-clock sampling).\n"
		"\n"
		"Commands:\n"
		"  agent      profile continuously; push to Pyroscope every interval, or write files\n"
		"  record     profile the host, some pids, or a command; write pprof, folded or HTML\n"
		"  view       render pprof or folded profiles as an HTML flame graph, or convert them\n"
		"  diff       compare two profiles: diff flame graph, text, CI regression check\n"
		"  version    print the version\n"
		"\n"
		"Options:\n"
		"  -h, --help     this help; 'kiln COMMAND --help' for a command's options\n"
		"  -V, --version  print the version\n"
		"\n"
		"Examples: sudo kiln record -d 10 -o cpu.pb.gz && kiln view cpu.pb.gz -o cpu.html\n"
		"          sudo kiln agent --server http://pyroscope:4040\n");
}

static void version(void)
{
	printf("kiln %s (%s)\n", KILN_VERSION, KILN_GIT_REV);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return 2;
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0 ||
	    strcmp(cmd, "version") == 0) {
		version();
		return 0;
	}
	if (strcmp(cmd, "agent") == 0)
		return agent_main(argc - 1, argv + 1);
	if (strcmp(cmd, "record") == 0)
		return record_main(argc - 1, argv + 1);
	if (strcmp(cmd, "view") == 0)
		return view_main(argc - 1, argv + 1);
	if (strcmp(cmd, "diff") == 0)
		return diff_main(argc - 1, argv + 1);
	fprintf(stderr, "kiln: unknown command '%s' (try 'kiln --help')\n", cmd);
	return 2;
}
