#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The include graph of user/ follows the data, one way.

  check.py [ROOT]

Each file of user/ belongs to a stage; a stage may include its own headers
and those of the stages before it on the path of a sample, never a later
one:

  core < sampler < proc < unwind < symbolize < metadata < profile < export
       < pipeline < commands (agent, record, view, main)

and no two modules (x.c with x.h) include each other, directly or round
about. Prints PASS/FAIL lines and "N passed, N failed, 0 skipped" last.
"""

import os
import re
import sys

ORDER = ["core", "sampler", "proc", "unwind", "symbolize", "metadata", "profile",
         "export", "pipeline", "commands"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stage(path):
    """user/<stage>/x.c -> stage; user/pipeline.c -> pipeline; other top-level
    files are the commands."""
    parts = path.split("/")
    if len(parts) > 2:
        return parts[1]
    return "pipeline" if parts[1].startswith("pipeline.") else "commands"


def module(path):
    """x.c, x.h and x's private header x_priv.h are one module."""
    m = os.path.splitext(path)[0]
    return m[:-len("_priv")] if m.endswith("_priv") else m


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = []
    for d, _, names in os.walk(os.path.join(root, "user")):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, n), root))
    known = set(files)
    problems = []
    edges = {}
    for f in sorted(files):
        with open(os.path.join(root, f)) as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            # "stage/x.h" from user/, or "x.h" next to the file
            target = "user/" + inc if "user/" + inc in known else \
                os.path.join(os.path.dirname(f), inc)
            if target not in known:
                continue        # generated (skeleton, protobuf) or include/kiln
            s, t = stage(f), stage(target)
            if s not in ORDER or t not in ORDER:
                problems.append("%s: stage %s or %s is not in the order" % (f, s, t))
            elif ORDER.index(t) > ORDER.index(s):
                problems.append("%s (%s) includes %s (%s), a later stage" % (f, s, inc, t))
            if module(target) != module(f):
                edges.setdefault(module(f), set()).add(module(target))
    print(("PASS" if not problems else "FAIL") + " arrows: %d files, every include %s" % (
        len(files), "from a stage to itself or an earlier one" if not problems else
        "checked:\n  " + "\n  ".join(problems)))

    # circles between modules: depth-first search for a back edge
    circles = []
    state = {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                circles.append(" -> ".join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    print(("PASS" if not circles else "FAIL") + " circles: %s" % (
        "no module includes itself round about (%d modules)" % len(edges) if not circles
        else "; ".join(circles)))
    failed = (1 if problems else 0) + (1 if circles else 0)
    print("%d passed, %d failed, 0 skipped" % (2 - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
