#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""What kiln's unwind tables cost on this host (stdlib only; issue 14).

  unwind_cost.py [OUT.json]

Two parts, both with `kiln unwind-table --summary FILE` (KILN, default
build/kiln), which builds a file's table exactly as the agent does and prints
its rows, rules, bytes, the wall and CPU time of the build (getrusage around
it) and the process's peak RSS:

1. binaries: the largest binaries on a Debian host (libLLVM, clang's
   libclang-cpp and its executable, chromium, libstdc++, libruby,
   python3.11, libc), those present. UNWIND_ROUNDS rounds (default 3),
   each over every file in an order rotated by one per round; the build
   figures are the median of the rounds (min-max beside), rows and bytes
   are the same every round. The user+sys CPU of the whole `kiln
   unwind-table` process (getrusage of the children) is shown as well.
2. processes: every running process's executable file-backed mappings
   (/proc/*/maps, an 'x' permission and a path), one table per distinct
   file (device + inode, as the agent caches them), built once. Reports the
   distinct files and their total rows and bytes (what one table per file
   costs the whole host, against the default 16 MiB row budget), the
   process that needs the most, and the sum over processes (what it would
   cost without sharing tables). Mappings of a deleted or replaced file,
   and files in another mount namespace that cannot be opened from here,
   are counted, not built. The vDSO has no file and is left out.
   Taken twice: on the host as it is, then with the heavy programs of
   part 1 running (python3.11 and ruby sleeping, clang and llvm-symbolizer
   reading an open stdin, a headless chromium with its helper processes),
   started and stopped by this script (by process group id);
   UNWIND_BUSY=0 skips the second.
3. walk: what the BPF program costs per sample and per frame, the table
   walk against the frame-pointer walk (--unwind-memory 0): `kiln record
   -F 999 --stats` of Debian's python3.11 running tests/unwind/
   workloads/cpu.py for UNWIND_WALK_SECONDS CPU seconds (default 5), the
   two modes alternated over UNWIND_ROUNDS rounds. From the kernel's
   run-time statistics (held on by this script: kiln only clocks its
   programs itself, bpf_kernel_run_ns is the kernel's figure): BPF ns per program run (every run, the cheap
   early returns for other processes included) and per sampled run of the
   workload; the table walk's frames per stack and its ns per frame (the
   difference to the frame-pointer mode over the frames walked). Medians.
   Then an interpreter sample beside a native one: python3.11 cpu.py and
   ruby3.1 cpu.rb (tests/unwind/workloads/) recorded with their frames read
   and with --no-python / --no-ruby, alternated: BPF ns per sample.
4. record RSS: `kiln record -d 5 --stats` of the host while clang compiles
   a small file again and again (libLLVM's and libclang-cpp's tables and
   symbols, the largest here), first with an empty --unwind-cache (tables
   and symbol tables built), then with the one it filled (read from the
   disk); kiln's peak RSS (max_rss_kb), median of UNWIND_ROUNDS rounds.

Prints markdown; writes every figure to OUT.json (default
tests/bench/results/unwind-<date>.json). Needs root to read every
process's maps (fewer processes otherwise, as the counts say).
"""
import datetime
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KILN = os.path.realpath(os.environ.get("KILN", "build/kiln"))
ROUNDS = int(os.environ.get("UNWIND_ROUNDS", "3"))
BUSY = os.environ.get("UNWIND_BUSY", "1") == "1"
BUDGET = 16 << 20  # the default row budget of issue 14, bytes
ROW_BYTES = 4      # a row in the walker's map (include/kiln/unwind.h: two to an element)

# (label, candidate paths; the first that exists is used)
LIB = "/usr/lib/x86_64-linux-gnu"
BINARIES = [
    ("libLLVM", [f"{LIB}/libLLVM-14.so.1", f"{LIB}/libLLVM-15.so.1"]),
    ("libclang-cpp (clang's code)", [f"{LIB}/libclang-cpp.so.14", "/usr/lib/llvm-14/lib/libclang-cpp.so.14"]),
    ("clang (executable)", ["/usr/lib/llvm-14/bin/clang"]),
    ("chromium", ["/usr/lib/chromium/chromium"]),
    ("libstdc++", [f"{LIB}/libstdc++.so.6"]),
    ("libruby", [f"{LIB}/libruby-3.1.so.3.1"]),
    ("python3.11", ["/usr/bin/python3.11"]),
    ("libc", [f"{LIB}/libc.so.6"]),
]


def build(path):
    """Runs kiln unwind-table --summary on path: (figures dict, None) or
    (None, reason)."""
    try:
        p = subprocess.Popen([KILN, "unwind-table", "--summary", path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        return None, f"cannot run {KILN}: {e}"
    out, err = p.communicate()
    return parse(out, err, p.returncode)


def parse(out, err, rc):
    if rc != 0:
        msg = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
        return None, re.sub(r"^kiln: .*?: ", "", msg)
    line = out.strip().splitlines()[-1]
    figs = {}
    for k, v in re.findall(r"(\w+)=(\S+)", line.split(" file=")[0]):
        figs[k] = float(v) if "." in v else int(v)
    return figs, None


def timed_build(path):
    """build() plus the user+sys CPU of the whole kiln process: the
    children's times around it (one child at a time, reaped by build)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    figs, why = build(path)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if figs is not None:
        figs["process_cpu_ms"] = round(1000 * ((r1.ru_utime - r0.ru_utime)
                                               + (r1.ru_stime - r0.ru_stime)), 1)
    return figs, why


def med(xs):
    return statistics.median(xs) if xs else None


def part_binaries():
    files = []
    for label, cands in BINARIES:
        path = next((c for c in cands if os.path.isfile(c)), None)
        if path:
            files.append((label, path))
        else:
            files.append((label, None))
    present = [f for f in files if f[1]]
    runs = {label: [] for label, _ in present}
    errors = {}
    for r in range(ROUNDS):
        order = present[r % len(present):] + present[:r % len(present)] if present else []
        for label, path in order:
            figs, why = timed_build(path)
            if figs is None:
                errors[label] = why
            else:
                runs[label].append(figs)
    rows = []
    for label, path in files:
        row = {"label": label, "path": path}
        if not path:
            row["failed"] = "not installed"
        elif not runs.get(label):
            row["failed"] = errors.get(label, "no run")
        else:
            rs = runs[label]
            row["size_bytes"] = os.stat(path).st_size
            for k in ("rows", "rules", "bytes", "fdes", "cfi_bytes", "invalid_rows"):
                row[k] = rs[0][k]
            for k in ("build_ms", "cpu_ms", "process_cpu_ms", "max_rss_kb"):
                vals = [x[k] for x in rs]
                row[k] = med(vals)
                row[k + "_range"] = [min(vals), max(vals)]
            row["rounds"] = len(rs)
        rows.append(row)
    return rows


MAPS_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ ([0-9a-f]+):([0-9a-f]+) (\d+)\s+(.*)$")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def part_processes():
    try:
        my_root = os.stat("/")
    except OSError:
        my_root = None
    procs = {}      # pid -> {"comm", "files": set(keys)}
    files = {}      # (dev, ino) -> {"path", "pid", "note"}
    skipped = {"maps_unreadable": 0, "kernel_threads": 0}
    mappings = {"executable_file": 0, "deleted": 0, "anonymous_or_special": 0}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        maps = read(f"/proc/{pid}/maps")
        if maps is None:
            skipped["maps_unreadable"] += 1
            continue
        if not maps.strip():
            skipped["kernel_threads"] += 1
            continue
        comm = (read(f"/proc/{pid}/comm") or "?").strip()
        try:
            st = os.stat(f"/proc/{pid}/root")
            same_root = my_root is not None and (st.st_dev, st.st_ino) == (my_root.st_dev, my_root.st_ino)
        except OSError:
            same_root = False
        keys = set()
        for line in maps.splitlines():
            m = MAPS_LINE.match(line)
            if not m or "x" not in m.group(3):
                continue
            path = m.group(7)
            if not path.startswith("/"):
                mappings["anonymous_or_special"] += 1
                continue
            if path.endswith(" (deleted)"):
                mappings["deleted"] += 1
                continue
            mappings["executable_file"] += 1
            key = (int(m.group(4), 16), int(m.group(5), 16), int(m.group(6)))
            keys.add(key)
            if key not in files:
                files[key] = {"path": path if same_root else f"/proc/{pid}/root{path}",
                              "pid": pid}
        procs[pid] = {"comm": comm, "files": keys}

    # Build each distinct file once, checking it is still the mapped one.
    cpu_ms = 0.0
    refused = {}
    for key, f in sorted(files.items(), key=lambda kv: kv[1]["path"]):
        try:
            st = os.stat(f["path"])
            if st.st_ino != key[2]:
                f["failed"] = "replaced on disk"
        except OSError as e:
            f["failed"] = e.strerror
        if "failed" not in f:
            figs, why = timed_build(f["path"])
            if figs is None:
                f["failed"] = why
            else:
                f.update(rows=figs["rows"], bytes=figs["bytes"], cpu_ms=figs["cpu_ms"])
                cpu_ms += figs["cpu_ms"]
        if "failed" in f:
            refused.setdefault(f["failed"], []).append(f["path"])

    built = [f for f in files.values() if "rows" in f]
    per_proc = []
    for pid, p in procs.items():
        fs = [files[k] for k in p["files"]]
        per_proc.append({"pid": pid, "comm": p["comm"], "files": len(fs),
                         "rows": sum(f.get("rows", 0) for f in fs),
                         "bytes": sum(f.get("bytes", 0) for f in fs)})
    per_proc.sort(key=lambda x: -x["rows"])
    total_rows = sum(f["rows"] for f in built)
    total_bytes = sum(f["bytes"] for f in built)
    largest = sorted(built, key=lambda f: -f["rows"])[:10]
    return {
        "processes": len(procs), "skipped": skipped, "mappings": mappings,
        "distinct_files": len(files), "files_built": len(built),
        "files_not_built": refused,
        "total_rows": total_rows, "total_bytes": total_bytes,
        "total_build_cpu_ms": round(cpu_ms, 1),
        "budget_bytes": BUDGET,
        "budget_share_pct": round(100.0 * total_rows * ROW_BYTES / BUDGET, 1),
        "rows_fitting_budget": BUDGET // ROW_BYTES,
        "max_process": per_proc[0] if per_proc else None,
        "sum_over_processes_rows": sum(p["rows"] for p in per_proc),
        "sum_over_processes_bytes": sum(p["bytes"] for p in per_proc),
        "top_processes": per_proc[:5],
        "largest_files": [{"path": f["path"], "rows": f["rows"], "bytes": f["bytes"]}
                          for f in largest],
    }


# Programs that map the large binaries of part 1 and stay up until killed.
CHROMIUM_DIR = f"/tmp/kiln-unwind-cost-chromium.{os.getpid()}"
HEAVY = [
    ["python3.11", "-c", "import time; time.sleep(600)"],
    ["ruby", "-e", "sleep 600"],
    ["clang-14", "-fsyntax-only", "-x", "c", "-"],
    ["llvm-symbolizer-14"],
    ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
     "--user-data-dir=" + CHROMIUM_DIR, "--remote-debugging-port=0",
     "about:blank"],
]


def start_heavy():
    """Starts HEAVY (those installed), each in its own session; returns the
    Popen objects and the names started."""
    started = []
    for argv in HEAVY:
        exe = shutil.which(argv[0], path="/usr/bin:/bin")
        if not exe:
            continue
        p = subprocess.Popen([exe] + argv[1:], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        started.append((argv[0], p))
    time.sleep(5)  # chromium's zygote, renderer and utility processes
    return started


def stop_heavy(started):
    for _, p in started:
        try:
            os.killpg(p.pid, signal.SIGTERM)  # its own session: pgid == pid
        except ProcessLookupError:
            pass
    for _, p in started:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(CHROMIUM_DIR, ignore_errors=True)


WALK_SECONDS = os.environ.get("UNWIND_WALK_SECONDS", "5")
PYTHON = "/usr/bin/python3.11"
CPU_PY = os.path.join(HERE, "..", "unwind", "workloads", "cpu.py")
RUBY = "/usr/bin/ruby3.1"
CPU_RB = os.path.join(HERE, "..", "unwind", "workloads", "cpu.rb")


def walk_run(unwind_memory, options=(), cmd=(PYTHON, CPU_PY)):
    """One kiln record of an interpreter's workload; its --stats."""
    stats = f"/tmp/kiln-walk-cost.{os.getpid()}.json"
    folded = f"/tmp/kiln-walk-cost.{os.getpid()}.folded"
    args = [KILN, "record", "-q", "-F", "999", "--stats", stats, "-o", folded, *options]
    if unwind_memory is not None:
        args += ["--unwind-memory", unwind_memory]
    r = subprocess.run(args + ["--", *cmd, WALK_SECONDS], capture_output=True, text=True)
    try:
        with open(stats) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return {"failed": (r.stderr.strip().splitlines() or ["no stats"])[-1]}
    finally:
        for x in (stats, folded):
            if os.path.exists(x):
                os.unlink(x)
    w = st.get("walker", {})
    runs, ns = st.get("bpf_run_cnt", 0), st.get("bpf_kernel_run_ns", 0)
    sampled = st.get("outcomes", {}).get("sampled", 0)
    frames = w.get("frames_table", 0) + w.get("frames_frame_pointer", 0)
    return {"runs": runs, "bpf_ns": ns, "sampled": sampled, "walks": w.get("walks", 0),
            "frames": frames, "ns_per_run": ns / runs if runs else None,
            "ns_per_sample": ns / sampled if sampled else None}


CLANG_SRC = "int f(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * i % 7; return s; }\n"


def record_rss(cache):
    """kiln record's peak RSS (kB) while clang compiles in a loop, with
    the unwind cache in cache; None when it failed."""
    src = f"/tmp/kiln-rss-cost.{os.getpid()}.c"
    stats = f"/tmp/kiln-rss-cost.{os.getpid()}.json"
    with open(src, "w") as f:
        f.write(CLANG_SRC)
    loop = subprocess.Popen(["sh", "-c", f"while :; do clang -O2 -c {src} -o {src}.o; done"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        time.sleep(0.5)
        subprocess.run([KILN, "record", "-q", "-d", "5", "--unwind-cache", cache, "--stats", stats,
                        "-o", f"/tmp/kiln-rss-cost.{os.getpid()}.pb.gz"], capture_output=True)
        with open(stats) as f:
            return json.load(f).get("max_rss_kb")
    except (OSError, ValueError):
        return None
    finally:
        os.killpg(loop.pid, signal.SIGTERM)
        loop.wait()
        for x in (src, src + ".o", stats, f"/tmp/kiln-rss-cost.{os.getpid()}.pb.gz"):
            if os.path.exists(x):
                os.unlink(x)


def mb_range(r, k):
    """r[k_kb] and r[k_range_kb] in MB, as 'M MB (lo-hi)'."""
    lo, hi = r[k + "_range_kb"]
    return f"{r[k + '_kb'] / 1024:.1f} MB ({lo / 1024:.1f}-{hi / 1024:.1f})"


def part_record_rss():
    if not shutil.which("clang"):
        return {"failed": "no clang"}
    cold, warm = [], []
    for _ in range(ROUNDS):
        cache = f"/tmp/kiln-rss-cost.{os.getpid()}.cache"
        shutil.rmtree(cache, ignore_errors=True)
        cold.append(record_rss(cache))
        warm.append(record_rss(cache))
        shutil.rmtree(cache, ignore_errors=True)
    if None in cold + warm:
        return {"failed": "kiln record failed"}
    return {"cold_kb": med(cold), "cold_range_kb": [min(cold), max(cold)],
            "warm_kb": med(warm), "warm_range_kb": [min(warm), max(warm)]}


def part_walk():
    if not (os.path.exists(PYTHON) and os.path.exists(CPU_PY)):
        return {"failed": "no /usr/bin/python3.11 or tests/unwind/workloads/cpu.py"}
    fp, tables = [], []
    for i in range(ROUNDS):
        order = [("fp", "0"), ("tables", None)]
        for mode, mem in (order if i % 2 == 0 else order[::-1]):
            (fp if mode == "fp" else tables).append(walk_run(mem))
    bad = [r["failed"] for r in fp + tables if "failed" in r]
    if bad:
        return {"failed": bad[0]}
    out = {"rounds": ROUNDS, "fp": fp, "tables": tables}
    for mode, rs in (("fp", fp), ("tables", tables)):
        out[mode + "_ns_per_run"] = med([r["ns_per_run"] for r in rs])
        out[mode + "_ns_per_sample"] = med([r["ns_per_sample"] for r in rs])
    out["frames_per_walk"] = med([r["frames"] / r["walks"] for r in tables if r["walks"]])
    out["walk_ns_per_frame"] = (out["tables_ns_per_sample"] - out["fp_ns_per_sample"]) / \
        out["frames_per_walk"] if out["frames_per_walk"] else None
    out["interpreters"] = part_interpreters()
    return out


def part_interpreters():
    """An interpreter sample (its frames read by the BPF walk) beside a
    native one (--no-python, --no-ruby: the eval loop's frames only), both
    walked with tables, rounds alternated."""
    rows = []
    for label, cmd, off in (("python3.11 cpu.py", (PYTHON, CPU_PY), "--no-python"),
                            ("ruby3.1 cpu.rb", (RUBY, CPU_RB), "--no-ruby")):
        if not all(os.path.exists(x) for x in cmd):
            rows.append({"label": label, "failed": "missing " + " or ".join(cmd)})
            continue
        on, native = [], []
        for i in range(ROUNDS):
            order = [(on, ()), (native, (off,))]
            for rs, opts in (order if i % 2 == 0 else order[::-1]):
                rs.append(walk_run(None, opts, cmd))
        bad = [r["failed"] for r in on + native if "failed" in r]
        if bad:
            rows.append({"label": label, "failed": bad[0]})
            continue
        rows.append({"label": label, "interp": on, "native": native,
                     "interp_ns_per_sample": med([r["ns_per_sample"] for r in on]),
                     "native_ns_per_sample": med([r["ns_per_sample"] for r in native])})
    return rows


def n(x):
    return "-" if x is None else f"{x:,}".replace(",", " ")


def main():
    if not os.access(KILN, os.X_OK):
        sys.exit(f"unwind_cost: no kiln at {KILN} (make, or KILN=...)")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "results", "unwind-" + time.strftime("%Y-%m-%d-%H%M%S") + ".json")
    ver = subprocess.run([KILN, "version"], capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "kernel": os.uname().release, "cpus": os.cpu_count(), "kiln": ver,
            "rounds": ROUNDS,
            "loadavg_start": " ".join((read("/proc/loadavg") or "").split()[:3])}

    # The kernel's BPF run-time statistics, on until this script ends.
    stats = subprocess.Popen([sys.executable, os.path.join(HERE, "analyze.py"), "hold-stats"],
                             stdout=subprocess.PIPE, text=True)
    if stats.stdout.readline().strip() != "on":
        sys.exit("unwind_cost: cannot turn BPF run-time statistics on")
    try:
        run_parts(out, meta)
    finally:
        stats.terminate()
        stats.wait()


def run_parts(out, meta):
    ver = meta["kiln"]
    bins = part_binaries()
    print(f"## kiln unwind tables, {meta['date']}: {meta['cpus']} CPUs, kernel "
          f"{meta['kernel']}, {ver}")
    print()
    print(f"Largest binaries (`kiln unwind-table --summary FILE`; build figures: "
          f"median of {ROUNDS} rotated rounds, min-max in brackets):")
    print()
    print("| binary | file MB | rows | rules | table bytes | build CPU ms | build wall ms "
          "| kiln process CPU ms | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in bins:
        if "failed" in r:
            print(f"| {r['label']} | {r['failed']}{' (' + r['path'] + ')' if r['path'] else ''} "
                  "| | | | | | | |")
            continue
        c, w, p, m = (r[k + "_range"] for k in ("cpu_ms", "build_ms", "process_cpu_ms", "max_rss_kb"))
        print(f"| {r['label']} | {r['size_bytes'] / 1e6:.1f} | {n(r['rows'])} | {r['rules']} "
              f"| {n(r['bytes'])} | {r['cpu_ms']:.0f} ({c[0]:.0f}-{c[1]:.0f}) "
              f"| {r['build_ms']:.0f} ({w[0]:.0f}-{w[1]:.0f}) "
              f"| {r['process_cpu_ms']:.0f} ({p[0]:.0f}-{p[1]:.0f}) "
              f"| {r['max_rss_kb'] / 1024:.1f} ({m[0] / 1024:.1f}-{m[1] / 1024:.1f}) |")
    print()
    scans = [("host as it is", part_processes())]
    if BUSY:
        started = start_heavy()
        try:
            scans.append(("with " + ", ".join(name for name, _ in started) + " running",
                          part_processes()))
        finally:
            stop_heavy(started)
    print("Rows all running processes need (one table per distinct executable file):")
    print()
    print("| host | processes | distinct executable files | built | rows | table bytes "
          "| of the 16 MiB budget | build CPU s, all files | largest process | sum over processes (no sharing) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, procs in scans:
        mp = procs["max_process"] or {}
        print(f"| {label} | {procs['processes']} | {procs['distinct_files']} | {procs['files_built']} "
              f"| {n(procs['total_rows'])} | {n(procs['total_bytes'])} "
              f"| {procs['budget_share_pct']} % | {procs['total_build_cpu_ms'] / 1000:.2f} "
              f"| {mp.get('comm')} (pid {mp.get('pid')}): {n(mp.get('rows'))} rows, "
              f"{n(mp.get('bytes'))} bytes, {mp.get('files')} files "
              f"| {n(procs['sum_over_processes_rows'])} rows, {n(procs['sum_over_processes_bytes'])} bytes |")
    for label, procs in scans:
        print()
        print(f"{label}: largest tables: " + "; ".join(
            f"{os.path.basename(f['path'])} {n(f['rows'])}" for f in procs["largest_files"][:6])
            + f". Mappings: {procs['mappings']}; processes skipped: {procs['skipped']}.")
        if procs["files_not_built"]:
            print("Files without a table: " + "; ".join(
                f"{k}: {', '.join(os.path.basename(x) for x in v)}"
                for k, v in sorted(procs["files_not_built"].items())))
    walk = part_walk()
    print()
    if "failed" in walk:
        print(f"BPF walk cost: not measured ({walk['failed']})")
    else:
        print(f"BPF cost per sample (python3.11 cpu.py at 999 Hz, {WALK_SECONDS} CPU s, median of "
              f"{ROUNDS} alternated rounds; kernel.bpf_stats):")
        print()
        print("| walk | BPF ns per program run | BPF ns per sample of the workload | frames per stack "
              "| ns per frame |")
        print("|---|---|---|---|---|")
        print(f"| frame pointers (--unwind-memory 0) | {walk['fp_ns_per_run']:.0f} "
              f"| {walk['fp_ns_per_sample']:.0f} | | |")
        print(f"| unwind tables | {walk['tables_ns_per_run']:.0f} | {walk['tables_ns_per_sample']:.0f} "
              f"| {walk['frames_per_walk']:.1f} | {walk['walk_ns_per_frame']:.0f} |")
        print()
        print("BPF cost of an interpreter sample (its frames read) beside a native one "
              "(--no-python / --no-ruby), unwind tables, same runs:")
        print()
        print("| workload | BPF ns per sample, interpreter frames | BPF ns per sample, native only |")
        print("|---|---|---|")
        for r in walk["interpreters"]:
            if "failed" in r:
                print(f"| {r['label']} | not measured ({r['failed']}) | |")
            else:
                print(f"| {r['label']} | {r['interp_ns_per_sample']:.0f} "
                      f"| {r['native_ns_per_sample']:.0f} |")
    rss = part_record_rss()
    print()
    print(f"kiln record -d 5 while clang compiles, peak RSS (median of {ROUNDS} rounds, min-max): "
          + (f"not measured ({rss['failed']})" if "failed" in rss else
             f"tables and symbols built (empty --unwind-cache) {mb_range(rss, 'cold')}; "
             f"read from the disk cache {mb_range(rss, 'warm')}"))
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump({"meta": meta, "binaries": bins,
                   "processes": [dict(host=label, **procs) for label, procs in scans],
                   "walk": walk, "record_rss": rss},
                  f, indent=1)
        f.write("\n")
    print()
    print(f"Results: {out}")


if __name__ == "__main__":
    main()
