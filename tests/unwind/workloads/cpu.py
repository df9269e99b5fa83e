# SPDX-License-Identifier: BSD-2-Clause
# CPU-bound Python for the unwind suite: recursion, string formatting, dicts,
# sorting with a key function, until this process has used argv[1] CPU seconds.
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def strings():
    s = 0
    for i in range(2000):
        s += len(("x%d-%s" % (i, "ab" * (i % 7))).upper())
    return s


def dicts():
    d = {}
    for i in range(3000):
        d[i] = i * i
    return sum(d.values())


def sorting():
    data = [(i * 7919) % 1009 for i in range(2000)]
    return sorted(data, key=lambda v: -v)[0]


def main():
    limit = float(sys.argv[1])
    t0 = time.process_time()
    n = 0
    while time.process_time() - t0 < limit:
        n += fib(16) + strings() + dicts() + sorting()
    print(n % 1000)


main()
