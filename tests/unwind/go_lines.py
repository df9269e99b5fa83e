#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Source lines of kiln's pprof of tests/unwind/workloads/gotruth, as
`go tool pprof -raw` prints its locations, against the program's source:

    go_lines.py RAW MAIN_GO FUNC...

For each FUNC (main.alphaInner, ...), the location lines that name it must
give main.go as the file and a line inside the function's body in MAIN_GO.
Prints one line per FUNC, "FUNC lines=N inside=M files=..."; exits 1 when
a FUNC has no line or one outside its body."""
import re
import sys


def bodies(main_go):
    """main.NAME -> (first line, last line) of each top-level function."""
    spans, name, start = {}, None, 0
    for no, text in enumerate(open(main_go), 1):
        m = re.match(r"func (\w+)\(", text)
        if m:
            name, start = "main." + m.group(1), no
            if text.rstrip().endswith("}"):
                spans[name] = (no, no)
                name = None
        elif name and text.startswith("}"):
            spans[name] = (start, no)
            name = None
    return spans


def main():
    raw, main_go, funcs = sys.argv[1], sys.argv[2], sys.argv[3:]
    spans = bodies(main_go)
    # a location's lines: "  7: 0x48d5a1 M=1 main.alphaInner gotruth/main.go:53 s=0"
    # and further lines of the same location (inlined calls) indented
    pat = re.compile(r"(?:^\s+\d+: 0x[0-9a-f]+ M=\d+|^\s{10,}) (\S+) (\S+):(\d+)(?: s=\d+)?$")
    seen = {f: [] for f in funcs}
    in_locations = False
    for text in open(raw):
        text = text.rstrip("\n")
        if text.startswith("Locations"):
            in_locations = True
            continue
        if text.startswith("Mappings"):
            break
        m = pat.match(text) if in_locations else None
        if m and m.group(1) in seen:
            seen[m.group(1)].append((m.group(2), int(m.group(3))))
    bad = False
    for f in funcs:
        lo, hi = spans.get(f, (0, -1))
        inside = [1 for file, line in seen[f] if file.endswith("main.go") and lo <= line <= hi]
        files = sorted({file for file, _ in seen[f]})
        print("%s lines=%d inside=%d files=%s" % (f, len(seen[f]), len(inside), ",".join(files)))
        bad |= not seen[f] or len(inside) != len(seen[f])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
