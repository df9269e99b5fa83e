# SPDX-License-Identifier: BSD-2-Clause
"""The chart's default render (and deploy/kubernetes/kiln.yaml) run kiln
with least privilege, whatever values.yaml says: checked against fixed
expectations, not against the values, so that a changed default fails.

    check_least_privilege.py PREFLIGHT_C RENDER...

Prints one line per problem; exits 1 if there is any.
"""
import re
import sys

import yaml

# What kiln uses (helm/kiln/README.md, "Security modes"): BPF and PERFMON
# to start at all (user/core/preflight.c checks them), the rest to name
# every frame.
NEEDED = ["BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "CHECKPOINT_RESTORE", "SYSLOG"]


def containers(doc):
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", spec) if doc["kind"] == "DaemonSet" else spec
    return pod, pod.get("containers", []) + pod.get("initContainers", [])


def check(path, out):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    ds = [d for d in docs if d["kind"] == "DaemonSet"]
    nps = [d for d in docs if d["kind"] == "NetworkPolicy"]
    for d in docs:
        if d["kind"] not in ("DaemonSet", "Pod"):
            continue
        _, cs = containers(d)
        for c in cs:
            if (c.get("securityContext") or {}).get("privileged"):
                out.append(f"{path}: {d['kind']} {d['metadata']['name']}: container {c['name']} is privileged")
    if len(ds) != 1:
        out.append(f"{path}: {len(ds)} DaemonSets")
        return
    pod, cs = containers(ds[0])
    for c in cs:
        sc = c.get("securityContext") or {}
        seccomp = (sc.get("seccompProfile") or (pod.get("securityContext") or {}).get("seccompProfile") or {})
        if seccomp.get("type") != "RuntimeDefault":
            out.append(f"{path}: {c['name']}: seccompProfile {seccomp}, want RuntimeDefault")
        caps = sc.get("capabilities") or {}
        if caps.get("drop") != ["ALL"]:
            out.append(f"{path}: {c['name']}: drops {caps.get('drop')}, want [ALL]")
        if sorted(caps.get("add") or []) != sorted(NEEDED):
            out.append(f"{path}: {c['name']}: adds {caps.get('add')}, want exactly {NEEDED}")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{path}: {c['name']}: privilege escalation allowed")
        if sc.get("readOnlyRootFilesystem") is not True:
            out.append(f"{path}: {c['name']}: writable root filesystem")
    if pod.get("hostNetwork") or pod.get("hostIPC"):
        out.append(f"{path}: host network or IPC namespace")
    labels = ds[0]["spec"]["template"]["metadata"]["labels"]
    selects = [n for n in nps
               if all(labels.get(k) == v for k, v in n["spec"]["podSelector"].get("matchLabels", {}).items())]
    if len(selects) != 1:
        out.append(f"{path}: {len(selects)} NetworkPolicies select the agent pods, want 1")
        return
    sp = selects[0]["spec"]
    if sorted(sp.get("policyTypes", [])) != ["Egress", "Ingress"]:
        out.append(f"{path}: NetworkPolicy types {sp.get('policyTypes')}, want Ingress and Egress")
    ingress_ports = [p.get("port") for r in sp.get("ingress", []) for p in r.get("ports", [])]
    if ingress_ports != ["metrics"] or any(not r.get("from") for r in sp.get("ingress", [])):
        out.append(f"{path}: NetworkPolicy ingress {sp.get('ingress')}: want the metrics port, from named peers")
    if not sp.get("egress") or any(not r.get("ports") for r in sp["egress"]):
        out.append(f"{path}: NetworkPolicy egress {sp.get('egress')}: want named ports only")


def main():
    out = []
    with open(sys.argv[1]) as f:
        pre = f.read()
    if not re.search(r"\bCAP_BPF\b", pre) or not re.search(r"\bCAP_PERFMON\b", pre):
        out.append(f"{sys.argv[1]}: no longer checks CAP_BPF and CAP_PERFMON: update NEEDED")
    for path in sys.argv[2:]:
        check(path, out)
    for p in out:
        print(p)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
