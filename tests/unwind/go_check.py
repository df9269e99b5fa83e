#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Figures of kiln's profile of tests/unwind/workloads/gotruth (a Go program
of known shares), for tests/unwind/run.sh's Go checks. Go binaries that
ship stripped have no CFI and no symbols, so perf cannot be the judge here:
the program's own construction is.

    go_check.py FOLDED COMM FUNC=PCT:CALLER,CALLER,... ...

Prints one JSON object: samples (of processes named COMM), named_pct (user
frames with a function name, not "file+0x..." or "[unknown]"), root_pct
(stacks whose outermost user frame is where Go starts a goroutine or
thread: runtime.goexit, mstart, rt0_go, mcall, _rt0_amd64_linux), and per
FUNC its inclusive share and the share of its samples whose user stack is
exactly CALLER,... (outermost first) then FUNC."""
import json
import sys

ROOTS = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mcall",
         "_rt0_amd64_linux"}


def main():
    path, comm, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    truth = []
    for s in specs:
        func, rest = s.split("=", 1)
        pct, callers = rest.split(":", 1)
        truth.append({"function": func, "truth_pct": float(pct), "callers": callers.split(","),
                      "samples": 0, "exact": 0})
    samples = rooted = frames = named = 0
    for line in open(path):
        stack, count = line.rstrip("\n").rsplit(" ", 1)
        parts = stack.split(";")
        if parts[0] != comm:
            continue
        n = int(count)
        # .symtab names assembly "runtime.goexit.abi0", Go's table not
        user = [f[:-5] if f.endswith(".abi0") else f for f in parts[1:] if not f.endswith("_[k]")]
        if not user:
            continue
        samples += n
        rooted += n * (user[0] in ROOTS)
        frames += n * len(user)
        named += n * sum(1 for f in user if "+0x" not in f and f != "[unknown]")
        for t in truth:
            if t["function"] in user:
                t["samples"] += n
                at = user.index(t["function"])
                t["exact"] += n * (user[:at] == t["callers"])
    out = {"samples": samples, "root_pct": 100.0 * rooted / max(samples, 1),
           "named_pct": 100.0 * named / max(frames, 1), "truth": [
               {"function": t["function"], "truth_pct": t["truth_pct"],
                "inclusive_pct": 100.0 * t["samples"] / max(samples, 1),
                "callers_exact_pct": 100.0 * t["exact"] / max(t["samples"], 1)} for t in truth]}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
