# SPDX-License-Identifier: BSD-2-Clause
"""Checks of helm/kiln's values (Debian's /usr/bin/python3: yaml, jsonschema).

    check_values.py schema CHART [VALUES...]   defaults + VALUES validate
    check_values.py comments CHART             a comment above every value
    check_values.py readme CHART README        README's table = the values
                                               (helm/kiln/README.md, '## Chart values')

Prints one line per problem; exits 1 if there is any.
"""
import json
import re
import sys

import jsonschema
import yaml

KEY = re.compile(r"^(\s*)([A-Za-z][\w.-]*):(.*)$")


def merge(dst, src):
    """helm's merge of a values file over the defaults."""
    for k, v in src.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = v


def load(path):
    with open(path) as f:
        return yaml.safe_load(f) or {}


def schema(chart, files):
    with open(f"{chart}/values.schema.json") as f:
        s = json.load(f)
    jsonschema.Draft7Validator.check_schema(s)
    values = load(f"{chart}/values.yaml")
    for path in files:
        merge(values, load(path))
    v = jsonschema.Draft7Validator(s)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(v.iter_errors(values), key=lambda e: list(map(str, e.path)))]


def comments(chart):
    """Every value has a comment above it: each leaf key, or the key of the
    Kubernetes object it sits in (resources, updateStrategy)."""
    with open(f"{chart}/values.yaml") as f:
        lines = f.read().split("\n")
    out = []
    parents = []  # (indent, commented) of the keys enclosing this line
    for i, line in enumerate(lines):
        m = KEY.match(line)
        if not m or line.lstrip().startswith("-"):
            continue
        indent = len(m.group(1))
        while parents and parents[-1][0] >= indent:
            parents.pop()
        prev = lines[i - 1] if i else ""
        commented = prev.strip().startswith("#") and len(prev) - len(prev.lstrip()) == indent
        nxt = next((n for n in lines[i + 1:] if n.strip()), "")
        if not m.group(3).strip() and len(nxt) - len(nxt.lstrip()) > indent \
                and not nxt.lstrip().startswith("-"):
            parents.append((indent, commented))
        elif not commented and not any(c for _, c in parents):
            out.append(f"values.yaml:{i + 1}: {m.group(2)} has no comment above it")
    return out


def leaves(d, prefix=""):
    for k, v in d.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            yield from leaves(v, path + ".")
        else:
            yield path


def readme(chart, path):
    """The chart README's values table names every value, and only values."""
    values = load(f"{chart}/values.yaml")
    with open(path) as f:
        text = f.read()
    # The section runs from its heading to the next heading of its level or above.
    m = re.search(r"^(#{2,3}) Chart values[ \t]*$", text, re.M)
    if not m:
        return [f"{path}: no '## Chart values' section"]
    end = re.search(rf"^#{{1,{len(m.group(1))}}} ", text[m.end():], re.M)
    body = text[m.end():m.end() + end.start()] if end else text[m.end():]
    documented = set(re.findall(r"^\| `([A-Za-z][\w.]*)` \|", body, re.M))
    paths = set(leaves(values))
    out = [f"{path}: chart value {p} is not in the table" for p in sorted(paths)
           if not any(p == d or p.startswith(d + ".") for d in documented)]
    out += [f"{path}: {d} is no chart value" for d in sorted(documented)
            if not any(p == d or p.startswith(d + ".") for p in paths)]
    return out


def main():
    cmd, chart, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    problems = {"schema": lambda: schema(chart, rest),
                "comments": lambda: comments(chart),
                "readme": lambda: readme(chart, rest[0])}[cmd]()
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
