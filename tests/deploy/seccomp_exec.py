# SPDX-License-Identifier: BSD-2-Clause
"""Runs a command under the system call filter a systemd unit declares,
as systemd would load it, for tests without systemd as PID 1.

    seccomp_exec.py UNIT CMD [ARG...]

From UNIT's [Service]: SystemCallFilter= (an allow list, then ~ lines
taking calls out of it; groups expanded by `systemd-analyze
syscall-filter`), SystemCallErrorNumber= (the errno of a denied call;
without it the process is killed, as systemd does), SystemCallArchitectures=
(native only) and RestrictAddressFamilies= (socket() of any other family
fails). The calls systemd always allows (execve, exit, ...) are allowed.
Needs no_new_privs set (setpriv --no-new-privs) or CAP_SYS_ADMIN.
"""
import errno
import os
import socket
import subprocess
import sys

import seccomp

ALWAYS = ["execve", "exit", "exit_group", "getrlimit", "rt_sigreturn", "sigreturn",
          "clock_gettime", "clock_gettime64", "gettimeofday", "nanosleep", "clock_nanosleep",
          "clock_nanosleep_time64", "time"]


def unit_settings(path):
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[Service]" and "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                out.setdefault(k, []).append(v)
    return out


def groups():
    text = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"], check=True,
                          capture_output=True, text=True).stdout
    g, cur = {}, None
    for line in text.splitlines():
        if line.startswith("@"):
            cur = line.split()[0]
            g[cur] = []
        elif cur and line.strip() and not line.strip().startswith("#"):
            g[cur].append(line.split()[0])
    return g


def expand(names, g):
    out = set()
    for n in names:
        if n.startswith("@"):
            if n not in g:
                sys.exit(f"seccomp_exec: unknown group {n}")
            out |= expand(g[n], g)
        else:
            out.add(n)
    return out


def main():
    unit, cmd = sys.argv[1], sys.argv[2:]
    s = unit_settings(unit)
    g = groups()
    allowed = None
    for line in s.get("SystemCallFilter", []):
        names = line.split()
        if line.startswith("~"):
            if allowed is None:
                sys.exit("seccomp_exec: deny-list-only filters are not supported")
            allowed -= expand([names[0][1:]] + names[1:], g)
        elif allowed is None:
            allowed = expand(names, g)
        else:
            allowed |= expand(names, g)
    if allowed is None:
        sys.exit("seccomp_exec: the unit has no SystemCallFilter=")
    allowed |= set(ALWAYS)
    err = s.get("SystemCallErrorNumber", [None])[-1]
    default = seccomp.ERRNO(getattr(errno, err)) if err else seccomp.KILL_PROCESS
    families = [getattr(socket, f) for f in " ".join(s.get("RestrictAddressFamilies", [])).split()]
    f = seccomp.SyscallFilter(defaction=default)
    for name in sorted(allowed):
        if name == "socket" and families:
            continue
        try:
            f.add_rule(seccomp.ALLOW, name)
        except (RuntimeError, ValueError):
            pass        # no such call on this architecture
    for fam in families:
        f.add_rule(seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.EQ, int(fam)))
    f.load()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
