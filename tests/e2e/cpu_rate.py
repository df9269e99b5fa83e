#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks that kiln's kiln_cpu_seconds_total for one series grows at the
rate its process's CPU time grows.

usage: cpu_rate.py PORT PID CPU_SECONDS NAME=VALUE...

Scrapes http://127.0.0.1:PORT/metrics with prometheus_client's parser
(Debian's python3-prometheus-client), picks the series whose labels hold
every NAME=VALUE, and reads PID's utime + stime from /proc/PID/stat. The
counter moves at drains, some time after the samples it counts were
taken (longer under a sanitizer), so each end of the window is taken with
PID stopped (SIGSTOP): its CPU time then stands still, and once two more
drains have passed (kiln_drains_total) every sample of it taken before
the stop is in the counter. The window lasts until PID has used
CPU_SECONDS more CPU (no wall-clock threshold). The counter's growth
must equal the CPU time's within the sampling error: 4 standard errors of
a count of samples (1/sqrt(samples)), plus a tick of /proc per thread.
Prints one line; exit status 0 when it holds, 1 when not; PID runs on.
"""
import math
import os
import signal
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

HZ = os.sysconf("SC_CLK_TCK")


def scrape(port):
    text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read()
    return list(text_string_to_metric_families(text.decode()))


def series_value(port, want):
    for fam in scrape(port):
        if fam.name != "kiln_cpu_seconds":
            continue
        for s in fam.samples:
            if s.name == "kiln_cpu_seconds_total" and all(s.labels.get(k) == v for k, v in want.items()):
                return s.value, s.labels
    return 0.0, None


def drains(port):
    for fam in scrape(port):
        for s in fam.samples:
            if s.name == "kiln_drains_total":
                return s.value
    return 0.0


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def settled(port, want, pid):
    """(counter, labels, cpu) with pid stopped and its samples all counted."""
    os.kill(pid, signal.SIGSTOP)
    d0 = drains(port)
    while drains(port) < d0 + 2:
        time.sleep(0.05)
    v, labels = series_value(port, want)
    return v, labels, cpu_seconds(pid)


def main():
    port, pid, need = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    want = dict(a.split("=", 1) for a in sys.argv[4:])
    try:
        c1, labels, t1 = settled(port, want, pid)
        os.kill(pid, signal.SIGCONT)
        while cpu_seconds(pid) - t1 < need:
            time.sleep(0.1)
        c2, labels, t2 = settled(port, want, pid)
    finally:
        os.kill(pid, signal.SIGCONT)
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
