#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks Prometheus text exposition (format 0.0.4), as kiln's /metrics serves it.

usage: check_prom_text.py [FILE | -]            text from a file (default stdin)
       check_prom_text.py --url URL             GET URL; also checks status and Content-Type
       ... [--expect NAME]...                   fail unless family NAME is present

Two checks: prometheus_client's own parser (Debian: python3-prometheus-client,
which loads only in /usr/bin/python3), and a strict line check of our own,
because that parser accepts some text Prometheus rejects (a family split in
two groups, samples under another family's TYPE).

Exit status: 0 valid, 1 invalid (reasons on stderr), 77 prometheus_client
missing (the automake "skip" status; callers may skip rather than fail).
"""
import argparse
import re
import sys
import urllib.request

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
VALUE = r'[+-]?(?:Inf|NaN|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+\.)'
SAMPLE_RE = re.compile(r'^(%s)(?:\{(?:%s(?:,%s)*,?)?\})? (%s)(?: -?[0-9]+)?$'
                       % (NAME, LABEL, LABEL, VALUE))
HELP_RE = re.compile(r'^# HELP (%s) (?:[^\\\n]|\\[\\n])*$' % NAME)
TYPE_RE = re.compile(r'^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$' % NAME)
SUFFIXES = {'histogram': ('_bucket', '_sum', '_count'), 'summary': ('', '_sum', '_count')}


def strict_check(text):
    """Errors of the text against the 0.0.4 format, as a list of strings."""
    errors = []
    seen = set()        # families whose group has ended or is current
    current = None      # (name, type) of the family being written
    if text and not text.endswith('\n'):
        errors.append('the last line does not end in a newline')
    for no, line in enumerate(text.split('\n')[:-1] if text else [], 1):
        m_help, m_type = HELP_RE.match(line), TYPE_RE.match(line)
        if m_help or m_type:
            name = (m_help or m_type).group(1)
            if current is None or current[0] != name:
                if name in seen:
                    errors.append('line %d: family %s appears in two groups' % (no, name))
                seen.add(name)
                current = (name, None)
            if m_type:
                if current[1] is not None:
                    errors.append('line %d: second TYPE for %s' % (no, name))
                current = (name, m_type.group(2))
            continue
        if line.startswith('#'):
            if line.startswith('# HELP') or line.startswith('# TYPE'):
                errors.append('line %d: malformed: %r' % (no, line))
            continue
        if not line.strip():
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            errors.append('line %d: malformed sample: %r' % (no, line))
            continue
        name = m.group(1)
        if current is not None:
            fam, typ = current
            names = [fam + s for s in SUFFIXES.get(typ, ('',))]
            if name in names:
                continue
        errors.append('line %d: sample %s outside its family\'s group' % (no, name))
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('file', nargs='?', default='-')
    ap.add_argument('--url')
    ap.add_argument('--expect', action='append', default=[], metavar='NAME')
    args = ap.parse_args()

    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        print('check_prom_text: prometheus_client missing '
              '(apt-get install python3-prometheus-client; use /usr/bin/python3)',
              file=sys.stderr)
        return 77

    errors = []
    if args.url:
        with urllib.request.urlopen(args.url, timeout=10) as r:
            ctype = r.headers.get('Content-Type', '')
            if not ctype.startswith('text/plain; version=0.0.4'):
                errors.append('Content-Type %r is not text/plain; version=0.0.4' % ctype)
            text = r.read().decode('utf-8')
    elif args.file == '-':
        text = sys.stdin.read()
    else:
        with open(args.file, encoding='utf-8') as f:
            text = f.read()

    errors += strict_check(text)
    families = {}
    try:
        for fam in text_string_to_metric_families(text):
            families[fam.name] = fam
    except Exception as e:  # the parser raises ValueError, and worse on junk
        errors.append('prometheus_client: %s: %s' % (type(e).__name__, e))
    # prometheus_client names a counter family without its "_total".
    present = set(families) | {f + '_total' for f, v in families.items()
                               if v.type == 'counter'}
    for name in args.expect:
        if name not in present:
            errors.append('family %s missing' % name)

    for e in errors:
        print('check_prom_text: ' + e, file=sys.stderr)
    if errors:
        return 1
    print('check_prom_text: ok: %d families, %d samples'
          % (len(families), sum(len(f.samples) for f in families.values())))
    return 0


if __name__ == '__main__':
    sys.exit(main())
