# SPDX-License-Identifier: BSD-2-Clause
# Python of known shares for tests/unwind/python.sh: five(), three() and
# two() take CPU time 5:3:2 until argv[1] CPU seconds have passed; with
# "threads", a second thread hashes a large buffer with the GIL released
# (hash_worker) while the main thread runs Python (py_spin). Prints the CPU
# seconds each function took, as JSON, at the end. Each call spins a random
# 50-150 % of its share, so the rounds cannot alias with the sampling
# period (a fixed 10 ms round at 999 Hz kept the samples' phase in the
# round nearly still, and the shares 2-3 points off).
import hashlib
import json
import random
import sys
import threading
import time

spent = {"five": 0.0, "three": 0.0, "two": 0.0}
rng = random.Random()


def spin(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        for i in range(300):
            n += i * i
    return n


def five():
    t = time.thread_time()
    spin(0.005 * rng.uniform(0.5, 1.5))
    spent["five"] += time.thread_time() - t


def three():
    t = time.thread_time()
    spin(0.003 * rng.uniform(0.5, 1.5))
    spent["three"] += time.thread_time() - t


def two():
    t = time.thread_time()
    spin(0.002 * rng.uniform(0.5, 1.5))
    spent["two"] += time.thread_time() - t


def hash_worker(end, out):
    data = b"k" * (64 << 20)
    t = time.thread_time()
    while time.thread_time() - t < end:
        hashlib.sha256(data).digest()
    out["hash_worker"] = time.thread_time() - t


def py_spin(seconds):
    spin(seconds)


def main():
    seconds = float(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "threads":
        out = {}
        th = threading.Thread(target=hash_worker, args=(seconds, out))
        th.start()
        t = time.thread_time()
        py_spin(seconds)
        out["py_spin"] = time.thread_time() - t
        th.join()
        print(json.dumps(out))
        return
    end = time.process_time() + seconds
    while time.process_time() < end:
        five()
        three()
        two()
    print(json.dumps(spent))


main()
