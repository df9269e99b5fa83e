#!/usr/bin/python3
"""Helpers for tests/bench/run.sh (stdlib only; run with /usr/bin/python3).

  analyze.py bpfstats ROOT_PID COMM OUT.json
      BPF programs held open by the descendants of ROOT_PID named COMM, with
      run_time_ns / run_cnt from `bpftool prog show -j` (needs
      kernel.bpf_stats_enabled=1). Writes a JSON list.
  analyze.py hold-stats
      Turns BPF run-time statistics on with bpf(BPF_ENABLE_STATS) and keeps
      them on until killed (the kernel turns them off when the fd closes).
      Unlike writing kernel.bpf_stats_enabled, this cannot be undone by
      another process resetting the sysctl, and leaves nothing to restore.
      Prints "on" once enabled, or "failed: ..." and exits 1.
  analyze.py report WORKDIR SECONDS OUT.json
      Reads every phase directory of WORKDIR, prints the markdown report on
      stdout and writes the same figures to OUT.json.

Phase directories (written by run.sh): WORKDIR/<phase>/ with
  failed        one line: why the phase has no figures (absent when it ran)
  time.txt      `/usr/bin/time -f '%U %S %M'` of the profiler
  script_time.txt  the same for `perf script` (perf only)
  spin.txt      spin_counter's line: iterations=N cpu_s=X wall_s=Y
  bpf.json      output of `bpfstats` taken just before the phase ended
  kiln.pb.gz, kiln.json, perf.txt, bpftrace.txt  the profiles
  profiles/     the agent's output dir: <unix>-<service>.pb.gz per interval
"""
import glob
import json
import os
import re
import subprocess
import sys

PHASES = [  # (directory, row label)
    ("baseline", "baseline"),
    ("kiln", "kiln record"),
    ("agent", "kiln agent (files)"),
    ("perf", "perf record (+script)"),
    ("bpftrace", "bpftrace"),
]
EXTRA_BASELINES = ["baseline2"]
TRUTH = 75.0  # cpu_ratio: hot_three gets 3 rounds in 4, hot_one 1 in 4


# ---------------------------------------------------------------- bpfstats

def descendants(root, comm):
    """Pids below root (any depth) whose comm is `comm`."""
    parent, names = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: split at the last ')'
        names[int(d)] = s[s.index("(") + 1:s.rindex(")")]
        parent[int(d)] = int(s[s.rindex(")") + 2:].split()[1])
    out = []
    for pid, name in names.items():
        if name != comm:
            continue
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            out.append(pid)
    return out


def prog_ids_of(pid):
    ids = set()
    fddir = f"/proc/{pid}/fdinfo"
    try:
        fds = os.listdir(fddir)
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"{fddir}/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def cmd_bpfstats(root, comm, out):
    ids = set()
    for pid in descendants(int(root), comm):
        ids |= prog_ids_of(pid)
    progs = []
    if ids:
        r = subprocess.run(["bpftool", "prog", "show", "-j"],
                           capture_output=True, text=True)
        for p in json.loads(r.stdout or "[]"):
            if p.get("id") in ids:
                progs.append({k: p.get(k) for k in
                              ("id", "name", "type", "run_time_ns", "run_cnt")})
    with open(out, "w") as f:
        json.dump(progs, f)


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


def parse_spin(path):
    text = read(path) or ""
    m = re.search(r"iterations=(\d+) cpu_s=([\d.]+) wall_s=([\d.]+)", text)
    if not m:
        return None
    return {"iterations": int(m.group(1)), "cpu_s": float(m.group(2)),
            "wall_s": float(m.group(3))}


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
    """Busy CPU s of the window not taken by spin_counter, cpu_ratio or the
    profiler: other processes on the host (and kernel threads)."""
    h, sp = r.get("host"), r.get("spin")
    if not h or not sp:
        return None
    prof = r.get("record_cpu_s", r.get("cpu_s", 0.0))
    return round(h["busy_s"] - sp["cpu_s"] - h["cpu_ratio_cpu_s"] - prof, 2)


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


def classify(frames, acc):
    frames = set(frames)
    if "hot_three" in frames:
        acc[0] += 1
    elif "hot_one" in frames:
        acc[1] += 1


def share_pprof(paths, tmpdir):
    """Samples (not nanoseconds) per stack via `go tool pprof -traces`, which
    merges the profiles when given several."""
    env = dict(os.environ, PPROF_TMPDIR=tmpdir, HOME=tmpdir)
    r = subprocess.run(["go", "tool", "pprof", "-symbolize=none",
                        "-sample_index=samples", "-traces", *paths],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, "go tool pprof failed: " + r.stderr.strip()[-200:]
    acc = [0, 0]
    count, frames = None, []
    for line in r.stdout.splitlines() + ["-----------+"]:
        if line.startswith("-----------+"):
            if count is not None:
                for _ in range(count):
                    classify(frames, acc)
            count, frames = None, []
            continue
        m = re.match(r"^\s*(\d+)\s{2,}(\S.*)$", line)
        if m and count is None and not frames:
            count, frames = int(m.group(1)), [m.group(2).strip()]
        elif count is not None:
            frames.append(line.strip())
    return share(*acc), None


def share_perf(path):
    """perf script: one block per sample, frames '\\t addr sym+0xoff (dso)'."""
    text = read(path)
    if text is None:
        return None, "no perf script output"
    acc = [0, 0]
    for block in text.split("\n\n"):
        frames = []
        for line in block.splitlines()[1:]:
            m = re.match(r"^\s+[0-9a-f]+\s+(.+?)(\+0x[0-9a-f]+)?\s+\(.*\)$",
                         line)
            if m:
                frames.append(m.group(1))
        classify(frames, acc)
    return share(*acc), None


def share_bpftrace(path):
    """bpftrace map: '@[\\n kframes\\n, \\n uframes\\n, comm]: N'."""
    text = read(path)
    if text is None:
        return None, "no bpftrace output"
    acc = [0, 0]
    unresolved = 0
    for m in re.finditer(r"@\[(.*?)\]: (\d+)", text, re.S):
        body, n = m.group(1), int(m.group(2))
        frames = [re.sub(r"\+\d+$", "", l.strip()) for l in body.splitlines()]
        comm = body.rsplit(",", 1)[-1].strip()
        for _ in range(n):
            classify(frames, acc)
        if comm == "cpu_ratio" and not ({"hot_three", "hot_one"} & set(frames)):
            unresolved += n
    s = share(*acc)
    if s is not None:
        s["cpu_ratio_samples_without_hot_frame"] = unresolved
    return s, None


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


def phase_row(work, seconds, phase, label):
    d = os.path.join(work, phase)
    row = {"phase": phase, "label": label}
    failed = read(os.path.join(d, "failed"))
    if failed is not None or not os.path.isdir(d):
        row["failed"] = (failed or "not run").strip()
        return row
    row["spin"] = parse_spin(os.path.join(d, "spin.txt"))
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
    if phase == "perf":
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
        row["share"], row["share_note"] = share_perf(os.path.join(d, "perf.txt"))
        return row
    try:
        progs = json.loads(read(os.path.join(d, "bpf.json")) or "[]")
    except ValueError:
        progs = []
    if phase in ("kiln", "agent"):  # both sample with kiln's kiln_sample
        bpf = bpf_figures(progs, lambda p: p.get("name") == "kiln_sample")
    else:
        bpf = bpf_figures(progs, lambda p: p.get("type") == "perf_event")
    if phase == "kiln":
        row["share"], row["share_note"] = share_pprof(
            [os.path.join(d, "kiln.pb.gz")], d)
        try:
            row["kiln_stats"] = json.loads(read(os.path.join(d, "kiln.json")))
        except (TypeError, ValueError):
            row["kiln_stats"] = None
    elif phase == "agent":
        files = sorted(glob.glob(os.path.join(d, "profiles", "*.pb.gz")))
        row["profile_files"] = len(files)
        row["share"], row["share_note"] = share_pprof(files, d)
    else:
        row["share"], row["share_note"] = share_bpftrace(
            os.path.join(d, "bpftrace.txt"))
    row["bpf"] = bpf
    if bpf and bpf["sample_run_cnt"]:
        row["bpf_ns_per_sample"] = bpf["ns_per_sample"]
        row["cpu_incl_bpf_s"] = round(row["cpu_s"] + bpf["run_time_ns_total"] / 1e9, 3)
    return row


def fmt(v, nd=2):
    return "-" if v is None else f"{v:.{nd}f}"


def cmd_report(work, seconds, out):
    seconds = float(seconds)
    rows = [phase_row(work, seconds, p, l) for p, l in PHASES]
    extra = [phase_row(work, seconds, p, p) for p in EXTRA_BASELINES
             if os.path.isdir(os.path.join(work, p))]
    base_iters = [r["spin"]["iterations"] for r in [rows[0]] + extra
                  if r.get("spin")]
    base = sum(base_iters) / len(base_iters) if base_iters else None
    # Iterations per CPU second spin_counter got: the in-task cost of
    # sampling (BPF program, perf's unwinding, interrupts, cache misses)
    # without the CPU share the scheduler gave it, so other load on the host
    # disturbs it far less than plain throughput.
    base_eff = [r["spin"]["iterations"] / r["spin"]["cpu_s"]
                for r in [rows[0]] + extra if r.get("spin") and r["spin"]["cpu_s"]]
    eff = sum(base_eff) / len(base_eff) if base_eff else None
    for r in rows + extra:
        if base and r.get("spin"):
            r["throughput_pct"] = round(100.0 * r["spin"]["iterations"] / base, 2)
        if eff and r.get("spin") and r["spin"]["cpu_s"]:
            r["iters_per_cpu_s_pct"] = round(
                100.0 * r["spin"]["iterations"] / r["spin"]["cpu_s"] / eff, 2)

    for r in rows + extra:
        if "failed" not in r:
            r["foreign_cpu_s"] = foreign_cpu(r)
    meta = json.loads(read(os.path.join(work, "meta.json")) or "{}")
    print(f"## kiln benchmark, {meta.get('date', '?')}: {seconds:g} s per run, "
          f"{meta.get('cpus', '?')} CPUs, kernel {meta.get('kernel', '?')}")
    print()
    print("| run | CPU s | CPU s incl BPF | peak RSS MB | BPF ns/sample "
          "| throughput vs baseline % | iters per CPU-s vs baseline % "
          "| share error points |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "failed" in r:
            print(f"| {r['label']} | failed: {r['failed']} | | | | | | |")
            continue
        thr = f"{fmt(r.get('throughput_pct'))} | {fmt(r.get('iters_per_cpu_s_pct'))}"
        if r["phase"] == "baseline":
            print(f"| {r['label']} | - | - | - | - | {thr} | - |")
            continue
        s = r.get("share")
        shr = (f"{s['error_points']:+.2f} ({s['hot_three_pct']:.1f}% of "
               f"{s['samples']})" if s else f"n/a: {r.get('share_note') or 'no hot_* samples'}")
        if r["phase"] == "perf":
            cpu = f"{r['cpu_s']:.3f} ({r['record_cpu_s']:.3f} + {r['script_cpu_s']:.3f})"
            incl, ns = "n/a (not BPF)", "n/a"
        else:
            cpu = f"{r['cpu_s']:.3f}"
            incl = fmt(r.get("cpu_incl_bpf_s"), 3)
            ns = fmt(r.get("bpf_ns_per_sample"), 0)
        print(f"| {r['label']} | {cpu} | {incl} | {r['peak_rss_mb']:.1f} | {ns} "
              f"| {thr} | {shr} |")

    by = {r["phase"]: r for r in rows}
    ratios = {}

    def ratio(name, a, ka, b, kb):
        va, vb = by[a].get(ka), by[b].get(kb)
        ratios[name] = round(va / vb, 3) if va and vb else None

    ratio("kiln_cpu_over_perf_cpu", "kiln", "cpu_s", "perf", "cpu_s")
    ratio("kiln_cpu_incl_bpf_over_perf_cpu", "kiln", "cpu_incl_bpf_s", "perf", "cpu_s")
    ratio("kiln_cpu_over_perf_record_cpu", "kiln", "cpu_s", "perf", "record_cpu_s")
    ratio("kiln_rss_over_bpftrace_rss", "kiln", "peak_rss_mb", "bpftrace", "peak_rss_mb")
    ratio("kiln_rss_over_perf_rss", "kiln", "peak_rss_mb", "perf", "peak_rss_mb")
    ratio("kiln_rss_over_perf_record_rss", "kiln", "peak_rss_mb", "perf", "record_peak_rss_mb")
    ratio("agent_cpu_over_perf_cpu", "agent", "cpu_s", "perf", "cpu_s")
    ratio("agent_rss_over_bpftrace_rss", "agent", "peak_rss_mb", "bpftrace", "peak_rss_mb")
    print()
    print("Headline: "
          f"kiln CPU / perf CPU (record+script) = {fmt(ratios['kiln_cpu_over_perf_cpu'], 3)} "
          f"(incl. kiln's BPF time: {fmt(ratios['kiln_cpu_incl_bpf_over_perf_cpu'], 3)}; "
          f"vs perf record alone: {fmt(ratios['kiln_cpu_over_perf_record_cpu'], 3)}); "
          f"kiln RSS / bpftrace RSS = {fmt(ratios['kiln_rss_over_bpftrace_rss'], 3)}; "
          f"kiln RSS / perf RSS = {fmt(ratios['kiln_rss_over_perf_rss'], 3)} "
          f"(perf record alone: {fmt(ratios['kiln_rss_over_perf_record_rss'], 3)})")
    a = by["agent"]
    incl = a.get("cpu_incl_bpf_s")
    print()
    print("Agent: "
          f"kiln agent CPU / perf CPU (record+script) = {fmt(ratios['agent_cpu_over_perf_cpu'], 3)}; "
          f"kiln agent RSS / bpftrace RSS = {fmt(ratios['agent_rss_over_bpftrace_rss'], 3)}; "
          f"CPU = {fmt(a.get('cpu_pct_of_core'), 3)}% of one core "
          f"(incl. BPF: {fmt(incl and 100 * incl / seconds, 3)}%; target < 0.5%); "
          f"peak RSS {fmt(a.get('peak_rss_mb'), 1)} MB (target: steady < 30 MB); "
          f"{a.get('profile_files', 0)} profile files merged for the share.")
    print()
    print("Notes:")
    print("- CPU s = user+sys of the profiler's process tree (/usr/bin/time); perf's "
          "row adds `perf script`, which it needs to produce stacks. Peak RSS is "
          "the largest single process.")
    print("- kiln agent (files): `kiln agent --output-dir DIR --metrics-addr off "
          f"--interval 10`, stopped with SIGTERM after {seconds:g} s (it then "
          "writes its last partial interval). Its CPU includes building and "
          "writing each interval's files (pprof per service, folded, "
          "latest.html); its share merges all its pprof files.")
    print("- CPU s incl BPF adds the run time of the profiler's BPF programs "
          f"(BPF stats on via {meta.get('bpf_stats', '?')}; read with bpftool ~0.5 s before the "
          "profiler exits, so the last ~0.5 s is missing). That time is spent "
          "in the interrupted task, not charged to the profiler. perf's "
          "in-kernel sampling and unwinding cost is not a BPF program and is "
          "not measurable this way: its row leaves it out.")
    print(f"- Throughput: iterations of spin_counter (one thread per CPU, "
          f"{seconds:g} s) next to cpu_ratio, vs the mean of the baseline runs. "
          "Iters per CPU-s divides by the CPU time spin_counter got: it keeps "
          "the cost paid inside the sampled task (BPF program, perf's kernel "
          "unwinding, interrupts) and drops most of the effect of other load.")
    if len(base_iters) > 1:
        spread = 100.0 * (max(base_iters) - min(base_iters)) / base
        espread = 100.0 * (max(base_eff) - min(base_eff)) / eff
        print(f"- Baseline noise: the {len(base_iters)} baseline runs differ by "
              f"{spread:.2f}% in throughput and {espread:.2f}% in iters per CPU-s "
              "(differences below that are noise).")
    fc = [(r["label"], r.get("foreign_cpu_s"), (r.get("host") or {}).get("steal_s"))
          for r in rows + extra if "failed" not in r]
    print("- CPU s taken during each window by other processes on this host "
          "(busy CPU minus spin_counter, cpu_ratio and the profiler; steal in "
          "brackets): " + ", ".join(f"{l} {fmt(v)} ({fmt(st)})" for l, v, st in fc)
          + f" of {seconds * int(meta.get('cpus', 1)):g} available. More than a "
          "few tenths make the throughput column unreliable.")
    print(f"- Share error = hot_three's share of the samples that hold hot_three "
          f"or hot_one, minus the {TRUTH:g}% truth, in points; sampling alone "
          "gives a standard deviation of 100*sqrt(0.75*0.25/n) points "
          "(1.4 at n=1000). Every cpu_ratio on the host counts (all have the "
          "same truth), so another user's cpu_ratio adds samples.")
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
              f"{ks.get('bpf_run_ns')} ns.")

    result = {"meta": meta, "seconds": seconds, "truth_hot_three_pct": TRUTH,
              "baseline_iterations_mean": base, "rows": rows,
              "extra_baselines": extra, "ratios": ratios}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print()
    print(f"Results: {out}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "bpfstats":
        cmd_bpfstats(*sys.argv[2:])
    elif len(sys.argv) == 2 and sys.argv[1] == "hold-stats":
        cmd_hold_stats()
    elif len(sys.argv) == 5 and sys.argv[1] == "report":
        cmd_report(*sys.argv[2:])
    else:
        sys.exit(__doc__)
