#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# feed.py SECONDS NAME COMMAND...: runs COMMAND (a compressor: xz -9, gzip
# -9, or perf record -- the compressor) with its output to /dev/null and
# feeds its standard input text until the processes named NAME among
# COMMAND and its descendants have used SECONDS of CPU time, then closes
# the input and exits with COMMAND's status. (tests/unwind/run.sh has the
# feeder start perf, so that perf records the compressor alone: perf 6.1's
# unwinder mixes up libc's frames when two processes of one recording map
# libc at different addresses.) The text: 4 MiB of words from a seeded generator,
# each round passed through a different byte permutation, so no round
# repeats an earlier one (a compressor finds no long matches across rounds)
# while keeping the statistics of text. Feeding is cheap next to the
# compressor, which stays CPU-bound.
import os
import random
import subprocess
import sys


def cpu_seconds(root, name):
    """CPU seconds of the processes named NAME in ROOT's tree"""
    parent, cpu = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                head, rest = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = rest.split()
        parent[int(pid)] = int(fields[1])
        if head.split("(", 1)[1] == name:
            cpu[int(pid)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid, seconds in cpu.items():
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += seconds
    return total


def main():
    limit, name = float(sys.argv[1]), sys.argv[2]
    rng = random.Random(14)
    words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    base = " ".join(rng.choice(words) for _ in range(800000)).encode()[:4 << 20]
    child = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    rounds = 0
    try:
        while cpu_seconds(child.pid, name) < limit and child.poll() is None:
            perm = list(range(256))
            random.Random(rounds).shuffle(perm)
            data = base.translate(bytes(perm))
            for off in range(0, len(data), 1 << 16):
                child.stdin.write(data[off:off + (1 << 16)])
            rounds += 1
    except BrokenPipeError:
        pass
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass
    return child.wait()


sys.exit(main())
