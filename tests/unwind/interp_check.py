# SPDX-License-Identifier: BSD-2-Clause
"""Judges a folded profile of an interpreter workload for tests/unwind/
python.sh and ruby.sh (stdlib only).

  interp_check.py shares FOLDED OUT CALLER [CALLEE BLOCK]
      OUT's last line is the workload's truth, {"function": CPU seconds};
      prints: worst point difference of the functions' shares, their
      samples, % of them directly under CALLER, % of them with CALLEE
      right above and BLOCK somewhere above that (0 without), the shares
  interp_check.py threads FOLDED SPIN WORKER NATIVE...
      prints: samples under SPIN only, under WORKER only, of those with a
      frame above WORKER containing one of NATIVE (case-blind), under both
"""
import json
import sys


def stacks(path):
    for line in open(path):
        stack, n = line.rsplit(" ", 1)
        yield stack.split(";"), int(n)


def shares(folded, out, caller, callee=None, block=None):
    truth = json.loads(open(out).read().strip().splitlines()[-1])
    counts = {k: 0 for k in truth}
    chained = blocked = 0
    for frames, n in stacks(folded):
        for k in counts:
            if k in frames:
                counts[k] += n
                i = frames.index(k)
                if i > 0 and frames[i - 1] == caller:
                    chained += n
                if callee and frames[i + 1:i + 2] == [callee] and block in frames[i + 2:]:
                    blocked += n
    total_t = sum(truth.values())
    total_k = sum(counts.values())
    worst = 0
    out = []
    for k in truth:
        t = 100 * truth[k] / total_t
        s = 100 * counts[k] / total_k if total_k else 0
        worst = max(worst, abs(t - s))
        out.append("%s %.1f%% (truth %.1f%%)" % (k, s, t))
    pct = (lambda x: 100 * x / total_k if total_k else 0)
    print("%.2f %d %.1f %.1f %s" % (worst, total_k, pct(chained), pct(blocked), "; ".join(out)))


def threads(folded, spin_fn, worker, *native):
    spin = work = on_native = both = 0
    for f, n in stacks(folded):
        if spin_fn in f and worker in f:
            both += n
        elif worker in f:
            work += n
            after = f[f.index(worker) + 1:]
            if any(p.lower() in x.lower() for x in after for p in native):
                on_native += n
        elif spin_fn in f:
            spin += n
    print(spin, work, on_native, both)


if __name__ == "__main__":
    {"shares": shares, "threads": threads}[sys.argv[1]](*sys.argv[2:])
