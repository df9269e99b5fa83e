// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/log.h"
#include "core/preflight.h"

#define CAP_SYS_PTRACE 19
#define CAP_SYS_ADMIN 21
#define CAP_PERFMON 38
#define CAP_BPF 39

/* Effective capabilities from /proc/self/status (no libcap needed). */
static unsigned long long effective_caps(void)
{
	unsigned long long caps = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

static bool has_cap(unsigned long long caps, int cap)
{
	return caps & (1ull << cap);
}

static int read_int_file(const char *path, int *out)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%d", out) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

/* Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK. */
static bool kernel_charges_memlock(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return true;
	return major < 5 || (major == 5 && minor < 11);
}

int preflight__check(void)
{
	unsigned long long caps = effective_caps();
	bool bpf_ok = has_cap(caps, CAP_SYS_ADMIN) || has_cap(caps, CAP_BPF);
	bool perf_ok = has_cap(caps, CAP_SYS_ADMIN) || has_cap(caps, CAP_PERFMON);
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	int paranoid = 2;

	if (!bpf_ok || !perf_ok) {
		pr_error("kiln needs root (or at least CAP_BPF and CAP_PERFMON): run it with sudo");
		return -1;
	}
	/* Kernel BTF and the BPF features are probed by the sampler before it
	 * loads anything (sampler__probe), where --btf is known. */
	if (read_int_file("/proc/sys/kernel/perf_event_paranoid", &paranoid) == 0 &&
	    paranoid > 2 && !has_cap(caps, CAP_PERFMON) && !has_cap(caps, CAP_SYS_ADMIN)) {
		pr_error("kernel.perf_event_paranoid is %d and kiln lacks CAP_PERFMON: run as root, or sysctl -w kernel.perf_event_paranoid=2",
			 paranoid);
		return -1;
	}
	if (setrlimit(RLIMIT_MEMLOCK, &rl) && kernel_charges_memlock()) {
		getrlimit(RLIMIT_MEMLOCK, &rl);
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (64u << 20)) {
			pr_error("the locked-memory limit is %llu KiB and this kernel (before 5.11) charges BPF maps to it: run 'ulimit -l unlimited' first, or set LimitMEMLOCK=infinity in the systemd unit",
				 (unsigned long long)rl.rlim_cur / 1024);
			return -1;
		}
	}
	if (!has_cap(caps, CAP_SYS_PTRACE))
		pr_warn("kiln lacks CAP_SYS_PTRACE: other users' processes keep unnamed frames and Python and Ruby processes their native frames (grant CAP_SYS_PTRACE, or run as root)");
	/* Snapshots keep one descriptor per mapped file: use what we may. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return 0;
}
