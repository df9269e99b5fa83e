#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The OTLP export of an interval equals its pprof.

  otlp_check.py PROTO_DIR BODIES_DIR FILES_DIR

BODIES_DIR holds the OTLP requests a receiver accepted (receiver.py
--save-bodies), FILES_DIR the agent's --output-dir of the same run. Both are
decoded with modules protoc generates from PROTO_DIR (python3-protobuf);
every OTLP profile is matched with the pprof file of its interval and label
set (its resource attributes, mapped back from the semantic conventions) and
must have the same stacks with the same values, period, start and duration;
each sample's process.executable.name is its stack's root frame. Intervals
both sides hold must hold the same label sets. Prints one line; exit 0 when
all agree.
"""

import collections
import glob
import gzip
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "receiver"))
import otlp_decode  # noqa: E402
import receiver  # noqa: E402  (generate_modules)

# kiln's label -> the attribute it is sent as (docs/otlp.md)
SEMCONV = {"service_name": "service.name", "namespace": "k8s.namespace.name",
           "pod": "k8s.pod.name", "container": "k8s.container.name",
           "container_id": "container.id", "pod_uid": "k8s.pod.uid", "node": "host.name"}


def expected_resource(labels):
    out = {SEMCONV.get(k, k): v for k, v in labels.items() if v and not k.startswith("__")}
    if labels.get("pod") and labels.get("node"):
        out["k8s.node.name"] = labels["node"]
    return out


def pprof_side(profile_pb2, path):
    """(interval start s, resource, stacks, meta) of one pprof file."""
    prof = profile_pb2.Profile()
    prof.ParseFromString(gzip.open(path).read())
    st = prof.string_table
    funcs = {f.id: st[f.name] for f in prof.function}
    locs = {l.id: [funcs[ln.function_id] for ln in reversed(l.line)] for l in prof.location}
    col = [st[t.type] for t in prof.sample_type].index("cpu")
    stacks = collections.Counter()
    labels = None
    for smp in prof.sample:
        frames = []
        for lid in smp.location_id:
            frames[:0] = locs[lid]
        stacks[tuple(frames)] += smp.value[col]
        here = {st[l.key]: st[l.str] for l in smp.label}
        if labels is not None and here != labels:
            raise ValueError("%s: samples with different labels" % path)
        labels = here
    meta = (prof.period, prof.time_nanos, prof.duration_nanos)
    return prof.time_nanos // 10**9, expected_resource(labels or {}), stacks, meta


def main():
    proto_dir, bodies, files = sys.argv[1:4]
    tmp, mods = receiver.generate_modules(proto_dir)
    pprofs = {}
    for path in glob.glob(os.path.join(files, "*.pb.gz")):
        t, res, stacks, meta = pprof_side(mods["profile"], path)
        pprofs[(t, frozenset(res.items()))] = (stacks, meta, path)
    otlp = {}
    problems = []
    for path in sorted(glob.glob(os.path.join(bodies, "*.otlp.pb"))):
        req = mods["otlp"].ExportProfilesServiceRequest()
        req.ParseFromString(open(path, "rb").read())
        profiles, bad = otlp_decode.resolve(req)
        problems += ["%s: %s" % (path, b) for b in bad]
        for p in profiles:
            problems += ["%s: %s" % (path, b) for b in p["problems"]]
            stacks = collections.Counter()
            for smp in p["samples"]:
                stacks[tuple(smp["frames"])] += smp["value"]
                if smp["attributes"].get("process.executable.name") != smp["frames"][0]:
                    problems.append("%s: process.executable.name %r, root frame %r" % (
                        path, smp["attributes"].get("process.executable.name"), smp["frames"][0]))
            if p["sample_type"] != ["cpu", "nanoseconds"] or p["period_type"] != ["cpu", "nanoseconds"]:
                problems.append("%s: sample type %s, period type %s" % (path, p["sample_type"], p["period_type"]))
            key = (p["time_nanos"] // 10**9, frozenset(p["resource"].items()))
            if key in otlp:
                problems.append("%s: interval %d sent twice for %s" % (path, key[0], dict(key[1])))
            otlp[key] = (stacks, (p["period"], p["time_nanos"], p["duration_nanos"]), path)
    both = {k[0] for k in otlp} & {k[0] for k in pprofs}
    compared = samples = 0
    for t in sorted(both):
        mine = {k for k in otlp if k[0] == t}
        theirs = {k for k in pprofs if k[0] == t}
        for k in mine ^ theirs:
            problems.append("interval %d: label set %s only in %s" % (
                t, dict(k[1]), "OTLP" if k in mine else "the pprof files"))
        for k in mine & theirs:
            (os_, om, op), (ps, pm, pp) = otlp[k], pprofs[k]
            if om != pm:
                problems.append("%s vs %s: period/start/duration %s != %s" % (op, pp, om, pm))
            if os_ != ps:
                diff = sorted(set(os_.items()) ^ set(ps.items()))[:3]
                problems.append("%s vs %s: stacks differ, e.g. %s" % (op, pp, diff))
            compared += 1
            samples += sum(ps.values())
    receiver.shutil.rmtree(tmp, ignore_errors=True)
    if not compared:
        problems.append("no interval both in OTLP (%d profiles) and the files (%d)" % (len(otlp), len(pprofs)))
    if problems:
        print("FAIL %d problems: %s" % (len(problems), "; ".join(problems[:4])))
        return 1
    print("OK %d profiles in %d intervals equal their pprof (%d ns of cpu)" % (compared, len(both), samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
