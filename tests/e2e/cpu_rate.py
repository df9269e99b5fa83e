#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks that kiln's kiln_cpu_seconds_total for one series grows at the
rate its process's CPU time grows.

usage: cpu_rate.py PORT PID CPU_SECONDS NAME=VALUE...

Scrapes http://127.0.0.1:PORT/metrics with prometheus_client's parser
(Debian's python3-prometheus-client), picks the series whose labels hold
every NAME=VALUE, and reads PID's utime + stime from /proc/PID/stat. The
counter moves at drains, so each end of the window is taken when it has
just moved, with /proc read right then. The window lasts until PID has
used CPU_SECONDS more CPU (no wall-clock threshold). The counter's growth
must equal the CPU time's within the sampling error: 4 standard errors of
a count of samples (1/sqrt(samples)), plus a tick of /proc per thread.
Prints one line; exit status 0 when it holds, 1 when not.
"""
import math
import os
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

HZ = os.sysconf("SC_CLK_TCK")


def series_value(port, want):
    text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read()
    for fam in text_string_to_metric_families(text.decode()):
        if fam.name != "kiln_cpu_seconds":
            continue
        for s in fam.samples:
            if s.name == "kiln_cpu_seconds_total" and all(s.labels.get(k) == v for k, v in want.items()):
                return s.value, s.labels
    return 0.0, None


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def moved(port, want, pid):
    """(counter, labels, cpu) right after the counter moved."""
    v0, _ = series_value(port, want)
    while True:
        v, labels = series_value(port, want)
        if v != v0:
            return v, labels, cpu_seconds(pid)
        time.sleep(0.01)


def main():
    port, pid, need = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    want = dict(a.split("=", 1) for a in sys.argv[4:])
    c1, labels, t1 = moved(port, want, pid)
    while True:
        c2, labels, t2 = moved(port, want, pid)
        if t2 - t1 >= need:
            break
    dc, dt = c2 - c1, t2 - t1
    samples_per_second = float(os.environ.get("KILN_HZ", "97"))
    n = dc * samples_per_second
    tol = 4 / math.sqrt(max(n, 1)) + threads(pid) / HZ / dt
    ok = abs(dc / dt - 1) <= tol
    print("kiln_cpu_seconds_total%s grew %.3f s while /proc/%d/stat grew %.3f s (ratio %.3f, %d samples, tolerance %.3f)"
          % (labels, dc, pid, dt, dc / dt, n, tol))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
