#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/docs/check_links.py [ROOT]: every relative link of the docs resolves.

Checks README.md, docs/*.md, helm/kiln/README.md and tests/bench/README.md:
each markdown link or image whose target is not a URL must name a file or
directory that exists (relative to the page), and a #anchor must name a
heading of the target page (GitHub's rule: lower case, punctuation but '-'
and '_' removed, spaces to '-', a repeated heading gets -1, -2, ...). Links
inside code blocks and code spans are not links. README.md must also stay
under 12 288 bytes.

Prints PASS or FAIL per page (a FAIL names each broken link with its line),
then "N passed, N failed, 0 skipped"; exits 1 when anything failed.
"""
import glob
import os
import re
import sys

README_MAX = 12288
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """(line number, raw line, line with code spans blanked), outside fenced
    code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, line, re.sub(r"`[^`]*`", lambda s: " " * len(s.group(0)), line)


def slug(heading):
    h = re.sub(r"`([^`]*)`", r"\1", heading)
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)      # a link shows its text
    h = h.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line, _ in prose_lines(text):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else f"{s}-{k}")
        # explicit HTML anchors: <a name="x"> or id="x"
        out |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
        cache[path] = out
    return cache[path]


def check_page(root, page):
    problems = []
    with open(page, encoding="utf-8") as f:
        text = f.read()
    for n, _, line in prose_lines(text):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):     # http:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                problems.append(f"line {n}: {target}: {os.path.relpath(dest, root)} does not exist")
                continue
            if not os.path.abspath(dest).startswith(os.path.abspath(root) + os.sep):
                problems.append(f"line {n}: {target}: outside the repository")
                continue
            if anchor:
                if not dest.endswith(".md") or os.path.isdir(dest):
                    problems.append(f"line {n}: {target}: an anchor into a file that is not markdown")
                elif anchor not in anchors(dest):
                    problems.append(f"line {n}: {target}: no heading #{anchor} in {os.path.relpath(dest, root)}")
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    pages += [os.path.join(root, p) for p in ("helm/kiln/README.md", "tests/bench/README.md")]
    passed = failed = 0
    for page in pages:
        name = os.path.relpath(page, root)
        if not os.path.exists(page):
            print(f"FAIL {name}: missing")
            failed += 1
            continue
        problems = check_page(root, page)
        if problems:
            print(f"FAIL {name}: {len(problems)} broken link(s)")
            for p in problems:
                print(f"    {p}")
            failed += 1
        else:
            print(f"PASS {name}: every relative link and anchor resolves")
            passed += 1
    size = os.path.getsize(os.path.join(root, "README.md"))
    if size <= README_MAX:
        print(f"PASS readme-size: README.md is {size} bytes (at most {README_MAX})")
        passed += 1
    else:
        print(f"FAIL readme-size: README.md is {size} bytes, more than {README_MAX}")
        failed += 1
    print(f"{passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
