# SPDX-License-Identifier: BSD-2-Clause
# Seeds of tests/fuzz/py_lines.c: real CPython location tables (3.11+),
# each a 4-byte first line and the table. Run with a python3.11 or newer:
#   python3.11 tests/fuzz/py_lines_seeds.py tests/fuzz/corpus/py_lines
import json
import os
import struct
import sys


def sample(a, b=2, *c, **d):
    x = [i * a for i in range(b)]
    try:
        y = {k: v for k, v in d.items()}
    except KeyError as e:
        y = str(e)
    return (x, y, c,
            len(x) +
            b)


async def coro(n):
    for i in range(n):
        yield i


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for f in (sample, coro, json.dumps, json.JSONEncoder.iterencode, os.walk):
    code = f.__code__
    name = "seed-" + code.co_name
    with open(os.path.join(out, name), "wb") as fh:
        fh.write(struct.pack("<i", code.co_firstlineno) + code.co_linetable)
