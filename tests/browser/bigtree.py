# SPDX-License-Identifier: BSD-2-Clause
"""Writes folded stacks of a made-up program whose tree has about N nodes.

Usage: bigtree.py N > big.folded

A random walk from the root: at each level a few children are much more
likely than the rest (as in real programs), so stacks share prefixes and
the tree is both deep (up to 40 frames) and wide. The same seed always
gives the same file. Function names come from a pool of 4000.
"""

import random
import sys


def main():
    target = int(sys.argv[1])
    rnd = random.Random(42)
    words = ["parse", "encode", "hash", "lookup", "flush", "alloc", "copy", "scan",
             "merge", "sort", "read", "write", "poll", "wait", "send", "render"]
    names = ["%s_%s_%d" % (rnd.choice(["app", "net", "db", "io", "util", "std"]),
                           rnd.choice(words), i) for i in range(4000)]
    children = {}                   # (parent id, name index) -> node id
    lines = []
    while len(children) < target:
        node, path = 0, ["bench"]
        for _ in range(rnd.randint(4, 40)):
            pick = int(rnd.paretovariate(1.1)) % 16
            name = hash((node, pick)) % len(names)
            node = children.setdefault((node, name), len(children) + 1)
            path.append(names[name])
        lines.append("%s %d" % (";".join(path), rnd.randint(1, 20)))
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
