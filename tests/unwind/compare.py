#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""How truthful one profiler's user stacks are, against perf --call-graph dwarf.

    compare.py --subject FILE [--reference FILE] --comm NAME [--json OUT]
               [--top 10] [--truth SPEC]...

Both profiles are of the same run (tests/unwind/run.sh runs perf under kiln);
without --reference only the subject's own figures and --truth are given.
A profile is kiln's folded output (.folded; a .pb.gz is converted with
`kiln view`, $KILN) or `perf script -F comm,pid,tid,time,ip,sym,dso
--no-inline` text (.txt). Only the samples of processes named --comm count,
and of each sample only its user frames (kiln's "_[k]" frames and perf's
[kernel.kallsyms] frames are dropped); a sample with no user frame at all
(inside execve, say) is counted apart and left out of every share.

Frame names are made comparable, the same way for both:
- a frame inside a file but with no symbol (kiln "libfoo.so+0x1a2b", an
  ELF address; perf "[unknown] (/usr/lib/libfoo.so)" at a file offset)
  becomes "?@libfoo.so:0x1a00", the start of the function that holds it
  as the file's .eh_frame_hdr lists functions (return addresses less one),
  so the static functions of a stripped program (gzip, xz, python3.11)
  compare one by one; "?@libfoo.so" where the file has no such table;
- a frame outside every mapping (kiln "[unknown]", perf "[unknown]
  ([unknown])") stays "[unknown]": a broken walk;
- symbol versions go (perf "__libc_start_main@@GLIBC_2.34"), and aliases
  of one address (__libc_calloc / calloc) become one name: the ELF symbol
  tables of the files the reference sampled decide (readelf, plus libc6-dbg's
  debug files found by build id).

A stack reaches the thread's root when its outermost user frame is one of
ROOTS: where a thread starts (_start, ld.so's _dl_start_user, clone, clone3,
start_thread) or the libc frames just above a program's _start
(__libc_start_main, __libc_start_call_main: perf's unwinder sometimes stops
at __libc_start_call_main, see docs/testing.md), or a frame without a
symbol in a file that calls __libc_start_main (a stripped program's _start:
xz, gzip). The same rule for both tools; main alone is not a root (a walk
that stops at main lost the frames above it).

Shares: a function's inclusive share is the percentage of samples with the
function anywhere in the user stack (counted once), its self share the
percentage with the function as the innermost user frame. For shares, a
stack that reaches the root loses its leading run of root frames (so where
exactly a walker stopped among _start, __libc_start_main and
__libc_start_call_main is judged by the root figure, not twice); a stack
that does not reach the root is kept whole, its wrong outermost frames and
all. The functions
compared are the --top of each tool by inclusive share and by self share,
together; the report gives both tools' shares and the largest difference in
points.

--truth NAME=PCT:CALLER,CALLER,... (repeatable) adds the known-truth check of
a program whose shares are known: NAME's inclusive share, and the share of
NAME's samples whose stack reaches the root with exactly CALLER,... (outermost
first) directly above NAME.
"""
import argparse
import bisect
import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOTS = {
    "_start", "_dl_start_user", "__libc_start_main", "__libc_start_call_main",
    "clone", "__clone", "clone3", "__clone3", "__clone_internal", "start_thread",
}

UNKNOWN = "[unknown]"
KILN_UNNAMED = re.compile(r"^(.+)\+0x([0-9a-fA-F]+)$")
PERF_FRAME = re.compile(r"^\s*([0-9a-fA-F]+)\s+(.*?)\s+\((.*)\)\s*$")


def rooted(st):
    """the stack (outermost first) reaches the thread's root"""
    return st[0] in ROOTS or (len(st) > 1 and st[0].startswith("?@") and st[1] == "__libc_start_main")


def trimmed(st):
    """st without its leading root frames, when it reaches the root"""
    if not rooted(st):
        return st
    i = 1
    while i < len(st) and st[i] in ROOTS:
        i += 1
    return st[i:] or st[-1:]


def strip_version(name):
    return name.split("@", 1)[0] if "@" in name and not name.startswith("?@") else name


class Profile:
    """Stacks of one tool: Counter of tuples of user frames, outermost first."""

    def __init__(self, tool):
        self.tool = tool
        self.stacks = collections.Counter()
        self.no_user = 0          # samples with no user frame
        self.other = 0            # samples of other processes
        self.dsos = set()         # files the samples ran in (perf knows them)

    @property
    def samples(self):
        return sum(self.stacks.values())


def read_folded(path, comm, kiln):
    prof = Profile("kiln")
    if path.endswith((".pb.gz", ".pprof")):
        with tempfile.NamedTemporaryFile(suffix=".folded") as tmp:
            subprocess.run([kiln, "view", path, "-o", tmp.name], check=True,
                           stdout=subprocess.DEVNULL)
            text = open(tmp.name).read()
    else:
        text = open(path).read()
    for line in text.splitlines():
        line = line.rstrip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        if frames[0] != comm:
            prof.other += n
            continue
        user = []
        for f in frames[1:]:
            if f.endswith("_[k]"):
                continue
            m = KILN_UNNAMED.match(f)
            if f == UNKNOWN:
                user.append(UNKNOWN)
            elif m:
                # kiln names an ELF address, less one for return addresses
                user.append(("v", os.path.basename(m.group(1)), int(m.group(2), 16)))
            else:
                user.append(strip_version(f))
        if user:
            prof.stacks[tuple(user)] += n
        else:
            prof.no_user += n
    return prof


def read_perf(path, comm):
    prof = Profile("perf")
    frames, this_comm = None, None

    def flush():
        if this_comm is None:
            return
        if this_comm != comm:
            prof.other += 1
        elif frames:
            prof.stacks[tuple(reversed(frames))] += 1
        else:
            prof.no_user += 1

    for line in open(path, errors="replace"):
        if not line.strip():
            flush()
            frames, this_comm = None, None
            continue
        if not line[0].isspace():
            flush()
            # "comm pid/tid time:" ; comm may hold spaces
            m = re.match(r"^(.*?)\s+\d+/\d+\s", line)
            this_comm = m.group(1) if m else line.split()[0]
            frames = []
            continue
        m = PERF_FRAME.match(line)
        if not m or frames is None:
            continue
        addr, sym, dso = m.groups()
        if dso.startswith("[kernel") or dso == "[guest.kernel.kallsyms]" or int(addr, 16) >= 1 << 63:
            continue
        if sym == UNKNOWN:
            if dso.startswith("/"):
                # a file offset; a return address (every frame but the
                # first) less one, as kiln looks them up
                frames.append(("o", dso, int(addr, 16) - (1 if frames else 0)))
            else:
                frames.append(UNKNOWN)
        else:
            frames.append(strip_version(sym))
        if dso.startswith("/"):
            prof.dsos.add(dso)
    flush()
    return prof


def debug_file(path):
    """libc6-dbg style /usr/lib/debug/.build-id/xx/rest.debug of PATH, if any."""
    try:
        out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    if not m:
        return None
    bid = m.group(1)
    cand = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
    return cand if os.path.exists(cand) else None


def alias_map(dsos):
    """name -> canonical name, for function symbols sharing an address."""
    canon = {}
    conflict = set()
    for dso in sorted(dsos):
        by_addr = collections.defaultdict(set)
        for f in (dso, debug_file(dso)):
            if not f:
                continue
            out = subprocess.run(["readelf", "-W", "-s", "--dyn-syms", f], capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                p = line.split()
                # Num: Value Size Type Bind Vis Ndx Name
                if len(p) >= 8 and p[3] in ("FUNC", "IFUNC") and p[6] != "UND":
                    by_addr[int(p[1], 16)].add(strip_version(p[7]))
        for names in by_addr.values():
            if len(names) < 2:
                continue
            # the shortest public-looking name, then alphabetical
            pick = sorted(names, key=lambda s: (s.startswith("_"), len(s), s))[0]
            for n in names:
                if n in canon and canon[n] != pick:
                    conflict.add(n)
                canon[n] = pick
    for n in conflict:
        canon.pop(n, None)
    return canon


class FileFunctions:
    """Function starts of one ELF file from its .eh_frame_hdr table, and its
    segments to turn file offsets into ELF addresses."""

    def __init__(self, path):
        self.starts, self.loads = [], []
        try:
            segs = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
            for line in segs.splitlines():
                p = line.split()
                if p and p[0] == "LOAD":
                    self.loads.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))
            secs = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
            m = re.search(r"\.eh_frame_hdr\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", secs)
            if not m:
                return
            addr, off, size = (int(x, 16) for x in m.groups())
            with open(path, "rb") as f:
                f.seek(off)
                hdr = f.read(size)
            # version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4;
            # table datarel|sdata4 (what GNU ld writes)
            if len(hdr) < 12 or hdr[0] != 1 or hdr[1] != 0x1b or hdr[2] != 0x03 or hdr[3] != 0x3b:
                return
            count = int.from_bytes(hdr[8:12], "little")
            for i in range(min(count, (len(hdr) - 12) // 8)):
                rel = int.from_bytes(hdr[12 + 8 * i:16 + 8 * i], "little", signed=True)
                self.starts.append(addr + rel)
            self.starts.sort()
        except OSError:
            pass

    def vaddr(self, off):
        for o, v, filesz in self.loads:
            if o <= off < o + filesz:
                return off - o + v
        return off

    def function(self, vaddr):
        i = bisect.bisect_right(self.starts, vaddr) - 1
        return self.starts[i] if i >= 0 else None


def canonicalize(prof, canon, paths, files):
    """names made comparable: aliases, and unnamed frames to the start of
    their function (paths: file name -> path, from perf's samples)"""
    def name(f):
        if isinstance(f, str):
            return canon.get(f, f)
        kind, where, addr = f
        path = where if kind == "o" else paths.get(where)
        base = os.path.basename(where)
        if not path:
            return "?@" + base
        if path not in files:
            files[path] = FileFunctions(path)
        ff = files[path]
        start = ff.function(ff.vaddr(addr) if kind == "o" else addr)
        return "?@%s:%#x" % (base, start) if start is not None else "?@" + base

    out = collections.Counter()
    for st, n in prof.stacks.items():
        out[tuple(name(f) for f in st)] += n
    prof.stacks = out


def summary(prof):
    total = prof.samples
    rooted_n = sum(n for st, n in prof.stacks.items() if rooted(st))
    depth = sum(len(st) * n for st, n in prof.stacks.items())
    incl, self_ = collections.Counter(), collections.Counter()
    outer = collections.Counter()
    for st, n in prof.stacks.items():
        outer[st[0]] += n
        st = trimmed(st)
        for f in set(st):
            incl[f] += n
        self_[st[-1]] += n
    pct = (lambda c: {k: 100.0 * v / total for k, v in c.items()}) if total else (lambda c: {})
    return {
        "samples": total,
        "no_user_frames": prof.no_user,
        "other_processes": prof.other,
        "root_pct": 100.0 * rooted_n / total if total else 0.0,
        "mean_depth": depth / total if total else 0.0,
        "max_depth": max((len(st) for st in prof.stacks), default=0),
        "inclusive": pct(incl),
        "self": pct(self_),
        "outermost": {k: v for k, v in outer.most_common(5)},
    }


def top(d, k):
    return [name for name, _ in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def truth_check(prof, spec):
    name, _, rest = spec.partition("=")
    pct, _, callers = rest.partition(":")
    callers = [c for c in callers.split(",") if c]
    total = prof.samples
    with_f = exact = cut = 0
    for st, n in prof.stacks.items():
        if name not in st:
            continue
        with_f += n
        i = st.index(name)
        if rooted(st) and i >= len(callers) and list(st[i - len(callers):i]) == callers:
            exact += n
        elif i == 0 or (i == 1 and st[0] == "[unknown]"):
            cut += n    # no caller, or the one [unknown] a walk cut short shows
    return {
        "function": name,
        "truth_pct": float(pct),
        "callers": callers,
        "inclusive_pct": 100.0 * with_f / total if total else 0.0,
        "samples": with_f,
        "callers_exact_pct": 100.0 * exact / with_f if with_f else 0.0,
        # cut short, not wrong: no caller at all
        "callers_cut": cut,
        "callers_exact_of_uncut_pct": 100.0 * exact / (with_f - cut) if with_f > cut else 0.0,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subject", required=True, help="kiln folded/pprof, or perf script text")
    ap.add_argument("--reference", help="perf script text")
    ap.add_argument("--comm", required=True)
    ap.add_argument("--label", default=None)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--truth", action="append", default=[])
    ap.add_argument("--json")
    a = ap.parse_args()
    kiln = os.environ.get("KILN", "build/kiln")

    def load(path):
        if path.endswith(".txt"):
            return read_perf(path, a.comm)
        return read_folded(path, a.comm, kiln)

    subj = load(a.subject)
    ref = load(a.reference) if a.reference else None
    profs = [subj] + ([ref] if ref else [])
    dsos = set().union(*(p.dsos for p in profs))
    canon = alias_map(dsos)
    paths, files = {os.path.basename(d): d for d in dsos}, {}
    for p in profs:
        canonicalize(p, canon, paths, files)
    s = summary(subj)
    if not ref:
        res = {"program": a.label or a.comm, "subject_tool": subj.tool,
               "subject": {k: v for k, v in s.items() if k not in ("inclusive", "self")},
               "truth": {"subject": [truth_check(subj, t) for t in a.truth]}}
        print("== %s: %s" % (res["program"], subj.tool))
        print_tool(subj.tool, s)
        print_truth(subj.tool, res["truth"]["subject"])
        return write_json(a.json, res)
    r = summary(ref)

    names = []
    for d in (r["inclusive"], s["inclusive"], r["self"], s["self"]):
        for n in top(d, a.top):
            if n not in names:
                names.append(n)
    names.sort(key=lambda n: (-r["inclusive"].get(n, 0), -s["inclusive"].get(n, 0), n))
    def noise(p1, p2):
        """two sigma of the difference of two binomial shares, in points"""
        v = 0.0
        for p, n in ((p1 / 100, s["samples"]), (p2 / 100, r["samples"])):
            v += p * (1 - p) / n if n else 0.25
        return 200 * math.sqrt(v)

    rows = []
    for n in names:
        si, ri = s["inclusive"].get(n, 0.0), r["inclusive"].get(n, 0.0)
        ss, rs = s["self"].get(n, 0.0), r["self"].get(n, 0.0)
        rows.append({"function": n, "subject_inclusive": si, "reference_inclusive": ri,
                     "subject_self": ss, "reference_self": rs,
                     "diff_inclusive": abs(si - ri), "diff_self": abs(ss - rs),
                     "noise_inclusive": noise(si, ri), "noise_self": noise(ss, rs)})
    worst_i = max(rows, key=lambda x: x["diff_inclusive"]) if rows else None
    worst_s = max(rows, key=lambda x: x["diff_self"]) if rows else None
    res = {
        "program": a.label or a.comm,
        "subject_tool": subj.tool, "reference_tool": ref.tool,
        "subject": {k: v for k, v in s.items() if k not in ("inclusive", "self")},
        "reference": {k: v for k, v in r.items() if k not in ("inclusive", "self")},
        "functions": rows,
        "max_diff_inclusive": worst_i["diff_inclusive"] if rows else 0.0,
        "max_diff_inclusive_function": worst_i["function"] if rows else "",
        "max_diff_self": worst_s["diff_self"] if rows else 0.0,
        "max_diff_self_function": worst_s["function"] if rows else "",
        "max_noise": max([max(x["noise_inclusive"], x["noise_self"]) for x in rows] or [0.0]),
        "max_diff": max(worst_i["diff_inclusive"], worst_s["diff_self"]) if rows else 0.0,
        "truth": {"subject": [truth_check(subj, t) for t in a.truth],
                  "reference": [truth_check(ref, t) for t in a.truth]},
    }

    S, R = subj.tool, ref.tool
    if S == R:
        S, R = S + "(a)", R + "(b)"
    print("== %s: %s vs %s (--call-graph dwarf)" % (res["program"], S, R))
    for tool, x in ((S, s), (R, r)):
        print_tool(tool, x)
    print("   %-44s %8s %8s %6s   %8s %8s %6s" % ("function", S + " incl", R + " incl", "diff",
                                                  S + " self", R + " self", "diff"))
    for x in rows:
        print("   %-44.44s %7.1f%% %7.1f%% %6.1f   %7.1f%% %7.1f%% %6.1f" % (
            x["function"], x["subject_inclusive"], x["reference_inclusive"], x["diff_inclusive"],
            x["subject_self"], x["reference_self"], x["diff_self"]))
    print("   max difference: inclusive %.1f points (%s), self %.1f points (%s); "
          "sampling noise (2 sigma of a difference) at most %.1f points" % (
              res["max_diff_inclusive"], res["max_diff_inclusive_function"],
              res["max_diff_self"], res["max_diff_self_function"], res["max_noise"]))
    for tool, lst in ((S, res["truth"]["subject"]), (R, res["truth"]["reference"])):
        print_truth(tool, lst)
    return write_json(a.json, res)


def print_tool(tool, x):
    print("   %-8s %6d samples (+%d without user frames)  reach root %5.1f %%  user depth mean %5.1f"
          " max %d  outermost: %s" % (tool, x["samples"], x["no_user_frames"], x["root_pct"],
                               x["mean_depth"], x["max_depth"],
                               ", ".join("%s %d" % kv for kv in x["outermost"].items())))


def print_truth(tool, lst):
    for t in lst:
        print("   truth %-8s %-14s inclusive %5.1f %% (truth %.0f %%), %5.1f %% of its %d samples "
              "under root..%s" % (tool, t["function"], t["inclusive_pct"], t["truth_pct"],
                                  t["callers_exact_pct"], t["samples"], ">".join(t["callers"])))


def write_json(path, res):
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
