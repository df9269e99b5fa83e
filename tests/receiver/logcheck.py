#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Evaluate a Python expression against receiver.py's JSON-lines log.

  logcheck.py LOG EXPR [--body FILE] [--print]

Exit status 0 when EXPR is true, 1 when false (a short description of the
last push/ingest entry goes to stderr), 2 on a bad log or expression.
With --print, prints the value of EXPR as JSON and exits 0.

Names available in EXPR:
  L           every log entry, in order
  A           push, ingest and OTLP entries (attempts, whatever their status)
  D           delivered entries (content stored: status 200, or a push
              whose other series failed; profiles() skips those)
  e           the last entry of A
  body        bytes of --body FILE (b"" without it); js() parses it as JSON
  p(i, j)     profile summary j of series i of e (default 0, 0)
  profiles(entries=D)            every profile summary in those entries
  has_function(sub, entries=D)   some function name contains sub
  stack_value(sub, entries=D)    sum of stack values whose frames contain sub
  cpu(service, entries=D)        sum of cpu_total for a service_name
  labels(entry=e, i=0)           dict of series i's labels
"""

import json
import sys


def main():
    args = sys.argv[1:]
    show = "--print" in args
    if show:
        args.remove("--print")
    body = b""
    if "--body" in args:
        i = args.index("--body")
        try:
            with open(args[i + 1], "rb") as f:
                body = f.read()
        except (IndexError, OSError):
            body = b""
        del args[i:i + 2]
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    path, expr = args
    try:
        with open(path) as f:
            L = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as err:
        sys.stderr.write("logcheck: cannot read %s: %s\n" % (path, err))
        return 2
    A = [x for x in L if x.get("kind") in ("push", "ingest", "otlp")]
    D = [x for x in A if x.get("delivered")]
    e = A[-1] if A else None

    def js(b=None):
        return json.loads(body if b is None else b)

    def p(i=0, j=0):
        return e["series"][i]["samples"][j]

    def profiles(entries=None):
        for x in D if entries is None else entries:
            for s in x.get("series") or []:
                if not s.get("stored", True):
                    continue
                for q in s.get("samples") or []:
                    yield q

    def has_function(sub, entries=None):
        return any(sub in f for q in profiles(entries) for f in q.get("function_names") or [])

    def stack_value(sub, entries=None):
        return sum(v for q in profiles(entries) for st, v in q.get("stacks") or []
                   if any(sub in f for f in st))

    def cpu(service, entries=None):
        total = 0
        for x in D if entries is None else entries:
            for s in x.get("series") or []:
                if s.get("service_name") == service:
                    total += sum(q.get("cpu_total") or 0 for q in s.get("samples") or [])
        return total

    def labels(entry=None, i=0):
        return dict((entry or e)["series"][i]["labels"])

    env = dict(L=L, A=A, D=D, e=e, body=body, js=js, p=p, profiles=profiles,
               has_function=has_function, stack_value=stack_value, cpu=cpu, labels=labels)
    try:
        value = eval("(" + expr + "\n)", env)
    except Exception as err:
        if show:
            sys.stderr.write("logcheck: %s: %s\n" % (type(err).__name__, err))
            return 2
        value = False
        sys.stderr.write("  logcheck: expression raised %s: %s\n" % (type(err).__name__, err))
    if show:
        print(json.dumps(value, default=list))
        return 0
    if not value:
        if e is None:
            sys.stderr.write("  logcheck: no push/ingest entries in %s\n" % path)
        else:
            keep = ("seq", "path", "status", "error", "fault", "decode_error")
            sys.stderr.write("  last entry: %s\n" % json.dumps({k: e[k] for k in keep if k in e}))
    return 0 if value else 1


if __name__ == "__main__":
    sys.exit(main())
