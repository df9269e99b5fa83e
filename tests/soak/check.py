#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The verdicts of a soak run (tests/soak/run.sh), from the files it left.

  check.py OUT

OUT holds events.txt ("<unix seconds> <event> [value]" lines: start, early,
rotate_server, rotate_file, outage_start, outage_end, stop, agent_exit),
rss.txt (the agent's RSS and bounded caches every 10 s), agent.err (the
agent's logfmt log), receiver.jsonl (every request the receiver saw, across
its restart) and token.1 / token.2 (the bearer tokens before and after the
rotation). Prints one PASS or FAIL line per check and "N passed, N failed";
exits 1 when a check failed.

Checks:
  memory    RSS at the end <= 110 % of RSS at the early point, plus what the
            symbol cache (bounded by --symbol-cache) grew by in between
  delivery  every profile the agent built was sent (its "stopped" line), and
            the receiver holds exactly that many distinct profile ids
  errors    every warn/error line is the outage's or the rotation's sender
            failure, inside its window (plus GRACE_S for the retry after);
            the agent exits 0 after SIGTERM
  rotation  the new token was refused before the file had it (401), then used
  outage    the agent logged the outage, and profiles built while the
            receiver was down were delivered after it came back
"""

import json
import re
import sys
from datetime import datetime

# The sender retries with a backoff of at most 30 s: a failure line logged
# by the retry that follows a window still belongs to it.
GRACE_S = 40

LINE = re.compile(r'^time=(\S+) level=(\w+) msg="((?:[^"\\]|\\.)*)"(.*)$')
FAILED = re.compile(r'^sender: \S+ failed$')


def read_events(path):
    ev = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                ev[parts[1]] = float(parts[2]) if len(parts) > 2 else float(parts[0])
    return ev


def read_log(path):
    """Agent lines as (unix time or None, level, msg, fields, raw)."""
    out = []
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if not raw:
                continue
            m = LINE.match(raw)
            if not m:
                out.append((None, None, None, {}, raw))
                continue
            t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
            t = (t - datetime(1970, 1, 1)).total_seconds()
            fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', m.group(4)))
            out.append((t, m.group(2), m.group(3), fields, raw))
    return out


def read_receiver(path):
    entries, bad = [], 0
    with open(path) as f:
        for line in f:
            try:
                entries.append(json.loads(line))
            except ValueError:
                bad += 1
    return [e for e in entries if e.get("kind") in ("push", "ingest")], bad


def profiles(entries):
    for e in entries:
        for s in e.get("series") or []:
            for p in s.get("samples") or []:
                yield e, p


class Verdicts:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, ok, name, detail):
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def check_memory(v, out, ev):
    rows = []
    with open(out + "/rss.txt") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if len(cols) >= 3 and all(c.isdigit() for c in cols[:3]):
                rows.append([int(c) for c in cols[:3]])
    late = [r for r in rows if r[0] >= ev["early"]]
    if not late:
        v(False, "memory", "no RSS sample after %.0f s (rss.txt)" % ev["early"])
        return
    (t0, rss0, cache0), (t1, rss1, cache1) = late[0], late[-1]
    top = max(rows, key=lambda r: r[1])
    growth = max(0, cache1 - cache0) // 1024
    limit = rss0 * 110 // 100 + growth
    v(rss1 <= limit, "memory",
      "RSS %d KiB at %d s, %d KiB at %d s (limit %d KiB: +10 %% and the symbol cache's "
      "%+d KiB); max %d KiB at %d s" % (rss0, t0, rss1, t1, limit, (cache1 - cache0) // 1024,
                                        top[1], top[0]))


def check_delivery(v, log, delivered):
    stopped = [x for x in log if x[2] == "agent: stopped"]
    if not stopped:
        v(False, "delivery", "the agent never logged its 'agent: stopped' line")
        return
    f = stopped[-1][3]
    built, sent = int(f.get("profiles", -1)), int(f.get("sent", -2))
    ids = [p.get("id") for _, p in profiles(delivered)]
    distinct = len(set(i for i in ids if i))
    ok = built > 0 and sent == built and distinct == sent and len(ids) > 0 and None not in ids
    v(ok, "delivery",
      "agent built %d profiles and sent %d (rejected %s, dropped queue_full %s, shutdown %s, "
      "encode_failed %s); the receiver accepted %d distinct profiles in %d requests "
      "(%d re-sent)" % (built, sent, f.get("rejected"), f.get("dropped_full"),
                        f.get("dropped_shutdown"), f.get("encode_failed"), distinct,
                        len(delivered), len(ids) - distinct))


def classify(line, ev):
    """Why a warn/error line was expected ("outage", "rotation"), or None."""
    t, _, msg, fields, _ = line
    if not FAILED.match(msg or ""):
        return None
    status = fields.get("status")
    if status == "0" and ev["outage_start"] <= t <= ev["outage_end"] + GRACE_S:
        return "outage"
    if status == "401" and ev["rotate_server"] <= t <= ev["rotate_file"] + GRACE_S:
        return "rotation"
    return None


def check_errors(v, log, ev):
    expected = {"outage": 0, "rotation": 0}
    unexpected = []
    for line in log:
        if line[1] is None:
            unexpected.append(line[4])
        elif line[1] in ("warn", "error"):
            why = classify(line, ev)
            if why:
                expected[why] += 1
            else:
                unexpected.append(line[4])
    status = int(ev.get("agent_exit", -1))
    ok = not unexpected and status == 0
    detail = "%d outage and %d rotation failure lines, each in its window; exit status %d" % (
        expected["outage"], expected["rotation"], status)
    if unexpected:
        detail += "; %d unexpected:\n  %s" % (len(unexpected), "\n  ".join(unexpected[:10]))
    v(ok, "errors", detail)


def check_rotation(v, out, attempts, ev):
    tokens = []
    for n in (1, 2):
        with open("%s/token.%d" % (out, n)) as f:
            tokens.append("Bearer " + f.read().strip())
    auth = [(e["time"], e["status"], e["headers"].get("authorization")) for e in attempts]
    refused = [a for a in auth if a[1] == 401 and a[2] == tokens[0] and
               ev["rotate_server"] <= a[0] <= ev["rotate_file"] + GRACE_S]
    old_before = [a for a in auth if a[1] == 200 and a[2] == tokens[0] and
                  a[0] < ev["rotate_server"]]
    new_after = [a for a in auth if a[1] == 200 and a[2] == tokens[1]]
    first_new = min(a[0] for a in new_after) if new_after else None
    ok = (old_before and refused and first_new is not None and
          ev["rotate_file"] <= first_new < ev["outage_start"])
    v(ok, "rotation",
      "%d deliveries with the first token; at %.0f s the server wanted a new one: %d requests "
      "refused (401) until the file had it at %.0f s; first delivery with the new token %s, "
      "%d in all" % (len(old_before), ev["rotate_server"] - ev["start"], len(refused),
                     ev["rotate_file"] - ev["start"],
                     "%.1f s after the file changed" % (first_new - ev["rotate_file"])
                     if first_new else "never", len(new_after)))


def check_outage(v, log, delivered, ev):
    start, end = ev["outage_start"], ev["outage_end"]
    logged = [x for x in log if x[1] and classify(x, ev) == "outage"]
    # profiles of whole intervals while the receiver was down: queued
    bridged = [(e, p) for e, p in profiles(delivered)
               if p.get("time_nanos") and start <= p["time_nanos"] / 1e9 and
               (p["time_nanos"] + (p.get("duration_nanos") or 0)) / 1e9 <= end]
    after = [e["time"] for e, _ in bridged if e["time"] >= end]
    resumed = [x for x in log if x[2] and x[2].startswith("sender: delivered again") and
               x[0] >= end]
    ok = logged and bridged and len(after) == len(bridged) and resumed
    v(ok, "outage",
      "receiver down from %.0f s to %.0f s; %d failure lines logged; %d profiles of "
      "intervals inside it queued and delivered after it came back%s" % (
          start - ev["start"], end - ev["start"], len(logged), len(bridged),
          ", the first %.1f s after" % (min(after) - end) if after else ""))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    ev = read_events(out + "/events.txt")
    missing = [k for k in ("start", "early", "rotate_server", "rotate_file", "outage_start",
                           "outage_end", "stop", "agent_exit") if k not in ev]
    if missing:
        print("FAIL events: the run did not get to %s (%s/events.txt)" % (", ".join(missing), out))
        return 1
    log = read_log(out + "/agent.err")
    attempts, bad = read_receiver(out + "/receiver.jsonl")
    delivered = [e for e in attempts if e.get("delivered")]
    v = Verdicts()
    check_memory(v, out, ev)
    check_delivery(v, log, delivered)
    check_errors(v, log, ev)
    check_rotation(v, out, attempts, ev)
    check_outage(v, log, delivered, ev)
    if bad:
        v(False, "receiver log", "%d lines are not JSON" % bad)
    print("%d passed, %d failed (details in %s)" % (v.passed, v.failed, out))
    return 1 if v.failed else 0


if __name__ == "__main__":
    sys.exit(main())
