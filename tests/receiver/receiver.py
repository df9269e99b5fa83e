#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A local stand-in for a Pyroscope server, for kiln's end-to-end tests.

It speaks the two ingestion APIs kiln uses (the Connect unary push API and
the legacy /ingest endpoint), decodes every body with protoc-generated
modules (the python3-protobuf runtime, not a hand-written parser), checks
what Pyroscope checks, logs one JSON line per request, and can be told at run
time to fail, stall or demand credentials. See README.md in this folder.

Run it with Debian's /usr/bin/python3 (python3-protobuf, protobuf-compiler).
"""

import argparse
import base64
import binascii
import collections
import datetime
import email.parser
import email.policy
import http.server
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import zlib

import otlp_decode

PUSH_SUFFIX = "/push.v1.PusherService/Push"
SELECT_MERGE_SUFFIX = "/querier.v1.QuerierService/SelectMergeProfile"
# Profiles kept for the query API, oldest forgotten first.
MAX_STORED_PROFILES = 20000
INGEST_SUFFIX = "/ingest"
OTLP_SUFFIX = "/v1development/profiles"     # OTLP/HTTP profiles, 1.10

LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
METRIC_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
APP_NAME_RE = re.compile(r"^[a-zA-Z0-9_.\-/:]+$")

# Pyroscope's default validation limits (overridable through /_control).
DEFAULT_LIMITS = {
    "max_labels": 30,
    "max_label_name_length": 1024,
    "max_label_value_length": 2048,
    "max_profile_bytes": 4 * 1024 * 1024,   # uncompressed pprof
    "max_profile_samples": 16000,
    "max_stack_depth": 1000,                # deeper stacks are only noted
    "reject_older_than_s": 3600,
    # the rate limiter's burst: a request whose label bytes and decompressed
    # pprof bytes exceed it is refused with 429, whatever the rate
    "burst_bytes": 2 * 1000 * 1000,
    "reject_newer_than_s": 600,
    "check_time": True,
    "strict_pprof": True,                   # ids, string indexes, value counts
    # OTLP: profiles of this service.name are refused in part (a partial
    # success), as a per-service limit of a real backend would
    "reject_service": "",
}

MAX_BODY = 64 * 1024 * 1024
MAX_FOLDED_LINE = 64 * 1024

# HTTP status -> gRPC status code, for OTLP's google.rpc.Status bodies.
GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 12, 405: 12, 408: 4, 409: 10, 413: 8, 415: 3,
              429: 8, 499: 1, 500: 13, 501: 12, 502: 14, 503: 14, 504: 4}

# HTTP status -> Connect error code.
STATUS_CODES = {
    400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
    404: "unimplemented", 405: "unimplemented", 408: "deadline_exceeded",
    409: "aborted", 411: "invalid_argument", 412: "failed_precondition",
    413: "resource_exhausted", 415: "invalid_argument", 422: "invalid_argument",
    429: "resource_exhausted", 499: "canceled", 500: "internal",
    501: "unimplemented", 502: "unavailable", 503: "unavailable",
    504: "deadline_exceeded",
}


class RequestError(Exception):
    """An error answered to the client as a Connect-style JSON body."""

    def __init__(self, status, message, code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or STATUS_CODES.get(status, "unknown")


# --------------------------------------------------------------------------
# protobuf modules, generated at start

PROTOS = ("push.proto", "types.proto", "profile.proto", "querier.proto", "otlp_common.proto",
          "otlp_resource.proto", "otlp_profiles.proto", "otlp_profiles_service.proto",
          "rpc_status.proto")


def generate_modules(proto_dir):
    """Run protoc into a temp dir and import the modules of PROTOS:
    (temp dir, {"push": push_pb2, "profile": ..., "otlp": otlp_profiles_service_pb2,
    "status": rpc_status_pb2})."""
    protoc = shutil.which("protoc")
    if not protoc:
        sys.exit("receiver: protoc not found (apt-get install -y protobuf-compiler)")
    for name in PROTOS:
        if not os.path.isfile(os.path.join(proto_dir, name)):
            sys.exit("receiver: %s not found in --proto-dir %s" % (name, proto_dir))
    out = tempfile.mkdtemp(prefix="kiln-receiver-pb.")
    cmd = [protoc, "--python_out=" + out, "--proto_path=" + proto_dir] + list(PROTOS)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        sys.exit("receiver: protoc failed: %s" % res.stderr.strip())
    sys.path.insert(0, out)
    try:
        mods = {k: importlib.import_module(m) for k, m in (
            ("push", "push_pb2"), ("profile", "profile_pb2"), ("querier", "querier_pb2"),
            ("otlp", "otlp_profiles_service_pb2"), ("status", "rpc_status_pb2"))}
    except ImportError as e:
        shutil.rmtree(out, ignore_errors=True)
        sys.exit("receiver: cannot import generated modules (%s); run with "
                 "/usr/bin/python3 and python3-protobuf installed" % e)
    return out, mods


PB = {}  # filled in main(): "push", "profile", "otlp", "status", "json_format", "DecodeError"


# --------------------------------------------------------------------------
# helpers

def gunzip_limited(data, limit, what):
    """Decompress gzip data (all members), refusing more than limit bytes."""
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        try:
            chunk = d.decompress(rest, limit + 1 - len(out))
        except zlib.error as e:
            raise RequestError(400, "%s: bad gzip data: %s" % (what, e))
        out += chunk
        if len(out) > limit:
            raise RequestError(400, "%s: more than %d bytes after gunzip" % (what, limit))
        if not d.eof:
            raise RequestError(400, "%s: truncated gzip data" % what)
        rest = d.unused_data
        if rest and rest[:2] != b"\x1f\x8b":
            break  # trailing garbage after the last member, as gzip(1) tolerates
    return bytes(out)


def is_gzip(data):
    return len(data) >= 2 and data[0] == 0x1F and data[1] == 0x8B


def valid_uuid(s):
    try:
        uuid.UUID(s)
        return True
    except (ValueError, AttributeError, TypeError):
        return False


def now_iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------
# pprof decoding and summary

def summarize_pprof(raw, limits, caps, check_time, where):
    """Decode one pprof (gzipped or not) and return (summary, stacks Counter).

    Raises RequestError(400) when the profile is not acceptable."""
    gz = is_gzip(raw)
    data = gunzip_limited(raw, limits["max_profile_bytes"], where) if gz else raw
    if len(data) > limits["max_profile_bytes"]:
        raise RequestError(400, "%s: profile is %d bytes uncompressed, limit %d"
                           % (where, len(data), limits["max_profile_bytes"]))
    prof = PB["profile"].Profile()
    try:
        prof.ParseFromString(data)
    except Exception as e:  # DecodeError, and upb's RuntimeError on odd input
        raise RequestError(400, "%s: cannot decode pprof Profile: %s" % (where, e or type(e).__name__))

    st = list(prof.string_table)
    nstr = len(st)
    problems = []

    def s(idx, what):
        if 0 <= idx < nstr:
            return st[idx]
        problems.append("%s: string index %d out of range (table has %d)" % (what, idx, nstr))
        return None

    if nstr == 0:
        problems.append("string_table is empty (entry 0 must be \"\")")
    elif st[0] != "":
        problems.append("string_table[0] is %r, must be \"\"" % st[0])

    sample_type = [[s(v.type, "sample_type.type"), s(v.unit, "sample_type.unit")]
                   for v in prof.sample_type]
    period_type = None
    if prof.HasField("period_type"):
        period_type = [s(prof.period_type.type, "period_type.type"),
                       s(prof.period_type.unit, "period_type.unit")]
    for i in prof.comment:
        s(i, "comment")
    for f, v in (("drop_frames", prof.drop_frames), ("keep_frames", prof.keep_frames),
                 ("doc_url", prof.doc_url)):
        if v:
            s(v, f)

    mappings = {}
    mapping_list = []
    for m in prof.mapping:
        if m.id == 0:
            problems.append("mapping with id 0")
        elif m.id in mappings:
            problems.append("duplicate mapping id %d" % m.id)
        mappings[m.id] = m
        if len(mapping_list) < caps["max_mappings"]:
            mapping_list.append({
                "id": m.id, "filename": s(m.filename, "mapping.filename"),
                "build_id": s(m.build_id, "mapping.build_id"),
                "memory_start": m.memory_start, "memory_limit": m.memory_limit,
                "file_offset": m.file_offset, "has_functions": m.has_functions,
            })
        else:
            s(m.filename, "mapping.filename")
            s(m.build_id, "mapping.build_id")

    functions = {}
    for f in prof.function:
        if f.id == 0:
            problems.append("function with id 0")
        elif f.id in functions:
            problems.append("duplicate function id %d" % f.id)
        name = s(f.name, "function.name")
        s(f.system_name, "function.system_name")
        s(f.filename, "function.filename")
        functions[f.id] = name if name is not None else "?"

    locations = {}
    for loc in prof.location:
        if loc.id == 0:
            problems.append("location with id 0")
        elif loc.id in locations:
            problems.append("duplicate location id %d" % loc.id)
        if loc.mapping_id and loc.mapping_id not in mappings:
            problems.append("location %d: unknown mapping id %d" % (loc.id, loc.mapping_id))
        frames = []
        for ln in loc.line:
            if ln.function_id not in functions:
                problems.append("location %d: unknown function id %d" % (loc.id, ln.function_id))
                frames.append("0x%x" % loc.address)
            else:
                frames.append(functions[ln.function_id])
        if not frames:
            frames.append("0x%x" % loc.address)
        locations[loc.id] = frames  # leaf (innermost inlined) first

    ncol = len(sample_type)
    value_sums = [0] * ncol
    col = None
    for i, (t, _u) in enumerate(sample_type):
        if t == "cpu":
            col = i
    if col is None and ncol:
        d = prof.default_sample_type
        if d:
            for i, (t, _u) in enumerate(sample_type):
                if t == s(d, "default_sample_type"):
                    col = i
        if col is None:
            col = ncol - 1

    stacks = collections.Counter()
    label_keys = set()
    max_depth = 0
    deep = 0
    zero = 0
    for n, smp in enumerate(prof.sample):
        if len(smp.value) != ncol:
            problems.append("sample %d has %d values, sample_type has %d" % (n, len(smp.value), ncol))
        for i, v in enumerate(smp.value[:ncol]):
            value_sums[i] += v
        for lab in smp.label:
            k = s(lab.key, "label.key")
            if lab.str:
                s(lab.str, "label.str")
            if lab.num_unit:
                s(lab.num_unit, "label.num_unit")
            if k is not None:
                label_keys.add(k)
        frames = []
        for lid in smp.location_id:
            fr = locations.get(lid)
            if fr is None:
                problems.append("sample %d: unknown location id %d" % (n, lid))
                fr = ["?"]
            frames.extend(fr)
        depth = len(frames)
        max_depth = max(max_depth, depth)
        if depth > limits["max_stack_depth"]:
            deep += 1
        frames.reverse()  # root first
        v = smp.value[col] if col is not None and col < len(smp.value) else 0
        if v == 0:
            zero += 1
        stacks[tuple(frames)] += v
        if len(problems) > 20:
            break

    if problems and limits["strict_pprof"]:
        raise RequestError(400, "%s: malformed pprof: %s%s" % (
            where, "; ".join(problems[:5]), " (and more)" if len(problems) > 5 else ""))
    if len(prof.sample) > limits["max_profile_samples"]:
        raise RequestError(400, "%s: profile has %d samples, limit %d"
                           % (where, len(prof.sample), limits["max_profile_samples"]))

    now = time.time()
    age = None
    if prof.time_nanos:
        age = now - prof.time_nanos / 1e9
        if check_time and limits["check_time"]:
            if age > limits["reject_older_than_s"]:
                raise RequestError(400, "%s: profile time_nanos %d is %.0f s old, older than %d s"
                                   % (where, prof.time_nanos, age, limits["reject_older_than_s"]))
            if -age > limits["reject_newer_than_s"]:
                raise RequestError(400, "%s: profile time_nanos %d is %.0f s in the future, more than %d s"
                                   % (where, prof.time_nanos, -age, limits["reject_newer_than_s"]))

    cpu_total = None
    if sample_type:
        for i, (t, u) in enumerate(sample_type):
            if t == "cpu":
                cpu_total = value_sums[i]

    names = sorted(set(functions.values()))
    summary = {
        "format": "pprof",
        "gzipped": gz,
        "raw_size": len(raw),
        "uncompressed_size": len(data),
        "sample_type": sample_type,
        "period_type": period_type,
        "period": prof.period,
        "time_nanos": prof.time_nanos,
        "duration_nanos": prof.duration_nanos,
        "age_seconds": round(age, 3) if age is not None else None,
        "default_sample_type": s(prof.default_sample_type, "default_sample_type") if prof.default_sample_type else None,
        "num_samples": len(prof.sample),
        "zero_value_samples": zero,
        "value_sums": value_sums,
        "value_column": col,
        "total": value_sums[col] if col is not None else 0,
        "cpu_total": cpu_total,
        "string_count": nstr,
        "mapping_count": len(prof.mapping),
        "location_count": len(prof.location),
        "function_count": len(prof.function),
        "max_stack_depth": max_depth,
        "samples_over_depth_limit": deep,
        "sample_label_keys": sorted(label_keys),
        "comments": [st[i] for i in prof.comment if 0 <= i < nstr],
        "mappings": mapping_list,
        "function_names": names[:caps["max_function_names"]],
        "function_names_truncated": len(names) > caps["max_function_names"],
        "problems": problems[:20],
    }
    add_stacks(summary, stacks, caps)
    return summary, stacks


def add_stacks(summary, stacks, caps):
    top = stacks.most_common(caps["max_stacks"])
    summary["stacks"] = [[list(k), v] for k, v in top]
    summary["distinct_stacks"] = len(stacks)
    summary["stacks_truncated"] = len(stacks) > len(top)


def summarize_folded(body, sample_rate, caps):
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(422, "folded body is not UTF-8: %s" % e)
    stacks = collections.Counter()
    lines = 0
    max_depth = 0
    names = set()
    for n, line in enumerate(text.split("\n"), 1):
        if len(line.encode("utf-8")) > MAX_FOLDED_LINE:
            raise RequestError(422, "folded line %d is longer than %d bytes" % (n, MAX_FOLDED_LINE))
        line = line.rstrip("\r")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not stack:
            raise RequestError(422, "folded line %d has no '<stack> <count>' form: %.80r" % (n, line))
        try:
            c = int(count)
            if c < 0:
                raise ValueError
        except ValueError:
            raise RequestError(422, "folded line %d: count %.40r is not a non-negative integer" % (n, count))
        frames = tuple(stack.split(";"))
        names.update(frames)
        max_depth = max(max_depth, len(frames))
        stacks[frames] += c
        lines += 1
    total = sum(stacks.values())
    period = None
    cpu_total = None
    if sample_rate:
        period = int(1e9 / sample_rate)
        cpu_total = total * period
    names = sorted(names)
    summary = {
        "format": "folded",
        "gzipped": False,
        "raw_size": len(body),
        "uncompressed_size": len(body),
        "sample_type": [["samples", "count"]],
        "period_type": None,
        "period": period,
        "time_nanos": None,
        "duration_nanos": None,
        "num_samples": lines,
        "value_sums": [total],
        "value_column": 0,
        "total": total,
        "cpu_total": cpu_total,
        "string_count": None,
        "mapping_count": None,
        "location_count": None,
        "function_count": None,
        "max_stack_depth": max_depth,
        "function_names": names[:caps["max_function_names"]],
        "function_names_truncated": len(names) > caps["max_function_names"],
    }
    add_stacks(summary, stacks, caps)
    return summary, stacks


# --------------------------------------------------------------------------
# label validation (push)

def validate_labels(pairs, limits, where):
    if len(pairs) > limits["max_labels"]:
        raise RequestError(400, "%s: %d labels, limit %d" % (where, len(pairs), limits["max_labels"]))
    seen = set()
    for name, value in pairs:
        if len(name.encode("utf-8")) > limits["max_label_name_length"]:
            raise RequestError(400, "%s: label name %.60r... longer than %d bytes"
                               % (where, name, limits["max_label_name_length"]))
        if len(value.encode("utf-8")) > limits["max_label_value_length"]:
            raise RequestError(400, "%s: value of label %r longer than %d bytes"
                               % (where, name, limits["max_label_value_length"]))
        if not LABEL_NAME_RE.match(name):
            raise RequestError(400, "%s: invalid label name %r (must match [a-zA-Z_][a-zA-Z0-9_]*)"
                               % (where, name))
        if name in seen:
            raise RequestError(400, "%s: duplicate label name %r" % (where, name))
        seen.add(name)
    d = dict(pairs)
    if not d.get("__name__"):
        raise RequestError(400, "%s: missing __name__ label" % where)
    if not METRIC_NAME_RE.match(d["__name__"]):
        raise RequestError(400, "%s: invalid __name__ value %r" % (where, d["__name__"]))
    if not d.get("service_name"):
        raise RequestError(400, "%s: missing service_name label" % where)


# --------------------------------------------------------------------------
# legacy ingest name: app.type{k=v,...}

def parse_ingest_name(name):
    if not name:
        raise RequestError(400, "name is required")
    tags = []
    base = name
    if "{" in name:
        i = name.index("{")
        if not name.endswith("}"):
            raise RequestError(400, "name %r: '{' without a closing '}' at the end" % name)
        base, inner = name[:i], name[i + 1:-1]
        if "{" in inner or "}" in inner:
            raise RequestError(400, "name %r: nested braces" % name)
        seen = set()
        for part in inner.split(",") if inner.strip() else []:
            k, eq, v = part.partition("=")
            k = k.strip()
            if not eq:
                raise RequestError(400, "name %r: tag %r has no '='" % (name, part))
            if not LABEL_NAME_RE.match(k):
                raise RequestError(400, "name %r: invalid tag key %r" % (name, k))
            if k == "__name__":
                raise RequestError(400, "name %r: tag key __name__ is reserved" % name)
            if k in seen:
                raise RequestError(400, "name %r: duplicate tag key %r" % (name, k))
            seen.add(k)
            tags.append([k, v])
    app, dot, suffix = base.rpartition(".")
    if not dot or not app or not suffix:
        raise RequestError(400, "name %r: expected <app>.<type>{tags}, e.g. myapp.cpu{k=v}" % name)
    if not APP_NAME_RE.match(app):
        raise RequestError(400, "name %r: invalid characters in application name %r" % (name, app))
    if not LABEL_NAME_RE.match(suffix):
        raise RequestError(400, "name %r: invalid profile type %r" % (name, suffix))
    return app, suffix, tags


# --------------------------------------------------------------------------
# the query API

SELECTOR_PAIR_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')


def parse_selector(text):
    """A Prometheus/Pyroscope label selector {a="b",c=~"d.*"} as
    [(name, op, value or compiled regex)]; RequestError(400) when invalid."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise RequestError(400, "parse error: label selector %r is not in braces" % text)
    body, out, pos = t[1:-1], [], 0
    while body[pos:].strip():
        m = SELECTOR_PAIR_RE.match(body, pos)
        if not m:
            raise RequestError(400, "parse error in label selector %r at %r" % (text, body[pos:]))
        name, op = m.group(1), m.group(2)
        value = re.sub(r"\\(.)", lambda x: {"n": "\n", "t": "\t"}.get(x.group(1), x.group(1)), m.group(3))
        if op in ("=~", "!~"):
            try:
                value = re.compile("(?:%s)\\Z" % value)
            except re.error as e:
                raise RequestError(400, "invalid regular expression %r: %s" % (m.group(3), e))
        out.append((name, op, value))
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise RequestError(400, "parse error in label selector %r: want ',' at %r" % (text, body[pos:]))
            pos += 1
    return out


def selects(matchers, labels):
    for name, op, v in matchers:
        got = labels.get(name, "")
        if op == "=" and got != v or op == "!=" and got == v:
            return False
        if op == "=~" and not v.match(got) or op == "!~" and v.match(got):
            return False
    return True


def merge_profiles(stored, type_parts, matchers, start_ms, end_ms):
    """Merges the stored profiles of type name:type:unit:period_type:
    period_unit that the matchers select, with time_nanos in [start_ms,
    end_ms], into one pprof Profile of that sample type: samples summed by
    their stack of locations (mapping file and build id, address, lines of
    function name, file and line). Returns (Profile, profiles used)."""
    name, stype, sunit, ptype, punit = type_parts
    strings, string_ix = [""], {"": 0}

    def sx(v):
        if v not in string_ix:
            string_ix[v] = len(strings)
            strings.append(v)
        return string_ix[v]

    out = PB["profile"].Profile()
    mappings, functions, locations, samples = {}, {}, {}, collections.Counter()
    period, used = 0, 0
    for labels, raw in stored:
        if labels.get("__name__") != name or not selects(matchers, labels):
            continue
        data = gunzip_limited(raw, MAX_BODY, "stored profile") if is_gzip(raw) else raw
        prof = PB["profile"].Profile()
        prof.ParseFromString(data)
        st = prof.string_table
        if not (start_ms * 1000000 <= prof.time_nanos <= end_ms * 1000000):
            continue
        if (st[prof.period_type.type], st[prof.period_type.unit]) != (ptype, punit):
            continue
        idx = [i for i, t in enumerate(prof.sample_type) if (st[t.type], st[t.unit]) == (stype, sunit)]
        if not idx:
            continue
        used += 1
        period = period or prof.period
        maps = {m.id: m for m in prof.mapping}
        funcs = {f.id: f for f in prof.function}
        locs = {}
        for l in prof.location:
            m = maps.get(l.mapping_id)
            mkey = (st[m.filename], st[m.build_id]) if m else None
            lines = tuple((st[funcs[ln.function_id].name], st[funcs[ln.function_id].filename], ln.line)
                          for ln in l.line)
            locs[l.id] = (mkey, l.address, lines)
        for smp in prof.sample:
            samples[tuple(locs[i] for i in smp.location_id)] += smp.value[idx[0]]
    for stack, value in samples.items():
        if value <= 0:
            continue
        ids = []
        for mkey, addr, lines in stack:
            if (mkey, addr, lines) not in locations:
                loc = out.location.add(id=len(locations) + 1, address=addr)
                if mkey is not None:
                    if mkey not in mappings:
                        mappings[mkey] = out.mapping.add(id=len(mappings) + 1, filename=sx(mkey[0]),
                                                         build_id=sx(mkey[1])).id
                    loc.mapping_id = mappings[mkey]
                for fname, ffile, line in lines:
                    if (fname, ffile) not in functions:
                        functions[(fname, ffile)] = out.function.add(
                            id=len(functions) + 1, name=sx(fname), system_name=sx(fname),
                            filename=sx(ffile)).id
                    loc.line.add(function_id=functions[(fname, ffile)], line=line)
                locations[(mkey, addr, lines)] = loc.id
            ids.append(locations[(mkey, addr, lines)])
        out.sample.add(location_id=ids, value=[value])
    out.sample_type.add(type=sx(stype), unit=sx(sunit))
    out.period_type.type, out.period_type.unit = sx(ptype), sx(punit)
    out.period = period
    out.string_table.extend(strings)
    return out, used


# --------------------------------------------------------------------------
# shared state

class State:
    def __init__(self, log_path, caps):
        self.lock = threading.Lock()
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self.caps = caps
        self.started = time.time()
        self.seq = 0
        self.limits = dict(DEFAULT_LIMITS)
        self.fault = {"mode": "ok"}
        self.require_auth = {}      # header -> expected value; "basic" handled specially
        self.require_headers = {}
        self.reset_stats()

    def reset_stats(self):
        self.by_status = collections.Counter()
        self.by_kind = collections.defaultdict(lambda: {"attempts": 0, "delivered": 0,
                                                         "by_status": collections.Counter()})
        self.series = 0
        self.profiles = 0
        self.samples = 0
        self.values_by_service = collections.Counter()
        self.cpu_by_service = collections.Counter()
        self.profiles_by_service = collections.Counter()
        self.stacks_by_service = collections.defaultdict(collections.Counter)
        self.seen_ids = set()
        self.stored = collections.deque(maxlen=MAX_STORED_PROFILES)

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def take_fault(self):
        """Return the fault to apply to one push/ingest request, consuming a count."""
        with self.lock:
            f = dict(self.fault)
            if f["mode"] == "ok":
                return None
            if f.get("count") is not None:
                left = f["count"] - 1
                if left <= 0:
                    self.fault = {"mode": "ok"}
                else:
                    self.fault["count"] = left
            return f

    def control_view(self):
        auth = {}
        for k, v in self.require_auth.items():
            auth[k] = v
        return {"fault": dict(self.fault), "require_auth": auth,
                "require_headers": dict(self.require_headers), "limits": dict(self.limits)}

    def record(self, entry, stacks_list):
        """Account for one finished request and append its log line."""
        with self.lock:
            st = entry["status"]
            kind = entry["kind"]
            self.by_status[str(st)] += 1
            k = self.by_kind[kind]
            k["attempts"] += 1
            k["by_status"][str(st)] += 1
            if entry.get("delivered"):
                k["delivered"] += 1
                for s in entry.get("series") or []:
                    if not s.get("stored", True):
                        continue    # refused alone (a partial success)
                    self.series += 1
                    svc = s.get("service_name") or ""
                    for p in s.get("samples") or []:
                        self.profiles += 1
                        self.samples += p.get("num_samples") or 0
                        self.values_by_service[svc] += p.get("total") or 0
                        if p.get("cpu_total") is not None:
                            self.cpu_by_service[svc] += p["cpu_total"]
                        self.profiles_by_service[svc] += 1
                        if p.get("id"):
                            self.seen_ids.add(p["id"])
                for svc, stacks in stacks_list:
                    c = self.stacks_by_service[svc]
                    for key, v in stacks.items():
                        if key in c or len(c) < self.caps["max_stored_stacks"]:
                            c[key] += v
            if self.log_file:
                self.log_file.write(json.dumps(entry, separators=(",", ":"), default=str) + "\n")
                self.log_file.flush()

    def store(self, tenant, profiles):
        """Keep delivered profiles (labels, raw pprof) for the query API."""
        with self.lock:
            for labels, raw in profiles:
                self.stored.append((tenant, labels, raw))

    def stored_for(self, tenant):
        with self.lock:
            return [(l, r) for t, l, r in self.stored if t == tenant]

    def stats(self):
        with self.lock:
            return {
                "uptime_seconds": round(time.time() - self.started, 3),
                "requests": sum(self.by_status.values()),
                "requests_by_status": dict(self.by_status),
                "by_kind": {k: {"attempts": v["attempts"], "delivered": v["delivered"],
                                "by_status": dict(v["by_status"])} for k, v in self.by_kind.items()},
                "series": self.series,
                "profiles": self.profiles,
                "samples": self.samples,
                "cpu_by_service": dict(self.cpu_by_service),
                "values_by_service": dict(self.values_by_service),
                "profiles_by_service": dict(self.profiles_by_service),
                "control": self.control_view(),
            }

    def query(self, contains, service):
        with self.lock:
            out = {"contains": contains, "services": {}, "matched": 0, "total": 0,
                   "matched_stacks": 0}
            for svc, c in self.stacks_by_service.items():
                if service is not None and svc != service:
                    continue
                m = t = n = 0
                for key, v in c.items():
                    t += v
                    if any(contains in f for f in key):
                        m += v
                        n += 1
                out["services"][svc] = {"matched": m, "total": t, "matched_stacks": n}
                out["matched"] += m
                out["total"] += t
                out["matched_stacks"] += n
            return out

    def apply_control(self, body):
        """Apply a /_control JSON object; raises RequestError(400) on bad input."""
        if not isinstance(body, dict):
            raise RequestError(400, "control body must be a JSON object")
        known = {"mode", "status", "count", "seconds", "code", "message", "retry_after",
                 "require_auth", "require_headers", "limits", "reset"}
        unknown = set(body) - known
        if unknown:
            raise RequestError(400, "unknown control keys: %s" % ", ".join(sorted(unknown)))
        fault = None
        if "mode" in body:
            fault = parse_fault(body)
        elif set(body) & {"status", "count", "seconds", "code", "message", "retry_after"}:
            raise RequestError(400, "status/count/seconds need a \"mode\"")
        auth = None
        if "require_auth" in body:
            auth = parse_auth(body["require_auth"])
        headers = None
        if "require_headers" in body:
            headers = parse_headers(body["require_headers"])
        limits = None
        if "limits" in body:
            limits = body["limits"]
            if limits is None:
                limits = dict(DEFAULT_LIMITS)
            if not isinstance(limits, dict):
                raise RequestError(400, "limits must be an object or null")
            for k, v in limits.items():
                if k not in DEFAULT_LIMITS:
                    raise RequestError(400, "unknown limit %r (known: %s)" % (k, ", ".join(DEFAULT_LIMITS)))
                if type(v) is not type(DEFAULT_LIMITS[k]):
                    raise RequestError(400, "limit %r must be %s" % (k, type(DEFAULT_LIMITS[k]).__name__))
        with self.lock:
            if fault is not None:
                self.fault = fault
            if auth is not None:
                self.require_auth = auth
            if headers is not None:
                self.require_headers = headers
            if limits is not None:
                self.limits.update(limits)
            if body.get("reset"):
                self.reset_stats()
            return self.control_view()


def parse_fault(body):
    mode = body.get("mode")
    if mode not in ("ok", "status", "delay", "close"):
        raise RequestError(400, "mode must be one of ok, status, delay, close (got %r)" % (mode,))
    f = {"mode": mode}
    count = body.get("count")
    if count is not None:
        if type(count) is not int or count < 1:
            raise RequestError(400, "count must be a positive integer or omitted")
        f["count"] = count
    if mode == "status":
        st = body.get("status")
        if type(st) is not int or not 400 <= st <= 599:
            raise RequestError(400, "status mode needs an integer \"status\" in 400..599")
        f["status"] = st
        code = body.get("code", STATUS_CODES.get(st, "unknown"))
        msg = body.get("message", "injected fault: HTTP %d" % st)
        if not isinstance(code, str) or not isinstance(msg, str):
            raise RequestError(400, "code and message must be strings")
        f["code"] = code
        f["message"] = msg
        ra = body.get("retry_after")
        if ra is not None:
            if type(ra) is not int or ra < 0:
                raise RequestError(400, "retry_after must be a non-negative integer (seconds)")
            f["retry_after"] = ra
    elif mode == "delay":
        sec = body.get("seconds")
        if type(sec) not in (int, float) or not 0 <= sec <= 3600:
            raise RequestError(400, "delay mode needs \"seconds\" in 0..3600")
        f["seconds"] = sec
    return f


def parse_auth(v):
    if v is None or v == {}:
        return {}
    if not isinstance(v, dict):
        raise RequestError(400, "require_auth must be an object or null")
    out = {}
    for k, val in v.items():
        kl = k.lower()
        if kl == "basic":
            if (not isinstance(val, dict) or not isinstance(val.get("username"), str)
                    or not isinstance(val.get("password"), str)):
                raise RequestError(400, "require_auth.basic must be {\"username\": ..., \"password\": ...}")
            out["basic"] = {"username": val["username"], "password": val["password"]}
        elif kl == "bearer":
            if not isinstance(val, str):
                raise RequestError(400, "require_auth.bearer must be a string token")
            out["authorization"] = "Bearer " + val
        else:
            if not isinstance(val, str):
                raise RequestError(400, "require_auth.%s must be a string" % k)
            out[kl] = val
    if "basic" in out and "authorization" in out:
        raise RequestError(400, "require_auth: give either basic or authorization, not both")
    return out


def parse_headers(v):
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
        raise RequestError(400, "require_headers must be an object of strings or null")
    return {k.lower(): val for k, val in v.items()}


def check_auth(required, headers):
    """Return None when the request carries the required credentials, else a message."""
    for k, want in required.items():
        if k == "basic":
            got = headers.get("authorization")
            if got is None:
                return "missing authorization header (basic auth required)"
            scheme, _, cred = got.partition(" ")
            if scheme.lower() != "basic":
                return "authorization scheme %r, basic required" % scheme
            try:
                user, sep, pw = base64.b64decode(cred.strip(), validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return "authorization: bad basic credentials encoding"
            if not sep or user != want["username"] or pw != want["password"]:
                return "invalid basic auth credentials"
            continue
        got = headers.get(k)
        if got is None:
            return "missing %s header" % k
        if k == "authorization":
            gs, _, gr = got.partition(" ")
            ws, _, wr = want.partition(" ")
            if gs.lower() != ws.lower() or gr.strip() != wr.strip():
                return "authorization header does not match"
        elif got != want:
            return "%s header does not match" % k
    return None


# --------------------------------------------------------------------------
# HTTP handler

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kiln-test-receiver/1"

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):  # quiet; everything goes to --log
        if self.server.verbose:
            sys.stderr.write("receiver: %s - %s\n" % (self.address_string(), fmt % args))

    # -- body

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = bytearray()
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise RequestError(400, "truncated chunked body")
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise RequestError(400, "bad chunk size line")
                if size == 0:
                    while True:  # trailers
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    return bytes(out)
                if len(out) + size > MAX_BODY:
                    raise RequestError(413, "body larger than %d bytes" % MAX_BODY)
                chunk = self.rfile.read(size)
                if len(chunk) != size:
                    raise RequestError(400, "truncated chunked body")
                out += chunk
                self.rfile.readline(3)
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b""
        try:
            n = int(cl)
            if n < 0:
                raise ValueError
        except ValueError:
            raise RequestError(400, "bad Content-Length %r" % cl)
        if n > MAX_BODY:
            raise RequestError(413, "body of %d bytes, limit %d" % (n, MAX_BODY))
        data = self.rfile.read(n)
        if len(data) != n:
            raise RequestError(400, "body shorter than Content-Length (%d of %d bytes)" % (len(data), n))
        return data

    # -- responses

    def send(self, status, body=b"", ctype="application/json", extra=None):
        # Held back until the request's log line is written, so that a client
        # that got its answer always finds the line in the log.
        self._pending = (status, body, ctype, extra)

    def flush_response(self):
        if self._pending is None:
            return
        status, body, ctype, extra = self._pending
        self._pending = None
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status, obj, extra=None):
        self.send(status, (json.dumps(obj, indent=None) + "\n").encode(), "application/json", extra)

    def send_error_json(self, err, extra=None):
        self.send_json(err.status, {"code": err.code, "message": err.message}, extra)

    def send_status_proto(self, err, extra=None):
        """OTLP/HTTP: a failure's body is a google.rpc.Status."""
        st = PB["status"].Status(code=GRPC_CODES.get(err.status, 2), message=err.message)
        self.send(err.status, st.SerializeToString(), "application/x-protobuf", extra)

    # -- dispatch

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def handle_any(self):
        state = self.server.state
        t0 = time.time()
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        headers = {}
        for k, v in self.headers.items():
            k = k.lower()
            headers[k] = headers[k] + ", " + v if k in headers else v
        entry = {
            "seq": state.next_seq(),
            "time": round(t0, 6),
            "time_iso": now_iso(t0),
            "remote": "%s:%s" % self.client_address[:2],
            "method": self.command,
            "path": path,
            "query": dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True)),
            "kind": "other",
            "status": None,
            "delivered": False,
            "error": None,
            "fault": None,
            "headers": headers,
            "content_type": headers.get("content-type"),
            "content_encoding": headers.get("content-encoding"),
            "body_size": 0,
            "decoded_body_size": 0,
        }
        stacks_list = []
        self._pending = None
        try:
            if path.endswith(PUSH_SUFFIX):
                entry["kind"] = "push"
            elif path.endswith(OTLP_SUFFIX):
                entry["kind"] = "otlp"
            elif path.endswith(INGEST_SUFFIX):
                entry["kind"] = "ingest"
            elif path.endswith(SELECT_MERGE_SUFFIX):
                entry["kind"] = "select_merge"
            elif path == "/_control":
                entry["kind"] = "control"
            elif path == "/_stats":
                entry["kind"] = "stats"
            elif path in ("/_health", "/_query"):
                entry["kind"] = path[2:]
            try:
                body = self.read_body()
            except RequestError:
                self.close_connection = True
                raise
            entry["body_size"] = len(body)
            if entry["kind"] in ("push", "ingest", "otlp"):
                self.handle_ingestion(entry, body, url, headers, stacks_list)
            elif entry["kind"] == "select_merge":
                self.handle_select_merge(entry, body, headers)
            elif entry["kind"] == "control":
                if self.command == "GET":
                    self.reply(entry, 200, state.control_view())
                elif self.command == "POST":
                    try:
                        obj = json.loads(body.decode("utf-8") if body else "null")
                    except (UnicodeDecodeError, ValueError) as e:
                        raise RequestError(400, "control body is not valid JSON: %s" % e)
                    entry["control"] = obj
                    self.reply(entry, 200, state.apply_control(obj))
                else:
                    raise RequestError(405, "use GET or POST on /_control")
            elif entry["kind"] == "stats":
                self.reply(entry, 200, state.stats())
            elif entry["kind"] == "health":
                self.reply(entry, 200, {"status": "ok"})
            elif entry["kind"] == "query":
                q = entry["query"]
                if "contains" not in q:
                    raise RequestError(400, "/_query needs ?contains=SUBSTRING[&service_name=S]")
                self.reply(entry, 200, state.query(q["contains"], q.get("service_name")))
            else:
                raise RequestError(404, "no such endpoint: %s %s" % (self.command, path))
        except RequestError as e:
            entry["status"] = e.status
            entry["error"] = {"code": e.code, "message": e.message}
            if entry["kind"] == "otlp":
                self.send_status_proto(e, getattr(e, "extra_headers", None))
            else:
                self.send_error_json(e, getattr(e, "extra_headers", None))
        except _CloseConnection:
            entry["status"] = 0
            entry["error"] = {"code": "closed", "message": "connection closed without a response (fault injection)"}
            self.close_connection = True
        except Exception as e:  # a bug here must not take the receiver down
            entry["status"] = 500
            entry["error"] = {"code": "internal", "message": "receiver bug: %s: %s" % (type(e).__name__, e)}
            self.send_error_json(RequestError(500, entry["error"]["message"]))
        entry["duration_ms"] = round((time.time() - t0) * 1000, 3)
        try:
            state.record(entry, stacks_list)
        except Exception as e:
            sys.stderr.write("receiver: cannot record request: %s\n" % e)
        self.flush_response()

    def reply(self, entry, status, obj):
        entry["status"] = status
        self.send_json(status, obj)

    # -- push and ingest

    def handle_ingestion(self, entry, body, url, headers, stacks_list):
        state = self.server.state
        if self.command != "POST":
            raise RequestError(405, "%s needs POST" % entry["path"])
        entry.update(protocol=None, series=None, series_count=0, profile_count=0,
                     decode_error=None, delay_seconds=0)
        if entry["kind"] == "ingest":
            entry["ingest"] = None

        with state.lock:
            required_auth = dict(state.require_auth)
            required_headers = dict(state.require_headers)
            limits = dict(state.limits)

        # Decode first, so that even rejected attempts are logged with content.
        decode_error = None
        try:
            if entry["kind"] == "push":
                series, stacks = self.decode_push(entry, body, headers, limits)
            elif entry["kind"] == "otlp":
                series, stacks = self.decode_otlp(entry, body, headers, limits)
            else:
                series, stacks = self.decode_ingest(entry, body, url, headers, limits)
        except RequestError as e:
            decode_error = e
            series, stacks = getattr(e, "series", None), getattr(e, "stacks", [])
        if series is not None:
            entry["series"] = series
            entry["series_count"] = len(series)
            entry["profile_count"] = sum(len(s["samples"]) for s in series)
        if decode_error is not None:
            entry["decode_error"] = decode_error.message

        msg = check_auth(required_auth, headers)
        if msg:
            entry["fault"] = "auth"
            raise RequestError(401, msg, "unauthenticated")
        for k, want in required_headers.items():
            got = headers.get(k)
            if got != want:
                entry["fault"] = "headers"
                raise RequestError(401, "missing %s header" % k if got is None
                                   else "%s header %r does not match" % (k, got), "unauthenticated")

        fault = state.take_fault()
        if fault and fault["mode"] == "delay":
            entry["fault"] = "delay"
            entry["delay_seconds"] = fault["seconds"]
            time.sleep(fault["seconds"])
        elif fault and fault["mode"] == "close":
            entry["fault"] = "close"
            raise _CloseConnection()
        elif fault and fault["mode"] == "status":
            entry["fault"] = "status"
            e = RequestError(fault["status"], fault["message"], fault["code"])
            if "retry_after" in fault:
                e.extra_headers = {"Retry-After": str(fault["retry_after"])}
            raise e

        tenant = headers.get("x-scope-orgid", "")
        if decode_error:
            if stacks:
                # a partial success: what was stored counts as delivered
                stacks_list.extend(stacks)
                entry["delivered"] = True
                if entry["kind"] == "push" and entry.get("status") != 429:
                    state.store(tenant, getattr(self, "_stored", []))
            raise decode_error

        with state.lock:
            for s in series:
                for p in s["samples"]:
                    p["duplicate_id"] = bool(p.get("id")) and p["id"] in state.seen_ids
        stacks_list.extend(stacks)
        entry["delivered"] = True
        entry["status"] = 200
        if entry["kind"] == "push":
            state.store(tenant, getattr(self, "_stored", []))
            if entry.get("protocol") == "connect+json":
                self.send(200, b"{}", "application/json")
            else:
                self.send(200, b"", "application/proto")
        elif entry["kind"] == "otlp":
            self.send_otlp_response(entry)
        else:
            self.send(200, b"", "")

    # -- the query API: SelectMergeProfile

    def handle_select_merge(self, entry, body, headers):
        """Merges the stored profiles a SelectMergeProfileRequest selects into
        one pprof Profile, as Pyroscope's querier answers (Connect unary,
        application/proto or application/json); scoped to the request's
        tenant (X-Scope-OrgID), with the push's auth rules."""
        state = self.server.state
        if self.command != "POST":
            raise RequestError(405, "%s needs POST" % entry["path"])
        with state.lock:
            required_auth = dict(state.require_auth)
            required_headers = dict(state.require_headers)
        msg = check_auth(required_auth, headers)
        if msg:
            raise RequestError(401, msg, "unauthenticated")
        for k, want in required_headers.items():
            if headers.get(k) != want:
                raise RequestError(401, "missing or wrong %s header" % k, "unauthenticated")
        ctype = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype not in ("application/proto", "application/json"):
            raise RequestError(415, "unsupported Content-Type %r: application/proto or application/json"
                               % headers.get("content-type"))
        body = self.decode_body_encoding(entry, body, headers)
        req = PB["querier"].SelectMergeProfileRequest()
        try:
            if ctype == "application/proto":
                req.ParseFromString(body)
            else:
                PB["json_format"].Parse(body.decode("utf-8"), req)
        except Exception as e:
            raise RequestError(400, "cannot decode SelectMergeProfileRequest: %s" % (str(e) or type(e).__name__))
        parts = req.profile_typeID.split(":")
        if len(parts) != 5 or not all(parts):
            raise RequestError(400, "invalid profile type %r: want name:type:unit:period_type:period_unit"
                               % req.profile_typeID)
        matchers = parse_selector(req.label_selector)
        if req.start > req.end:
            raise RequestError(400, "invalid time range: start %d after end %d" % (req.start, req.end))
        entry["select"] = {"profile_typeID": req.profile_typeID, "label_selector": req.label_selector,
                          "start": req.start, "end": req.end}
        merged, used = merge_profiles(state.stored_for(headers.get("x-scope-orgid", "")),
                                      parts, matchers, req.start, req.end)
        entry["matched_profiles"] = used
        entry["status"] = 200
        if ctype == "application/proto":
            self.send(200, merged.SerializeToString(), "application/proto")
        else:
            self.send(200, PB["json_format"].MessageToJson(merged).encode(), "application/json")

    def decode_body_encoding(self, entry, body, headers):
        enc = (headers.get("content-encoding") or "identity").strip().lower()
        if enc in ("identity", ""):
            return body
        if enc == "gzip":
            out = gunzip_limited(body, MAX_BODY, "request body (Content-Encoding: gzip)")
            entry["decoded_body_size"] = len(out)
            return out
        raise RequestError(400, "unsupported Content-Encoding %r (gzip or identity)" % enc)

    def parse_message(self, entry, body, headers, msg, types, what):
        """Decodes body into msg, returns (msg, the body after
        Content-Encoding): the Content-Type picks the encoding
        (types: media type -> protocol, logged; application/json is the
        protobuf JSON mapping), Content-Encoding is undone first. 415 for
        another Content-Type, 400 for a body that does not decode."""
        ctype = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype not in types:
            raise RequestError(415, "unsupported Content-Type %r: %s takes %s" % (
                headers.get("content-type"), what, " or ".join(types)))
        entry["protocol"] = types[ctype]
        body = self.decode_body_encoding(entry, body, headers)
        entry["decoded_body_size"] = len(body)
        try:
            if ctype == "application/json":
                PB["json_format"].Parse(body.decode("utf-8"), msg)
            else:
                msg.ParseFromString(body)
        except Exception as e:
            raise RequestError(400, "cannot decode %s (%s): %s" % (
                msg.DESCRIPTOR.name, entry["protocol"], str(e) or type(e).__name__))
        return msg, body

    def decode_push(self, entry, body, headers, limits):
        caps = self.server.state.caps
        self._stored = []
        req, _ = self.parse_message(entry, body, headers, PB["push"].PushRequest(), {
            "application/proto": "connect+proto", "application/json": "connect+json"},
            "the push API (Connect unary)")
        series = []
        stacks = []
        first_error = None
        burst = 0
        for i, s in enumerate(req.series):
            pairs = [(l.name, l.value) for l in s.labels]
            where = "series %d" % i
            out = {"labels": [list(p) for p in pairs], "service_name": dict(pairs).get("service_name"),
                   "labels_map": dict(pairs), "samples": [], "error": None, "stored": False}
            series.append(out)
            burst += sum(len(n) + len(v) for n, v in pairs)
            series_stacks = []
            try:
                validate_labels(pairs, limits, where)
            except RequestError as e:
                out["error"] = e.message
            for j, raw in enumerate(s.samples):
                w = "%s sample %d (ID %r)" % (where, j, raw.ID)
                head = {"id": raw.ID, "id_is_uuid": valid_uuid(raw.ID)}
                try:
                    summ, st = summarize_pprof(raw.raw_profile, limits, caps, True, w)
                except RequestError as e:
                    head.update(error=e.message, raw_size=len(raw.raw_profile), gzipped=is_gzip(raw.raw_profile))
                    out["samples"].append(head)
                    out["error"] = out["error"] or e.message
                    first_error = first_error or e
                    continue
                burst += summ["uncompressed_size"]
                out["samples"].append(dict(head, error=None, **summ))
                series_stacks.append((out["service_name"] or "", st))
            if out["error"] is None:
                # Pyroscope stores each series on its own
                out["stored"] = True
                stacks.extend(series_stacks)
                self._stored.extend((dict(pairs), raw.raw_profile) for raw in s.samples)
            elif first_error is None:
                first_error = RequestError(400, out["error"])
        entry["burst_bytes"] = burst
        if burst > limits["burst_bytes"]:
            for out in series:
                out["stored"] = False
            entry["series"] = series
            raise RequestError(429, "request of %d bytes (labels and decompressed profiles) is over the "
                               "rate limit's burst of %d bytes" % (burst, limits["burst_bytes"]))
        if first_error:
            # The stored series count; the answer is the first failure's.
            entry["partial"] = any(out["stored"] for out in series)
            first_error.stacks = stacks
            first_error.series = series
            raise first_error
        return series, stacks

    def send_otlp_response(self, entry):
        """200: an ExportProfilesServiceResponse, partial_success set when
        some profiles were refused (in the request's encoding)."""
        resp = PB["otlp"].ExportProfilesServiceResponse()
        refused = [s for s in entry["series"] if not s["stored"]]
        if refused:
            resp.partial_success.rejected_profiles = len(refused)
            resp.partial_success.error_message = refused[0]["error"]
            entry["partial"] = True
        entry["rejected_profiles"] = len(refused)
        if entry.get("protocol") == "otlp+json":
            self.send(200, PB["json_format"].MessageToJson(resp).encode(), "application/json")
        else:
            self.send(200, resp.SerializeToString(), "application/x-protobuf")

    def decode_otlp(self, entry, body, headers, limits):
        """OTLP/HTTP profiles: application/x-protobuf (or JSON) body, an
        ExportProfilesServiceRequest. A request a consumer cannot read (bad
        protobuf, a broken dictionary) is refused whole, 400; a profile that
        breaks a limit (samples, time window, attributes, a sample with no
        value) is refused alone: a partial success. Each resource profile is
        logged as a series of one sample (its profile)."""
        caps = self.server.state.caps
        req, body = self.parse_message(entry, body, headers, PB["otlp"].ExportProfilesServiceRequest(), {
            "application/x-protobuf": "otlp+proto", "application/json": "otlp+json"}, "OTLP/HTTP")
        if caps["save_bodies"]:
            with open(os.path.join(caps["save_bodies"], "%d.otlp.pb" % entry["seq"]), "wb") as f:
                f.write(body)
        profiles, problems = otlp_decode.resolve(req)
        entry["dictionary"] = {k: len(getattr(req.dictionary, k)) for k in (
            "mapping_table", "location_table", "function_table", "link_table", "string_table",
            "attribute_table", "stack_table")}
        if problems:
            raise RequestError(400, "malformed request: %s%s" % (
                "; ".join(problems[:5]), " (and more)" if len(problems) > 5 else ""))
        series, stacks = [], []
        now = time.time()
        for i, prof in enumerate(profiles):
            svc = prof["resource"].get("service.name") or ""
            err = prof["problems"][0] if prof["problems"] else None
            age = now - prof["time_nanos"] / 1e9 if prof["time_nanos"] else None
            if err is None and len(prof["samples"]) > limits["max_profile_samples"]:
                err = "profile %d has %d samples, limit %d" % (
                    i, len(prof["samples"]), limits["max_profile_samples"])
            if err is None and len(prof["resource"]) > limits["max_labels"]:
                err = "profile %d: %d resource attributes, limit %d" % (
                    i, len(prof["resource"]), limits["max_labels"])
            if err is None and age is not None and limits["check_time"] and (
                    age > limits["reject_older_than_s"] or -age > limits["reject_newer_than_s"]):
                err = "profile %d: time_unix_nano %d is %.0f s from now, outside [-%d, +%d] s" % (
                    i, prof["time_nanos"], -age, limits["reject_older_than_s"],
                    limits["reject_newer_than_s"])
            if err is None and limits["reject_service"] and svc == limits["reject_service"]:
                err = "profile %d: service.name %r refused (reject_service)" % (i, svc)
            by_stack = collections.Counter()
            attrs = []
            for smp in prof["samples"]:
                by_stack[tuple(smp["frames"])] += smp["value"]
                if smp["attributes"] not in attrs and len(attrs) < caps["max_stacks"]:
                    attrs.append(smp["attributes"])
            total = sum(by_stack.values())
            names = sorted({f for k in by_stack for f in k})
            summary = {
                "format": "otlp", "id": prof["profile_id"], "error": err,
                "scope": prof["scope"], "sample_type": [prof["sample_type"]],
                "period_type": prof["period_type"], "period": prof["period"],
                "time_nanos": prof["time_nanos"], "duration_nanos": prof["duration_nanos"],
                "age_seconds": round(age, 3) if age is not None else None,
                "num_samples": len(prof["samples"]), "value_sums": [total], "total": total,
                "cpu_total": total if prof["sample_type"][0] == "cpu" else None,
                "sample_attributes": attrs,
                "function_names": names[:caps["max_function_names"]],
            }
            add_stacks(summary, by_stack, caps)
            series.append({"labels": sorted(prof["resource"].items()), "service_name": svc,
                           "labels_map": prof["resource"], "samples": [summary], "error": err,
                           "stored": err is None})
            if err is None:
                stacks.append((svc, by_stack))
        return series, stacks

    def decode_ingest(self, entry, body, url, headers, limits):
        caps = self.server.state.caps
        q = entry["query"]
        app, suffix, tags = parse_ingest_name(q.get("name", ""))
        info = {"name": q.get("name"), "app": app, "profile_type": suffix, "tags": tags}
        for k in ("from", "until", "sampleRate"):
            v = q.get(k)
            if v is None or v == "":
                info[k] = None
                continue
            try:
                info[k] = int(v)
            except ValueError:
                raise RequestError(400, "%s=%r is not an integer" % (k, v))
        if info["sampleRate"] is not None and info["sampleRate"] <= 0:
            raise RequestError(400, "sampleRate must be positive")
        for k in ("format", "spyName", "units", "aggregationType"):
            info[k] = q.get(k)
        entry["ingest"] = info
        svc = dict(tags).get("service_name", app)
        labels = [["__name__", suffix]]
        if "service_name" not in dict(tags):
            labels.append(["service_name", app])
        labels += tags
        if len(labels) > limits["max_labels"]:
            raise RequestError(400, "name %r: %d labels, limit %d" % (q.get("name"), len(labels), limits["max_labels"]))

        body = self.decode_body_encoding(entry, body, headers)
        entry["decoded_body_size"] = len(body)
        fmt = (info["format"] or "folded").lower()
        ctype = (headers.get("content-type") or "").lower()
        entry["protocol"] = "ingest"
        if ctype.startswith("multipart/form-data"):
            fields = parse_multipart(headers.get("content-type"), body)
            info["multipart_fields"] = sorted(fields)
            if "profile" not in fields:
                raise RequestError(422, "multipart body has no 'profile' field (fields: %s)"
                                   % ", ".join(sorted(fields)))
            body = fields["profile"]
            if info["format"] is None:
                fmt = "pprof"
        if fmt == "pprof":
            try:
                summ, st = summarize_pprof(body, limits, caps, False, "ingest body")
            except RequestError as e:
                raise RequestError(422 if e.status == 400 else e.status, e.message)
        elif fmt in ("folded", "lines"):
            data = body
            if is_gzip(body):
                try:
                    data = gunzip_limited(body, MAX_BODY, "ingest body")
                except RequestError as e:
                    raise RequestError(422, e.message)
            summ, st = summarize_folded(data, info["sampleRate"], caps)
            summ["gzipped"] = data is not body
            summ["raw_size"] = len(body)
        else:
            raise RequestError(422, "format %r is not supported by this receiver (pprof or folded)" % fmt)
        series = [{"labels": labels, "service_name": svc, "labels_map": dict(labels), "error": None,
                   "samples": [dict({"id": None, "id_is_uuid": False, "error": None}, **summ)]}]
        return series, [(svc, st)]


class _CloseConnection(Exception):
    pass




def parse_multipart(ctype, body):
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode("latin-1") + b"\r\nMIME-Version: 1.0\r\n\r\n" + body)
    if not msg.is_multipart():
        raise RequestError(422, "multipart/form-data body could not be parsed (boundary?)")
    fields = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[name] = part.get_payload(decode=True) or b""
    return fields


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


# --------------------------------------------------------------------------
# main

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Local Pyroscope-like receiver for kiln's tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    ap.add_argument("--port-file", help="write the port number to this file once listening")
    ap.add_argument("--proto-dir", default=os.path.normpath(os.path.join(here, "..", "..", "user", "proto")),
                    help="folder with the .proto files (push, types, profile, otlp_*, rpc_status)")
    ap.add_argument("--log", help="append one JSON line per request to this file")
    ap.add_argument("--mode", choices=("ok", "status", "delay", "close"), default="ok",
                    help="initial fault mode")
    ap.add_argument("--status", type=int, help="status for --mode status")
    ap.add_argument("--count", type=int, help="requests the fault applies to (default: until changed)")
    ap.add_argument("--seconds", type=float, help="delay for --mode delay")
    ap.add_argument("--retry-after", type=int, help="Retry-After header for --mode status")
    ap.add_argument("--require-auth", metavar="VALUE",
                    help="required Authorization header value, e.g. 'Bearer abc'")
    ap.add_argument("--basic-auth", metavar="USER:PASSWORD", help="required HTTP basic credentials")
    ap.add_argument("--require-header", action="append", default=[], metavar="NAME=VALUE",
                    help="required request header (repeatable), e.g. X-Scope-OrgID=t1")
    ap.add_argument("--no-time-check", action="store_true",
                    help="accept profiles of any time_nanos (for replaying old fixtures)")
    ap.add_argument("--max-stacks", type=int, default=500, help="stacks logged per profile")
    ap.add_argument("--max-function-names", type=int, default=10000)
    ap.add_argument("--save-bodies", metavar="DIR",
                    help="write each delivered OTLP request body (after gzip) to DIR/<seq>.otlp.pb")
    ap.add_argument("--verbose", action="store_true", help="access log on stderr")
    args = ap.parse_args()

    from google.protobuf import json_format  # noqa: deferred so --help works anywhere
    from google.protobuf.message import DecodeError
    pbdir, mods = generate_modules(args.proto_dir)
    PB.update(mods, json_format=json_format, DecodeError=DecodeError)

    caps = {"max_stacks": args.max_stacks, "max_function_names": args.max_function_names,
            "max_mappings": 64, "max_stored_stacks": 200000, "save_bodies": args.save_bodies}
    try:
        state = State(args.log, caps)
    except OSError as e:
        shutil.rmtree(pbdir, ignore_errors=True)
        sys.exit("receiver: cannot open --log %s: %s" % (args.log, e))
    try:
        ctl = {}
        if args.mode != "ok":
            ctl.update(mode=args.mode)
            for k in ("status", "count", "seconds", "retry_after"):
                v = getattr(args, k)
                if v is not None:
                    ctl[k] = int(v) if k != "seconds" else v
        auth = {}
        if args.require_auth:
            auth["authorization"] = args.require_auth
        if args.basic_auth:
            u, sep, p = args.basic_auth.partition(":")
            if not sep:
                raise RequestError(400, "--basic-auth needs USER:PASSWORD")
            auth["basic"] = {"username": u, "password": p}
        if auth:
            ctl["require_auth"] = auth
        if args.require_header:
            hdrs = {}
            for h in args.require_header:
                k, sep, v = h.partition("=")
                if not sep:
                    raise RequestError(400, "--require-header needs NAME=VALUE")
                hdrs[k] = v
            ctl["require_headers"] = hdrs
        if args.no_time_check:
            ctl["limits"] = {"check_time": False}
        if ctl:
            state.apply_control(ctl)
    except RequestError as e:
        shutil.rmtree(pbdir, ignore_errors=True)
        sys.exit("receiver: bad option: %s" % e.message)

    try:
        httpd = Server((args.host, args.port), Handler)
    except OSError as e:
        shutil.rmtree(pbdir, ignore_errors=True)
        sys.exit("receiver: cannot listen on %s:%d: %s" % (args.host, args.port, e))
    httpd.state = state
    httpd.verbose = args.verbose
    port = httpd.server_address[1]

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print("listening on %s:%d" % (args.host, port), flush=True)

    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    while not stop.wait(0.1):
        pass
    httpd.shutdown()
    httpd.server_close()
    with state.lock:
        if state.log_file:
            state.log_file.close()
            state.log_file = None
    shutil.rmtree(pbdir, ignore_errors=True)
    print("receiver: stopped", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
