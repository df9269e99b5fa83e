#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for tests/bench/run.sh (stdlib only; run with /usr/bin/python3).

  analyze.py hold-stats
      Turns BPF run-time statistics on with bpf(BPF_ENABLE_STATS) and keeps
      them on until killed (the kernel turns them off when the fd closes).
      Unlike writing kernel.bpf_stats_enabled, this cannot be undone by
      another process resetting the sysctl, and leaves nothing to restore.
      Prints "on" once enabled, or "failed: ..." and exits 1.
  analyze.py report WORKDIR SECONDS OUT.json
      Reads every phase directory of every round of WORKDIR, prints the
      markdown report on stdout and writes the same figures to OUT.json:
      each figure is the median over the rounds, each ratio the median of
      the rounds' ratios (every round's rows and ratios are in the JSON too).

Rounds (written by run.sh): WORKDIR/round<N>/ with `order` (the phases in
the order they ran) and the phase directories; a WORKDIR without rounds is
read as one round. Phase directories: WORKDIR/round<N>/<phase>/ with
  failed        one line: why the phase has no figures (absent when it ran)
  time.txt      `/usr/bin/time -f '%U %S %M'` of the profiler
  script_time.txt  the same for `perf script` (perf, perf_dwarf)
  spin.txt      spin_counter's line: iterations=N cpu_s=X wall_s=Y
  bpf.json      bench_probe's last reading of the profiler's BPF programs
                before it exited
  stamp         stamp_exec's "PID MONOTONIC_NS" of the profiler's start
  first_sample  bench_probe's "FIRST_NS LAST_NS" (BPF profilers)
  steady.json   bench_probe's two steady-state readings of the profiler
  churn.log     churn's "pid start_ns end_ns cpu_ns" per short-lived process
  churn.txt     churn's summary line (children's and its own CPU s)
  kiln.pb.gz, kiln.json, perf.txt, bpftrace.txt  the profiles (perf.txt:
                perf script's output, for perf and perf_dwarf alike)
  profiles/     the agent's output dir: <unix>-<service>.pb.gz per interval
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

PHASES = [  # (directory, row label)
    ("baseline", "baseline"),
    ("kiln", "kiln record"),
    ("agent", "kiln agent (files)"),
    ("agent_fp", "kiln agent, frame pointers only"),
    ("agent_interp", "kiln agent, python3 + ruby running"),
    ("perf", "perf record (+script)"),
    ("perf_dwarf", "perf --call-graph dwarf (+script)"),
    ("bpftrace", "bpftrace"),
]
EXTRA_BASELINES = ["baseline2"]
PERF_PHASES = ("perf", "perf_dwarf")
AGENT_PHASES = ("agent", "agent_fp", "agent_interp")
# phases under more load than the baseline's: no throughput against it
MORE_LOAD_PHASES = ("agent_interp",)
# Baseline runs further apart than this in throughput: the host was busy
# (its neighbours, on a VM) and the report says so.
NOISY_HOST_PCT = 5.0
TRUTH = 75.0  # cpu_ratio: hot_three gets 3 rounds in 4, hot_one 1 in 4


# ---------------------------------------------------------------- BPF stats

def cmd_hold_stats():
    import ctypes
    import platform
    import signal
    nr_bpf = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
    if nr_bpf is None:
        print(f"failed: no bpf syscall number for {platform.machine()}", flush=True)
        sys.exit(1)
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.c_uint32(0)  # enable_stats.type = BPF_STATS_RUN_TIME
    BPF_ENABLE_STATS = 32
    fd = libc.syscall(nr_bpf, BPF_ENABLE_STATS, ctypes.byref(attr),
                      ctypes.sizeof(attr))
    if fd < 0:
        print(f"failed: {os.strerror(ctypes.get_errno())}", flush=True)
        sys.exit(1)
    print("on", flush=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    while True:
        signal.pause()


def steady_rate(d):
    """CPU s per second of the profiler between bench_probe's two
    steady-state readings (without and with its BPF time), or None."""
    try:
        st = json.loads(read(os.path.join(d, "steady.json")) or "")
    except ValueError:
        return None
    a, b = st["t0"], st["t1"]
    secs = (b["mono_ns"] - a["mono_ns"]) / 1e9
    if secs <= 0:
        return None
    if a["threads"].keys() == b["threads"].keys():
        cpu = sum(b["threads"].values()) - sum(a["threads"].values())
        cpu, how = cpu / 1e9, "schedstat"
    else:  # a thread came or went: the ticks count the dead ones too
        cpu, how = (b["ticks"] - a["ticks"]) / st["clk_tck"], "ticks"
    bpf = (b["bpf_ns"] - a["bpf_ns"]) / 1e9
    return {"window_s": round(secs, 2), "how": how,
            "bpf_maps_mb": round(b.get("maps_bytes", 0) / 1e6, 1),
            "cpu_s_per_s": round(cpu / secs, 5),
            "cpu_incl_bpf_s_per_s": round((cpu + bpf) / secs, 5)}


# ---------------------------------------------------------------- parsing

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse_time(path):
    """(user s, sys s, max RSS KiB) from /usr/bin/time -f '%U %S %M'."""
    text = read(path)
    if not text:
        return None
    for line in reversed(text.strip().splitlines()):
        parts = line.split()
        if len(parts) == 3:
            try:
                return float(parts[0]), float(parts[1]), int(parts[2])
            except ValueError:
                pass
    return None


def parse_summary(path, fields):
    """The key=value summary line a workload prints on exit (spin_counter,
    churn): {key: fields[key](value)}, or None unless every key is there."""
    pairs = dict(re.findall(r"(\w+)=([\d.]+)", read(path) or ""))
    if not all(k in pairs for k in fields):
        return None
    return {k: conv(pairs[k]) for k, conv in fields.items()}


def parse_ticks(d):
    """Host busy / steal CPU s and cpu_ratio's CPU s over the window."""
    try:
        b0, s0, r0 = map(int, read(os.path.join(d, "ticks0")).split())
        b1, s1, r1, hz = map(int, read(os.path.join(d, "ticks1")).split())
    except (AttributeError, ValueError):
        return None
    return {"busy_s": round((b1 - b0) / hz, 2), "steal_s": round((s1 - s0) / hz, 2),
            "cpu_ratio_cpu_s": round((r1 - r0) / hz, 2)}


def foreign_cpu(r):
    """Busy CPU s of the window not taken by the load (spin_counter,
    cpu_ratio, churn and its children) or the profiler: other processes on
    the host (and kernel threads)."""
    h, sp, ch = r.get("host"), r.get("spin"), r.get("churn")
    if not h or not sp or not ch:
        return None
    prof = r.get("record_cpu_s", r.get("cpu_s", 0.0))
    return round(h["busy_s"] - sp["cpu_s"] - h["cpu_ratio_cpu_s"] - prof
                 - ch["cpu_s"] - ch["self_cpu_s"], 2)


def share(three, one):
    n = three + one
    if n == 0:
        return None
    pct = 100.0 * three / n
    return {"hot_three": three, "hot_one": one, "samples": n,
            "hot_three_pct": round(pct, 2),
            "error_points": round(pct - TRUTH, 2),
            # one standard deviation of the estimate from n samples alone
            "sampling_sd_points": round(100 * (0.75 * 0.25 / n) ** 0.5, 2)}


# Every tool's output becomes a list of Stack: n samples of process comm
# with these frames, leaf first (kernel frames, then user frames; comm is not
# a frame). Unresolved frames are kept, as UNRESOLVED, so the share of frames
# symbolized is measured the same way for every tool.
class Stack:
    __slots__ = ("n", "comm", "frames")

    def __init__(self, n, comm, frames):
        self.n, self.comm, self.frames = n, comm, frames


UNRESOLVED = None


def stacks_pprof(paths, tmpdir):
    """Samples (not nanoseconds) per stack via `go tool pprof -traces`, which
    merges the profiles when given several. kiln's root frame is the comm;
    an unresolved frame is "[unknown]" or "<binary>+0x<offset>"."""
    env = dict(os.environ, PPROF_TMPDIR=tmpdir, HOME=tmpdir)
    r = subprocess.run(["go", "tool", "pprof", "-symbolize=none",
                        "-sample_index=samples", "-traces", *paths],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, "go tool pprof failed: " + r.stderr.strip()[-200:]
    out = []
    count, frames = None, []
    for line in r.stdout.splitlines() + ["-----------+"]:
        if line.startswith("-----------+"):
            if count is not None and frames:
                out.append(Stack(count, frames[-1], [
                    UNRESOLVED if f == "[unknown]" or re.search(r"\+0x[0-9a-f]+$", f)
                    else f for f in frames[:-1]]))
            count, frames = None, []
            continue
        m = re.match(r"^\s*(\d+)\s{2,}(\S.*)$", line)
        if m and count is None and not frames:
            count, frames = int(m.group(1)), [m.group(2).strip()]
        elif count is not None:
            frames.append(line.strip())
    return out, None


PERF_HEADER = re.compile(r"^(\S.*?)\s+(\d+)(?:/\d+)?\s+\[\d+\]\s+([\d.]+):")
PERF_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.+?)(\+0x[0-9a-f]+)?\s+\(.*\)$")


def stacks_perf(path):
    """perf script: one block per sample, a header 'comm pid [cpu] time:'
    then frames '\\t addr sym+0xoff (dso)'. Also returns the first and last
    sample times (perf records with -k CLOCK_MONOTONIC)."""
    text = read(path)
    if text is None:
        return None, None, "no perf script output"
    out, times = [], []
    for block in text.split("\n\n"):
        lines = block.strip("\n").splitlines()
        h = PERF_HEADER.match(lines[0]) if lines else None
        if not h:
            continue
        times.append(float(h.group(3)))
        frames = []
        for line in lines[1:]:
            m = PERF_FRAME.match(line)
            if m:
                frames.append(UNRESOLVED if m.group(1) == "[unknown]" else m.group(1))
        out.append(Stack(1, h.group(1), frames))
    window = (min(times), max(times)) if times else None
    return out, window, None


def stacks_bpftrace(path):
    """bpftrace map: '@[\\n kframes\\n, \\n uframes\\n, comm]: N'; frames
    'sym+off', unresolved ones a bare hex address."""
    text = read(path)
    if text is None:
        return None, "no bpftrace output"
    out = []
    for m in re.finditer(r"@\[(.*?)\]: (\d+)", text, re.S):
        stacks, comm = m.group(1).rsplit(",", 1)
        frames = []
        for line in stacks.splitlines():
            f = line.strip().strip(",").strip()
            if f:
                frames.append(UNRESOLVED if re.match(r"^0x[0-9a-f]+$", f)
                              else re.sub(r"\+\d+$", "", f))
        out.append(Stack(int(m.group(2)), comm.strip(), frames))
    return out, None


def share_of(stacks):
    three = sum(s.n for s in stacks if "hot_three" in s.frames)
    one = sum(s.n for s in stacks if "hot_one" in s.frames and "hot_three" not in s.frames)
    return share(three, one)


WORKLOAD_COMMS = ("cpu_ratio", "spin_counter", "churn", "short_lived")


def symbolized(stacks):
    """Share of frames with a function name: over the benchmark's own
    workloads (built with frame pointers and symbols: a fair, repeatable
    figure), and over every process but the idle task (kiln leaves it out;
    perf and bpftrace would add its always-resolved kernel frames). The
    latter depends on what else runs: binaries without frame pointers unwind
    into garbage frames that no tool can name."""
    def figures(keep):
        frames = resolved = samples = leaf = 0
        for s in stacks:
            if not keep(s.comm) or not s.frames:
                continue
            samples += s.n
            frames += s.n * len(s.frames)
            resolved += s.n * sum(f is not UNRESOLVED for f in s.frames)
            leaf += s.n * (s.frames[0] is not UNRESOLVED)
        if not frames:
            return None
        return {"samples": samples, "frames": frames, "resolved": resolved,
                "frames_pct": round(100.0 * resolved / frames, 2),
                "leaf_pct": round(100.0 * leaf / samples, 2)}

    return {"workloads": figures(lambda c: c in WORKLOAD_COMMS),
            "all": figures(lambda c: not c.startswith("swapper"))}


def read_window(d, samples=None):
    """(stamp s, first sample s, last sample s) on CLOCK_MONOTONIC:
    stamp_exec's stamp, and samples, the (first, last) sample times perf
    gave, or else the BPF poller's first_sample file."""
    try:
        stamp = int(read(os.path.join(d, "stamp")).split()[1]) / 1e9
        if samples is None:
            samples = [int(x) / 1e9 for x in read(os.path.join(d, "first_sample")).split()]
        first, last = samples
    except (AttributeError, IndexError, ValueError):
        return None
    return stamp, first, last


def short_lived(stacks, d, window, hz):
    """Samples of the churn's short-lived processes (comm short_lived) vs
    the ground truth: the CPU time churn measured for each of them (wait4),
    pro rata of the part of its life inside the profiler's sampling window,
    times the frequency. Symbolized: samples whose every frame has a name."""
    lines = read(os.path.join(d, "churn.log"))
    if lines is None or window is None:
        return None
    first, last = window
    cpu = 0.0
    procs = 0
    for line in lines.splitlines():
        try:
            _, start, end, ns = (int(x) for x in line.split())
        except ValueError:
            continue
        start, end = start / 1e9, end / 1e9
        overlap = min(end, last) - max(start, first)
        if overlap > 0 and end > start:
            cpu += ns / 1e9 * min(1.0, overlap / (end - start))
            procs += 1
    mine = [s for s in stacks if s.comm == "short_lived"]
    n = sum(s.n for s in mine)
    whole = sum(s.n for s in mine if UNRESOLVED not in s.frames)
    work = sum(s.n for s in mine if "short_lived_work" in s.frames)
    expected = cpu * hz
    return {"processes": procs, "cpu_s": round(cpu, 3),
            "expected_samples": round(expected, 1), "samples": n,
            "coverage_pct": round(100.0 * n / expected, 2) if expected else None,
            "symbolized_pct": round(100.0 * whole / n, 2) if n else None,
            "in_short_lived_work_pct": round(100.0 * work / n, 2) if n else None}


# ---------------------------------------------------------------- report

def bpf_figures(progs, sampler):
    """(total run ns of all programs, ns per sample of the sampling ones)."""
    if not progs:
        return None
    total = sum(p.get("run_time_ns") or 0 for p in progs)
    samp = [p for p in progs if sampler(p)]
    ns = sum(p.get("run_time_ns") or 0 for p in samp)
    cnt = sum(p.get("run_cnt") or 0 for p in samp)
    return {"programs": progs, "run_time_ns_total": total,
            "sample_run_time_ns": ns, "sample_run_cnt": cnt,
            "ns_per_sample": round(ns / cnt, 1) if cnt else None}


def accuracy(row, d, stacks, note, window, hz):
    """The figures read off a profiler's output. window: (stamp, first
    sample, last sample) in CLOCK_MONOTONIC seconds, or None."""
    row["share_note"] = note
    if stacks is None:
        row["share"] = None
        return
    row["share"] = share_of(stacks)
    row["symbolized"] = symbolized(stacks)
    if window:
        row["first_sample_ms"] = round(1000 * (window[1] - window[0]), 1)
        row["sampling_window_s"] = round(window[2] - window[1], 2)
    row["short_lived"] = short_lived(stacks, d, window and window[1:], hz)


def phase_row(work, seconds, phase, label, hz):
    d = os.path.join(work, phase)
    row = {"phase": phase, "label": label}
    failed = read(os.path.join(d, "failed"))
    if failed is not None or not os.path.isdir(d):
        row["failed"] = (failed or "not run").strip()
        return row
    row["spin"] = parse_summary(os.path.join(d, "spin.txt"),
                                {"iterations": int, "cpu_s": float, "wall_s": float})
    # churn's cpu_s: its children's; self_cpu_s: its own
    row["churn"] = parse_summary(os.path.join(d, "churn.txt"),
                                 {"spawned": int, "cpu_s": float, "self_cpu_s": float})
    row["host"] = parse_ticks(d)
    if phase.startswith("baseline"):
        return row
    t = parse_time(os.path.join(d, "time.txt"))
    if t is None:
        row["failed"] = "no /usr/bin/time figures"
        return row
    row["cpu_user_s"], row["cpu_sys_s"] = t[0], t[1]
    row["cpu_s"] = round(t[0] + t[1], 3)
    row["peak_rss_mb"] = round(t[2] / 1024, 1)
    row["cpu_pct_of_core"] = round(100 * row["cpu_s"] / seconds, 3)
    if phase in PERF_PHASES:
        st = parse_time(os.path.join(d, "script_time.txt"))
        if st is None:
            row["failed"] = "perf script did not run"
            return row
        row["record_cpu_s"] = row["cpu_s"]
        row["record_peak_rss_mb"] = row["peak_rss_mb"]
        row["script_cpu_s"] = round(st[0] + st[1], 3)
        row["script_peak_rss_mb"] = round(st[2] / 1024, 1)
        row["cpu_user_s"] = round(t[0] + st[0], 3)
        row["cpu_sys_s"] = round(t[1] + st[1], 3)
        row["cpu_s"] = round(row["record_cpu_s"] + row["script_cpu_s"], 3)
        row["peak_rss_mb"] = max(row["peak_rss_mb"], row["script_peak_rss_mb"])
        steady_figures(row, d, script_per_s=row["script_cpu_s"] / seconds)
        stacks, samples, note = stacks_perf(os.path.join(d, "perf.txt"))
        accuracy(row, d, stacks, note, samples and read_window(d, samples), hz)
        return row
    try:
        progs = json.loads(read(os.path.join(d, "bpf.json")) or "[]")
    except ValueError:
        progs = []
    if phase == "kiln" or phase in AGENT_PHASES:  # all sample with kiln's kiln_sample
        # (kiln_sample_loop where the kernel has bpf_loop, its name cut
        # to the kernel's 15 characters)
        bpf = bpf_figures(progs, lambda p: str(p.get("name", "")).startswith("kiln_sample"))
    else:
        bpf = bpf_figures(progs, lambda p: p.get("type") == "perf_event")
    if phase == "kiln":
        stacks, note = stacks_pprof([os.path.join(d, "kiln.pb.gz")], d)
        try:
            row["kiln_stats"] = json.loads(read(os.path.join(d, "kiln.json")))
        except (TypeError, ValueError):
            row["kiln_stats"] = None
    elif phase in AGENT_PHASES:
        files = sorted(glob.glob(os.path.join(d, "profiles", "*.pb.gz")))
        row["profile_files"] = len(files)
        stacks, note = stacks_pprof(files, d)
    else:
        stacks, note = stacks_bpftrace(os.path.join(d, "bpftrace.txt"))
    accuracy(row, d, stacks, note, read_window(d), hz)
    row["bpf"] = bpf
    if bpf and bpf["sample_run_cnt"]:
        row["bpf_ns_per_sample"] = bpf["ns_per_sample"]
        row["cpu_incl_bpf_s"] = round(row["cpu_s"] + bpf["run_time_ns_total"] / 1e9, 3)
    steady_figures(row, d)
    return row


def steady_figures(row, d, script_per_s=0.0):
    """The profiler's CPU per second of steady state, ms (steady_rate).
    perf's adds its script's whole CPU spread over the run: script's work
    is per sample, but for its start-up, which this counts in as well."""
    st = steady_rate(d)
    if st is None:
        return
    row["steady"] = st
    row["steady_ms_per_s"] = round(1000 * (st["cpu_s_per_s"] + script_per_s), 3)
    if row["phase"] not in PERF_PHASES:
        row["steady_incl_bpf_ms_per_s"] = round(1000 * st["cpu_incl_bpf_s_per_s"], 3)
        row["bpf_maps_mb"] = st["bpf_maps_mb"]


def fmt(v, nd=2):
    return "-" if v is None else f"{v:.{nd}f}"


def judge(by, baselines, ratios):
    """kiln record against issue 7's targets. met is None when the figure
    is missing (a tool failed). baselines: every baseline run of every
    round (their spread is the noise)."""
    k = by["kiln"]
    out = []

    def add(target, value, ok, figure):
        out.append({"target": target, "value": value,
                    "met": None if value is None else ok(value), "figure": figure})

    v = ratios.get("kiln_cpu_incl_bpf_over_perf_cpu")
    add("kiln CPU (incl. its BPF time) <= 1/4 of perf record + script", v,
        lambda x: x <= 0.25, f"{fmt(v, 3)}")
    v = ratios.get("kiln_cpu_incl_bpf_over_bpftrace_cpu_incl_bpf")
    add("kiln CPU (incl. its BPF time) <= 1/2 of bpftrace's (incl. its BPF time)", v,
        lambda x: x <= 0.5, f"{fmt(v, 3)}")
    v = ratios.get("kiln_steady_incl_bpf_over_perf_steady")
    add("per second of steady state, kiln CPU (incl. its BPF time) <= 1/4 of perf "
        "record + script", v, lambda x: x <= 0.25, f"{fmt(v, 3)}")
    v = ratios.get("kiln_steady_incl_bpf_over_bpftrace_steady_incl_bpf")
    add("per second of steady state, kiln CPU (incl. its BPF time) <= 1/2 of bpftrace's",
        v, lambda x: x <= 0.5, f"{fmt(v, 3)}")
    v = ratios.get("kiln_rss_over_bpftrace_rss")
    add("kiln peak RSS <= 1/4 of bpftrace's", v, lambda x: x <= 0.25, f"{fmt(v, 3)}")
    # Slowdown: in-task cost (iters per CPU-s) against the baseline spread.
    effs = [r.get("iters_per_cpu_s_pct") for r in baselines if r.get("iters_per_cpu_s_pct")]
    noise = max(effs) - min(effs) if len(effs) > 1 else 0.0
    v = k.get("iters_per_cpu_s_pct")
    slow = None if v is None else round(100.0 - v, 2)
    add("workload slowdown < 1 % (or within the baseline spread)", slow,
        lambda x: x < max(1.0, noise),
        f"{fmt(slow)} % per CPU-s (baseline spread {noise:.2f} %); "
        f"throughput {fmt(k.get('throughput_pct'))} % of baseline")
    sh = k.get("share")
    v = sh and abs(sh["error_points"])
    add("share error < 2 points", v, lambda x: x < 2.0,
        f"{fmt(v)} points ({sh['samples'] if sh else 0} samples)")
    sl = k.get("short_lived") or {}
    v = sl.get("symbolized_pct")
    add(">= 95 % of the short-lived processes' samples symbolized", v,
        lambda x: x >= 95.0,
        f"{fmt(v, 1)} % of {sl.get('samples', 0)} samples, coverage "
        f"{fmt(sl.get('coverage_pct'), 1)} % of the expected")
    v = k.get("peak_rss_mb")
    add("kiln record peak RSS <= 20 MB", v, lambda x: x <= 20.0,
        f"{fmt(v, 1)} MB (BPF maps {fmt(k.get('bpf_maps_mb'), 1)} MB besides)")
    for phase, what in (("agent", "the agent"),
                        ("agent_interp", "the agent with python3 and ruby running")):
        a = by.get(phase) or {}
        v = a.get("steady_incl_bpf_ms_per_s")
        v = v and round(v / 10, 3)
        add(f"{what}: CPU (incl. its BPF time) in steady state <= 0.5 % of one core",
            v, lambda x: x <= 0.5, f"{fmt(v, 3)} %")
        v = a.get("peak_rss_mb")
        add(f"{what}: peak RSS <= 30 MB plus its BPF maps", v, lambda x: x <= 30.0,
            f"{fmt(v, 1)} MB plus {fmt(a.get('bpf_maps_mb'), 1)} MB of BPF maps")
    out.append({"target": "drain time linear in unique stacks", "value": None,
                "met": None, "figure": "measured by `make bench-scale`"})
    return out


def median_merge(vals):
    """The median of each number over vals (one value per round), dict by
    dict; anything else (strings, lists, booleans) from the first round."""
    ok = [v for v in vals if v is not None]
    if not ok:
        return None
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ok):
        m = statistics.median(ok)
        return round(m, 3) if isinstance(m, float) else m
    if all(isinstance(v, dict) for v in ok):
        keys = list(dict.fromkeys(k for v in ok for k in v))
        return {k: median_merge([v.get(k) for v in ok]) for k in keys}
    return ok[0]


def median_row(rs):
    """One row of figures for a phase: each the median over the rounds in
    which the phase ran; failed only when it failed in every round."""
    good = [r for r in rs if "failed" not in r]
    if not good:
        return dict(rs[0], rounds_ok=0)
    row = median_merge(good)
    row["rounds_ok"] = len(good)
    if len(good) < len(rs):
        row["rounds_failed"] = [r["failed"] for r in rs if "failed" in r]
    return row


def round_dirs(work):
    """run.sh's round<N> directories in order, or WORKDIR itself (a run
    without rounds)."""
    ds = [d for d in glob.glob(os.path.join(work, "round*"))
          if re.fullmatch(r"round\d+", os.path.basename(d))]
    return sorted(ds, key=lambda d: int(os.path.basename(d)[5:])) or [work]


RATIOS = [  # (name, phase a, figure a, phase b, figure b): a / b
    ("kiln_cpu_over_perf_cpu", "kiln", "cpu_s", "perf", "cpu_s"),
    ("kiln_cpu_incl_bpf_over_perf_cpu", "kiln", "cpu_incl_bpf_s", "perf", "cpu_s"),
    ("kiln_cpu_over_perf_record_cpu", "kiln", "cpu_s", "perf", "record_cpu_s"),
    ("kiln_cpu_over_perf_dwarf_cpu", "kiln", "cpu_s", "perf_dwarf", "cpu_s"),
    ("kiln_cpu_incl_bpf_over_perf_dwarf_cpu", "kiln", "cpu_incl_bpf_s", "perf_dwarf", "cpu_s"),
    ("kiln_cpu_over_perf_dwarf_record_cpu", "kiln", "cpu_s", "perf_dwarf", "record_cpu_s"),
    ("kiln_cpu_incl_bpf_over_bpftrace_cpu_incl_bpf", "kiln", "cpu_incl_bpf_s",
     "bpftrace", "cpu_incl_bpf_s"),
    ("kiln_rss_over_bpftrace_rss", "kiln", "peak_rss_mb", "bpftrace", "peak_rss_mb"),
    ("kiln_rss_over_perf_rss", "kiln", "peak_rss_mb", "perf", "peak_rss_mb"),
    ("kiln_rss_over_perf_record_rss", "kiln", "peak_rss_mb", "perf", "record_peak_rss_mb"),
    ("kiln_rss_over_perf_dwarf_rss", "kiln", "peak_rss_mb", "perf_dwarf", "peak_rss_mb"),
    ("agent_cpu_over_perf_cpu", "agent", "cpu_s", "perf", "cpu_s"),
    ("agent_cpu_over_perf_dwarf_cpu", "agent", "cpu_s", "perf_dwarf", "cpu_s"),
    ("agent_rss_over_bpftrace_rss", "agent", "peak_rss_mb", "bpftrace", "peak_rss_mb"),
    ("agent_rss_over_perf_dwarf_rss", "agent", "peak_rss_mb", "perf_dwarf", "peak_rss_mb"),
    # per second of steady state (start-up and the final write left out)
    ("kiln_steady_incl_bpf_over_perf_steady", "kiln", "steady_incl_bpf_ms_per_s",
     "perf", "steady_ms_per_s"),
    ("kiln_steady_incl_bpf_over_perf_dwarf_steady", "kiln", "steady_incl_bpf_ms_per_s",
     "perf_dwarf", "steady_ms_per_s"),
    ("kiln_steady_incl_bpf_over_bpftrace_steady_incl_bpf", "kiln", "steady_incl_bpf_ms_per_s",
     "bpftrace", "steady_incl_bpf_ms_per_s"),
    ("agent_steady_incl_bpf_over_perf_steady", "agent", "steady_incl_bpf_ms_per_s",
     "perf", "steady_ms_per_s"),
]


def ratios_of(by):
    out = {}
    for name, a, ka, b, kb in RATIOS:
        va, vb = by[a].get(ka), by[b].get(kb)
        out[name] = round(va / vb, 3) if va and vb else None
    return out


def cmd_report(work, seconds, out):
    seconds = float(seconds)
    meta = json.loads(read(os.path.join(work, "meta.json")) or "{}")
    hz = meta.get("hz", 97)
    rounds = []
    for rd in round_dirs(work):
        order = (read(os.path.join(rd, "order")) or "").split() or [p for p, _ in PHASES]
        rounds.append({
            "round": os.path.basename(rd), "order": order,
            "rows": [phase_row(rd, seconds, p, l, hz) for p, l in PHASES],
            "extra_baselines": [phase_row(rd, seconds, p, p, hz) for p in EXTRA_BASELINES
                                if os.path.isdir(os.path.join(rd, p))]})
    # Every baseline run of every round: the reference of the throughput
    # columns, and their spread the noise.
    baselines = [r for rnd in rounds for r in rnd["rows"] + rnd["extra_baselines"]
                 if r["phase"].startswith("baseline")]
    base_iters = [r["spin"]["iterations"] for r in baselines if r.get("spin")]
    base = sum(base_iters) / len(base_iters) if base_iters else None
    # Iterations per CPU second spin_counter got: the in-task cost of
    # sampling (BPF program, perf's unwinding, interrupts, cache misses)
    # without the CPU share the scheduler gave it, so other load on the host
    # disturbs it far less than plain throughput.
    base_eff = [r["spin"]["iterations"] / r["spin"]["cpu_s"]
                for r in baselines if r.get("spin") and r["spin"]["cpu_s"]]
    eff = sum(base_eff) / len(base_eff) if base_eff else None
    for rnd in rounds:
        for r in rnd["rows"] + rnd["extra_baselines"]:
            if r["phase"] in MORE_LOAD_PHASES:
                pass
            elif base and r.get("spin"):
                r["throughput_pct"] = round(100.0 * r["spin"]["iterations"] / base, 2)
            if eff and r.get("spin") and r["spin"]["cpu_s"] and r["phase"] not in MORE_LOAD_PHASES:
                r["iters_per_cpu_s_pct"] = round(
                    100.0 * r["spin"]["iterations"] / r["spin"]["cpu_s"] / eff, 2)
            if "failed" not in r:
                r["foreign_cpu_s"] = foreign_cpu(r)
        rnd["ratios"] = ratios_of({r["phase"]: r for r in rnd["rows"]})
    rows = [median_row([rnd["rows"][i] for rnd in rounds]) for i in range(len(PHASES))]
    extra = [r for rnd in rounds for r in rnd["extra_baselines"]]
    nr = len(rounds)
    for r in rows:
        if 0 < r["rounds_ok"] < nr:
            r["label"] += f" ({r['rounds_ok']} of {nr} rounds)"
    print(f"## kiln benchmark, {meta.get('date', '?')}: {nr} round(s), "
          f"{seconds:g} s per run, "
          f"{meta.get('cpus', '?')} CPUs, kernel {meta.get('kernel', '?')}"
          + (f", one VM exit {meta['vm_exit_us']:g} us (CPUID; bare metal ~0.1, "
             "a VM 1-2, nested ~10: every wakeup, timer re-arm and self-IPI "
             "costs one or more)" if meta.get("vm_exit_us") is not None else ""))
    print()
    print(f"Phases ran in rotated order, one round after another: "
          + "; ".join(f"{rnd['round']}: {' '.join(rnd['order'])}" for rnd in rounds) + ".")
    print(f"Each figure below is its median over the {nr} round(s); each ratio the "
          "median of the rounds' ratios.")
    print()
    print("Cost:")
    print()
    print("| run | CPU s | CPU s incl BPF | steady CPU ms/s (incl BPF) | peak RSS MB "
          "| BPF maps MB | BPF ns/sample | throughput vs baseline % | iters per CPU-s vs baseline % |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "failed" in r:
            print(f"| {r['label']} | failed: {r['failed']} | | | | | | | |")
            continue
        thr = f"{fmt(r.get('throughput_pct'))} | {fmt(r.get('iters_per_cpu_s_pct'))}"
        if r["phase"] == "baseline":
            print(f"| {r['label']} | - | - | - | - | - | - | {thr} |")
            continue
        if r["phase"] in PERF_PHASES:
            cpu = f"{r['cpu_s']:.3f} ({r['record_cpu_s']:.3f} + {r['script_cpu_s']:.3f})"
            incl, ns = "n/a (not BPF)", "n/a"
            steady = f"{fmt(r.get('steady_ms_per_s'), 2)} (n/a)"
        else:
            cpu = f"{r['cpu_s']:.3f}"
            incl = fmt(r.get("cpu_incl_bpf_s"), 3)
            ns = fmt(r.get("bpf_ns_per_sample"), 0)
            steady = f"{fmt(r.get('steady_ms_per_s'), 2)} ({fmt(r.get('steady_incl_bpf_ms_per_s'), 2)})"
        maps = "n/a" if r["phase"] in PERF_PHASES else fmt(r.get("bpf_maps_mb"), 1)
        print(f"| {r['label']} | {cpu} | {incl} | {steady} | {r['peak_rss_mb']:.1f} | {maps} | {ns} | {thr} |")
    print()
    print("Accuracy:")
    print()
    print("| run | first sample ms | share error points | frames symbolized %, "
          "workloads (all processes) | leaf symbolized %, workloads (all) "
          "| short-lived samples / expected | short-lived coverage % "
          "| short-lived symbolized % |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "failed" in r or r["phase"] == "baseline":
            continue
        s = r.get("share")
        shr = (f"{s['error_points']:+.2f} ({s['hot_three_pct']:.1f}% of "
               f"{s['samples']})" if s else f"n/a: {r.get('share_note') or 'no hot_* samples'}")
        sym = r.get("symbolized") or {}
        w, a = sym.get("workloads") or {}, sym.get("all") or {}
        sl = r.get("short_lived") or {}
        print(f"| {r['label']} | {fmt(r.get('first_sample_ms'), 0)} | {shr} "
              f"| {fmt(w.get('frames_pct'), 1)} ({fmt(a.get('frames_pct'), 1)}) "
              f"| {fmt(w.get('leaf_pct'), 1)} ({fmt(a.get('leaf_pct'), 1)}) "
              f"| {sl.get('samples', '-')} / {fmt(sl.get('expected_samples'), 0)} "
              f"| {fmt(sl.get('coverage_pct'), 1)} | {fmt(sl.get('symbolized_pct'), 1)} |")
    print()

    by = {r["phase"]: r for r in rows}
    ratios = {name: median_merge([rnd["ratios"][name] for rnd in rounds])
              for name, *_ in RATIOS}
    print(f"Ratios (median of the {nr} rounds' ratios; each round's in brackets, "
          "in round order):")
    print()
    print("| ratio | median | rounds |")
    print("|---|---|---|")
    for name, *_ in RATIOS:
        each = ", ".join(fmt(rnd["ratios"][name], 3) for rnd in rounds)
        print(f"| {name} | {fmt(ratios[name], 3)} | {each} |")
    print()
    print("Headline: "
          f"kiln CPU / perf CPU (record+script) = {fmt(ratios['kiln_cpu_over_perf_cpu'], 3)} "
          f"(incl. kiln's BPF time: {fmt(ratios['kiln_cpu_incl_bpf_over_perf_cpu'], 3)}; "
          f"vs perf record alone: {fmt(ratios['kiln_cpu_over_perf_record_cpu'], 3)}); "
          f"kiln CPU / perf --call-graph dwarf CPU (record+script) = "
          f"{fmt(ratios['kiln_cpu_over_perf_dwarf_cpu'], 3)} (incl. kiln's BPF time: "
          f"{fmt(ratios['kiln_cpu_incl_bpf_over_perf_dwarf_cpu'], 3)}; vs its record alone: "
          f"{fmt(ratios['kiln_cpu_over_perf_dwarf_record_cpu'], 3)}); "
          f"kiln RSS / bpftrace RSS = {fmt(ratios['kiln_rss_over_bpftrace_rss'], 3)}; "
          f"kiln RSS / perf RSS = {fmt(ratios['kiln_rss_over_perf_rss'], 3)} "
          f"(perf record alone: {fmt(ratios['kiln_rss_over_perf_record_rss'], 3)}); "
          f"kiln RSS / perf dwarf RSS = {fmt(ratios['kiln_rss_over_perf_dwarf_rss'], 3)}; "
          "per second of steady state, kiln CPU incl. BPF / perf's = "
          f"{fmt(ratios['kiln_steady_incl_bpf_over_perf_steady'], 3)} (/ perf dwarf's: "
          f"{fmt(ratios['kiln_steady_incl_bpf_over_perf_dwarf_steady'], 3)}; / bpftrace's "
          f"incl. BPF: {fmt(ratios['kiln_steady_incl_bpf_over_bpftrace_steady_incl_bpf'], 3)})")
    a = by["agent"]
    incl = a.get("cpu_incl_bpf_s")
    print()
    print("Agent: "
          f"kiln agent CPU / perf CPU (record+script) = {fmt(ratios['agent_cpu_over_perf_cpu'], 3)} "
          f"(/ perf dwarf: {fmt(ratios['agent_cpu_over_perf_dwarf_cpu'], 3)}); "
          f"kiln agent RSS / bpftrace RSS = {fmt(ratios['agent_rss_over_bpftrace_rss'], 3)}; "
          f"CPU = {fmt(a.get('cpu_pct_of_core'), 3)}% of one core "
          f"(incl. BPF: {fmt(incl and 100 * incl / seconds, 3)}%; target < 0.5%), "
          f"in steady state {fmt(a.get('steady_ms_per_s') and a['steady_ms_per_s'] / 10, 3)}% "
          f"(incl. BPF: {fmt(a.get('steady_incl_bpf_ms_per_s') and a['steady_incl_bpf_ms_per_s'] / 10, 3)}%; "
          f"/ perf's: {fmt(ratios['agent_steady_incl_bpf_over_perf_steady'], 3)}); "
          f"peak RSS {fmt(a.get('peak_rss_mb'), 1)} MB (target: steady < 30 MB) "
          f"plus {fmt(a.get('bpf_maps_mb'), 1)} MB of BPF maps; "
          f"{a.get('profile_files', 0)} profile files merged for the share.")
    for phase, what in (("agent_fp", "the agent with frame pointers only (--unwind-memory 0)"),
                        ("agent_interp", "the agent with Debian's python3 and ruby also running")):
        a = by.get(phase) or {}
        if "failed" in a:
            print(f"\n{what[0].upper() + what[1:]}: failed: {a['failed']}")
            continue
        incl = a.get("cpu_incl_bpf_s")
        print(f"\n{what[0].upper() + what[1:]}: "
              f"CPU = {fmt(a.get('cpu_pct_of_core'), 3)}% of one core "
              f"(incl. BPF: {fmt(incl and 100 * incl / seconds, 3)}%), in steady state "
              f"{fmt(a.get('steady_ms_per_s') and a['steady_ms_per_s'] / 10, 3)}% (incl. BPF: "
              f"{fmt(a.get('steady_incl_bpf_ms_per_s') and a['steady_incl_bpf_ms_per_s'] / 10, 3)}%); "
              f"BPF {fmt(a.get('bpf_ns_per_sample'), 0)} ns a sample; "
              f"peak RSS {fmt(a.get('peak_rss_mb'), 1)} MB plus "
              f"{fmt(a.get('bpf_maps_mb'), 1)} MB of BPF maps.")
    print()
    targets = judge(by, baselines, ratios)
    print(f"Targets (issue 7), medians of this run's {nr} round(s):")
    for t in targets:
        print(f"- {'met' if t['met'] else 'NOT MET' if t['met'] is False else 'n/a'}: "
              f"{t['target']}: {t['figure']}")
    spread = (100.0 * (max(base_iters) - min(base_iters)) / base
              if len(base_iters) > 1 else None)
    if spread is not None and spread > NOISY_HOST_PCT:
        # (judged all the same: a warning beside the figures, not a pass)
        print(f"- warning: the baseline runs differ by {spread:.1f} % in throughput "
              f"(over {NOISY_HOST_PCT:g} %): the host's own load moved during this "
              "run, and each tool's CPU and BPF time with it; compare a quieter run")
    print()
    print("Notes:")
    print("- CPU s = user+sys of the profiler's process tree (/usr/bin/time); perf's "
          "rows add `perf script`, which it needs to produce stacks. perf "
          "--call-graph dwarf copies 8 KiB of each sample's user stack into "
          "perf.data and `perf script` unwinds it from the binaries' CFI, the "
          "offline counterpart of kiln's table-driven unwinding. Peak RSS is "
          "the largest single process.")
    print("- kiln agent (files): `kiln agent --output-dir DIR --metrics-addr off "
          f"--interval 10`, stopped with SIGTERM after {seconds:g} s (it then "
          "writes its last partial interval). Its CPU includes building and "
          "writing each interval's files (pprof per service, folded, "
          "latest.html); its share merges all its pprof files.")
    print("- CPU s incl BPF adds the run time of the profiler's BPF programs "
          f"(BPF stats on via {meta.get('bpf_stats', '?')}; read by bench_probe every 0.25 s from 2 s "
          "before the end, the last reading before the profiler exits kept, so "
          "up to its last ~0.25 s may be missing). That time is spent "
          "in the interrupted task, not charged to the profiler. perf's "
          "in-kernel sampling and unwinding cost is not a BPF program and is "
          "not measurable this way: its row leaves it out.")
    print(f"- Throughput: iterations of spin_counter (one thread per CPU, "
          f"{seconds:g} s) next to cpu_ratio, vs the mean of the baseline runs. "
          "Iters per CPU-s divides by the CPU time spin_counter got: it keeps "
          "the cost paid inside the sampled task (BPF program, perf's kernel "
          "unwinding, interrupts) and drops most of the effect of other load.")
    if spread is not None:
        espread = 100.0 * (max(base_eff) - min(base_eff)) / eff
        print(f"- Baseline noise: the {len(base_iters)} baseline runs differ by "
              f"{spread:.2f}% in throughput and {espread:.2f}% in iters per CPU-s "
              "(differences below that are noise).")
    fc = [(r["label"], r.get("foreign_cpu_s"), (r.get("host") or {}).get("steal_s"))
          for r in rows + extra if "failed" not in r]
    print("- CPU s taken during each window by other processes on this host "
          "(busy CPU minus spin_counter, cpu_ratio, churn with its children and "
          "the profiler; steal in "
          "brackets): " + ", ".join(f"{l} {fmt(v)} ({fmt(st)})" for l, v, st in fc)
          + f" of {seconds * int(meta.get('cpus', 1)):g} available. More than a "
          "few tenths make the throughput column unreliable.")
    print(f"- Share error = hot_three's share of the samples that hold hot_three "
          f"or hot_one, minus the {TRUTH:g}% truth, in points; sampling alone "
          "gives a standard deviation of 100*sqrt(0.75*0.25/n) points "
          "(1.4 at n=1000). Every cpu_ratio on the host counts (all have the "
          "same truth), so another user's cpu_ratio adds samples.")
    if meta.get("busy_start"):
        print(f"- WARNING: the host was not quiet when the run started "
              f"({meta['busy_start']}). Figures are noisier.")
    if meta.get("foreign_perf_event_progs"):
        print(f"- WARNING: {meta['foreign_perf_event_progs']} BPF perf_event "
              "program(s) of some other process were loaded when the run "
              "started (another profiler?); load average was "
              f"{meta.get('loadavg_start')}. Figures are noisier.")
    k = by["kiln"]
    ks = k.get("kiln_stats")
    if ks:
        o = ks.get("outcomes", {})
        dropped = sum(v for kk, v in o.items() if kk not in ("sampled", "idle", "filtered"))
        kf, kr = ks.get("kernel_frames", 0), ks.get("kernel_resolved", 0)
        uf, ur = ks.get("user_frames", 0), ks.get("user_resolved", 0)
        print(f"- kiln --stats: drained {ks.get('drained')}, dropped {dropped} "
              f"({', '.join(f'{kk} {v}' for kk, v in o.items() if v)}), "
              f"kernel frames resolved {kr}/{kf}, user frames resolved {ur}/{uf}, "
              f"invariant failures {ks.get('invariant_failures')}, "
              f"max drain {ks.get('drain_ns_max', 0) / 1e6:.1f} ms, "
              f"self-reported kiln_sample runs {ks.get('bpf_run_cnt')} "
              f"vs outcomes counted {sum(o.values())}, "
              f"{ks.get('bpf_run_ns')} ns clocked by the programs, "
              f"{ks.get('bpf_kernel_run_ns')} ns by the kernel's statistics.")

    result = {"meta": meta, "seconds": seconds, "truth_hot_three_pct": TRUTH,
              "baseline_iterations_mean": base, "rows": rows,
              "extra_baselines": extra, "ratios": ratios, "targets": targets,
              "baseline_spread_pct": spread and round(spread, 2),
              "rounds": rounds}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print()
    print(f"Results: {out}")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "hold-stats":
        cmd_hold_stats()
    elif len(sys.argv) == 5 and sys.argv[1] == "report":
        cmd_report(*sys.argv[2:])
    else:
        sys.exit(__doc__)
