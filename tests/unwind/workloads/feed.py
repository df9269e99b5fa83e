#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# feed.py SECONDS COMMAND...: runs COMMAND (a compressor: xz -9, gzip -9)
# with its output to /dev/null and feeds its standard input text until
# COMMAND has used SECONDS of CPU time, then closes the input and exits
# with COMMAND's status. The text: 4 MiB of words from a seeded generator,
# each round passed through a different byte permutation, so no round
# repeats an earlier one (a compressor finds no long matches across rounds)
# while keeping the statistics of text. Feeding is cheap next to the
# compressor, which stays CPU-bound.
import os
import random
import subprocess
import sys


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    limit = float(sys.argv[1])
    rng = random.Random(14)
    words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    base = " ".join(rng.choice(words) for _ in range(800000)).encode()[:4 << 20]
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    rounds = 0
    try:
        while cpu_seconds(child.pid) < limit:
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
