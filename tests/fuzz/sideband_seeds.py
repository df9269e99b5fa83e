# SPDX-License-Identifier: BSD-2-Clause
# Seeds of tests/fuzz/sideband.c: runs of perf side-band records as the
# kernel writes them with sample_type TIME and sample_id_all (the time in
# the last 8 bytes): MMAP2 (pid, tid, addr, len, pgoff, maj, min, ino,
# ino_generation, prot, flags, the name padded to 8), COMM (exec and
# rename), EXIT (pid, ppid, tid, ptid, time), LOST (id, count), FORK.
# Run: python3 tests/fuzz/sideband_seeds.py DIR
import hashlib
import os
import struct
import sys

MMAP2, COMM, EXIT, FORK, LOST = 10, 3, 4, 7, 2
COMM_EXEC = 1 << 13


def rec(kind, misc, body, time):
    body += struct.pack("<Q", time)
    return struct.pack("<IHH", kind, misc, 8 + len(body)) + body


def name(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 8)


def mmap2(pid, addr, length, pgoff, ino, path, time):
    return rec(MMAP2, 2, struct.pack("<IIQQQIIQQII", pid, pid, addr, length, pgoff, 8, 1,
                                     ino, 0, 5, 2) + name(path), time)


def comm(pid, text, time, exec_=True):
    return rec(COMM, COMM_EXEC if exec_ else 0, struct.pack("<II", pid, pid) + name(text), time)


def task(kind, pid, tid, time):
    return rec(kind, 0, struct.pack("<IIIIQ", pid, 1, tid, 1, time), time)


def lost(n, time):
    return rec(LOST, 0, struct.pack("<QQ", 1, n), time)


seeds = {
    # an exec, its program and loader, a library, an exit
    "exec_run_exit": comm(100, "app", 16) + mmap2(100, 0x400000, 0x5000, 0x1000, 11, "/usr/bin/app", 17)
    + mmap2(100, 0x7f0000001000, 0x20000, 0x1000, 12, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 18)
    + mmap2(100, 0x7ffd00000000, 0x2000, 0, 0, "[vdso]", 19)
    + mmap2(100, 0x7f0000100000, 0x180000, 0x26000, 13, "/usr/lib/x86_64-linux-gnu/libc.so.6", 20)
    + task(EXIT, 100, 101, 33) + task(EXIT, 100, 100, 34),
    # a mapping replaced in its middle (split), at one end (cut), whole
    "overlaps": mmap2(7, 0x10000, 0x10000, 0, 5, "/a", 3) + mmap2(7, 0x14000, 0x2000, 0, 6, "/b", 3)
    + mmap2(7, 0x1e000, 0x4000, 0, 6, "/c", 5) + mmap2(7, 0x8000, 0x30000, 0, 9, "/d", 9)
    + mmap2(7, 0x9000, 0x1000, 0, 0, "//anon", 10),
    # renames, forks, lost records, a name without its NUL
    "other": comm(9, "worker", 5, exec_=False) + task(FORK, 10, 10, 6) + lost(3, 7)
    + rec(MMAP2, 2, struct.pack("<IIQQQIIQQII", 9, 9, 0x1000, 0x1000, 0, 1, 2, 3, 0, 5, 2)
          + b"/xyzxyzx", 8),
    # many processes against the log's bound
    "many": b"".join(comm(p, "p", 2 * p) + mmap2(p, 0x1000 * p, 0x1000, 0, p, "/lib%d.so" % p, 2 * p + 1)
                     for p in range(1, 40)),
}
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for data in seeds.values():
    with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
