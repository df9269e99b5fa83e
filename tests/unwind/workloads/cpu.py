# SPDX-License-Identifier: BSD-2-Clause
# CPU-bound Python for the unwind suite: recursion, string formatting, dicts,
# sorting with a key function, until this process has used argv[1] CPU seconds.
# Each round draws its sizes from a seeded generator: rounds of one length
# (about 1.2 ms) beside a sampler of a fixed period (1.001 ms at 999 Hz) see
# the same few phases of the loop over and over, and two samplers' shares then
# differ by 2 points where chance alone gives under 1.
import random
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def strings(k):
    s = 0
    for i in range(k):
        s += len(("x%d-%s" % (i, "ab" * (i % 7))).upper())
    return s


def dicts(k):
    d = {}
    for i in range(k):
        d[i] = i * i
    return sum(d.values())


def sorting(k):
    data = [(i * 7919) % 1009 for i in range(k)]
    return sorted(data, key=lambda v: -v)[0]


def main():
    limit = float(sys.argv[1])
    rng = random.Random(1)
    t0 = time.process_time()
    n = 0
    while time.process_time() - t0 < limit:
        n += (fib(rng.randint(14, 17)) + strings(rng.randint(1000, 3000)) +
              dicts(rng.randint(1500, 4500)) + sorting(rng.randint(1000, 3000)))
    print(n % 1000)


main()
