# SPDX-License-Identifier: BSD-2-Clause
"""Checks one render of helm/kiln against the values it was rendered from.

    /usr/bin/python3 check_render.py --help-text FILE --chart DIR [--values F]...
        [--release kiln] [--namespace ns] [--kube-version v1.30.0] RENDER

Prints one line per problem found and exits 1 if there is any. What it
checks: kinds and apiVersions; names, namespaces, label values; the
DaemonSet (selector, hostPID, NODE_NAME, mounts, probes on the metrics port,
security mode, every --flag known to `kiln agent --help`, values passed
through); secrets only from existing Secrets, mounted as files; the
Service, RBAC, ServiceMonitor and test hook against the DaemonSet.
"""
import argparse
import re
import sys

import yaml

API_VERSIONS = {
    "ServiceAccount": "v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "Service": "v1",
    "DaemonSet": "apps/v1",
    "ServiceMonitor": "monitoring.coreos.com/v1",
    "Pod": "v1",
    "NetworkPolicy": "networking.k8s.io/v1",
}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding"}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET", re.I)

problems = []


def problem(msg):
    problems.append(msg)


def merge(dst, src):
    """helm's merge of a values file over the defaults."""
    for k, v in src.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = v


def subset(small, big):
    return all(big.get(k) == v for k, v in (small or {}).items())


def fullname(values, chart_name, release):
    if values.get("fullnameOverride"):
        return values["fullnameOverride"][:63].rstrip("-")
    name = release if chart_name in release else f"{release}-{chart_name}"
    return name[:63].rstrip("-")


def check_metadata(doc, namespace):
    kind, meta = doc.get("kind"), doc.get("metadata") or {}
    want = API_VERSIONS.get(kind)
    if want is None:
        problem(f"unexpected kind {kind}")
    elif doc.get("apiVersion") != want:
        problem(f"{kind}: apiVersion {doc.get('apiVersion')}, want {want}")
    name = meta.get("name", "")
    if not DNS_SUBDOMAIN.match(name) or len(name) > 63:
        problem(f"{kind}: bad name {name!r}")
    if kind in CLUSTER_SCOPED:
        if "namespace" in meta:
            problem(f"{kind} {name}: cluster-scoped but has a namespace")
    elif meta.get("namespace") != namespace:
        problem(f"{kind} {name}: namespace {meta.get('namespace')!r}, want {namespace!r}")
    for k, v in (meta.get("labels") or {}).items():
        if not isinstance(v, str) or not LABEL_VALUE.match(v):
            problem(f"{kind} {name}: label {k}={v!r} is not a label value")


def flag_of(arg):
    return arg.split("=", 1)[0]


def arg_value(args, flag):
    vals = [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
    return vals


def check_daemonset(ds, v, opts, help_flags):
    spec = ds["spec"]
    tmpl = spec["template"]
    pod = tmpl["spec"]
    labels = tmpl["metadata"].get("labels", {})
    annotations = tmpl["metadata"].get("annotations") or {}
    if not spec["selector"].get("matchLabels") or not subset(spec["selector"]["matchLabels"], labels):
        problem("DaemonSet: selector does not match the pod template's labels")
    if pod.get("hostPID") is not True:
        problem("DaemonSet: hostPID is not true")
    if spec.get("updateStrategy", {}).get("type") != "RollingUpdate":
        problem("DaemonSet: updateStrategy is not RollingUpdate")
    for key in ("tolerations", "nodeSelector", "affinity", "imagePullSecrets"):
        if (pod.get(key) or type(v[key])()) != v[key]:
            problem(f"DaemonSet: {key} {pod.get(key)!r}, values say {v[key]!r}")
    if pod.get("priorityClassName", "") != v["priorityClassName"]:
        problem("DaemonSet: priorityClassName differs from the values")
    if not subset(v["podAnnotations"], annotations):
        problem("DaemonSet: podAnnotations missing")
    if len(pod["containers"]) != 1:
        problem("DaemonSet: want one container")
    c = pod["containers"][0]
    tag = v["image"]["tag"] or opts.app_version
    if c["image"] != f"{v['image']['repository']}:{tag}":
        problem(f"DaemonSet: image {c['image']}")
    if c.get("resources") != v["resources"]:
        problem("DaemonSet: resources differ from the values")

    env = {e["name"]: e for e in c.get("env", [])}
    if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        problem("DaemonSet: NODE_NAME does not come from spec.nodeName")
    for e in c.get("env", []):
        if SECRET_NAME.search(e["name"]) and "value" in e:
            problem(f"DaemonSet: secret-like variable {e['name']} set inline")
    for e in v["extraEnv"]:
        if env.get(e["name"]) != e:
            problem(f"DaemonSet: extraEnv {e['name']} missing")

    # Volumes and mounts.
    volumes = {vol["name"]: vol for vol in pod.get("volumes", [])}
    if len(volumes) != len(pod.get("volumes", [])):
        problem("DaemonSet: duplicate volume names")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    for m in c.get("volumeMounts", []):
        if m["name"] not in volumes:
            problem(f"DaemonSet: volumeMount {m['name']} names no volume")
    cg = mounts.get("/sys/fs/cgroup")
    if not cg or not cg.get("readOnly") or volumes.get(cg["name"], {}).get("hostPath", {}).get("path") != "/sys/fs/cgroup":
        problem("DaemonSet: /sys/fs/cgroup is not the host's, read-only")
    tmp = mounts.get("/tmp")
    if not tmp or "emptyDir" not in volumes.get(tmp["name"], {}):
        problem("DaemonSet: /tmp is not an emptyDir")
    # The unwind table cache: an emptyDir at the agent's default
    # --unwind-cache, twice --unwind-cache-size; none when that is 0.
    size = str(v["agent"]["unwindCacheSize"])
    cache = mounts.get("/var/cache/kiln")
    if size == "0":
        if cache:
            problem("DaemonSet: an unwind cache volume with agent.unwindCacheSize 0")
    else:
        want = f"{int(size[:-1]) * 2}{size[-1]}i"
        got = volumes.get(cache["name"], {}).get("emptyDir", {}).get("sizeLimit") if cache else None
        if got != want:
            problem(f"DaemonSet: /var/cache/kiln emptyDir of {got}, want {want}")
    for vol in volumes.values():
        if "hostPath" in vol and vol["hostPath"]["path"] != "/sys/fs/cgroup" and vol not in v["extraVolumes"]:
            problem(f"DaemonSet: unexpected hostPath {vol['hostPath']['path']}")
    for m in v["extraVolumeMounts"]:
        if mounts.get(m["mountPath"]) != m:
            problem(f"DaemonSet: extraVolumeMount {m['mountPath']} missing")

    # Security.
    sc = c.get("securityContext", {})
    if sc.get("readOnlyRootFilesystem") is not True:
        problem("DaemonSet: root filesystem is writable")
    if v["securityContext"]["mode"] == "privileged":
        if sc.get("privileged") is not True:
            problem("DaemonSet: privileged mode but not privileged")
    else:
        caps = sc.get("capabilities", {})
        if sc.get("privileged") or caps.get("drop") != ["ALL"] or caps.get("add") != v["securityContext"]["capabilities"]:
            problem(f"DaemonSet: capabilities mode: privileged={sc.get('privileged')} capabilities={caps}")
        if sc.get("allowPrivilegeEscalation") is not False:
            problem("DaemonSet: capabilities mode allows privilege escalation")
        want_seccomp = v["securityContext"]["seccompProfile"]
        if sc.get("seccompProfile", {}).get("type") != want_seccomp:
            problem(f"DaemonSet: capabilities mode: seccompProfile {sc.get('seccompProfile')}, want {want_seccomp}")
        field = sc.get("appArmorProfile", {}).get("type") == "Unconfined"
        note = annotations.get("container.apparmor.security.beta.kubernetes.io/" + c["name"]) == "unconfined"
        if (field, note) != ((True, False) if opts.kube_minor >= 30 else (False, True)):
            problem(f"DaemonSet: AppArmor unconfined by field={field} annotation={note} on 1.{opts.kube_minor}")

    # Arguments: known flags, values passed through.
    args = c.get("args", [])
    for a in args:
        if not a.startswith("--") or flag_of(a)[2:] not in help_flags:
            problem(f"DaemonSet: argument {a!r} is no flag of kiln agent --help")
    expect = {
        "--server-api": [v["pyroscope"]["api"]],
        "--frequency": [str(v["agent"]["frequency"])],
        "--interval": [str(v["agent"]["interval"])],
        "--unwind-memory": [str(v["agent"]["unwindMemory"])],
        "--unwind-cache-size": [str(v["agent"]["unwindCacheSize"])],
        "--metrics-addr": [f"0.0.0.0:{v['metrics']['port']}"],
        "--health-addr": [f"0.0.0.0:{v['metrics']['healthPort']}"],
        "--log-level": [v["agent"]["logLevel"]],
        "--log-format": [v["agent"]["logFormat"]],
        "--tenant-id": [v["pyroscope"]["tenantID"]] if v["pyroscope"]["tenantID"] else [],
        "--tag": [f"{k}={val}" for k, val in sorted(v["agent"]["tags"].items())],
        "--pod-label": v["agent"]["podLabels"],
        "--include-namespace": v["agent"]["namespaces"]["include"],
        "--exclude-namespace": v["agent"]["namespaces"]["exclude"],
    }
    for flag, want in expect.items():
        if arg_value(args, flag) != want:
            problem(f"DaemonSet: {flag} {arg_value(args, flag)}, want {want}")
    server = arg_value(args, "--server")
    if len(server) != 1 or not re.match(r"^https?://[^{}\s]+$", server[0]):
        problem(f"DaemonSet: --server {server}")
    otlp = arg_value(args, "--otlp-endpoint")
    if len(otlp) != bool(v["otlp"]["endpoint"]) or not all(
            re.match(r"^https?://[^{}\s]+$", u) for u in otlp):
        problem(f"DaemonSet: --otlp-endpoint {otlp}, otlp.endpoint is {v['otlp']['endpoint']!r}")
    insecure = "--allow-insecure-credentials" in args
    if insecure != bool(v["pyroscope"]["allowInsecureCredentials"]):
        problem(f"DaemonSet: --allow-insecure-credentials {'given' if insecure else 'missing'}, "
                f"pyroscope.allowInsecureCredentials is {v['pyroscope']['allowInsecureCredentials']}")
    extra = v["extraArgs"]
    if extra and args[-len(extra):] != extra:
        problem("DaemonSet: extraArgs are not appended")

    # Secrets: from the existing Secret, as files on secret volumes.
    def secret_file(flag, secret, key, what):
        files = arg_value(args, flag)
        if not secret:
            if files:
                problem(f"DaemonSet: {flag} without {what}.existingSecret")
            return
        if len(files) != 1:
            problem(f"DaemonSet: {what}.existingSecret set but {flag} is {files}")
            return
        directory, base = files[0].rsplit("/", 1)
        m = mounts.get(directory)
        vol = volumes.get(m["name"], {}) if m else {}
        sec = vol.get("secret", {})
        if not m or not m.get("readOnly") or sec.get("secretName") != secret or \
                {"key": key, "path": base} not in sec.get("items", []):
            problem(f"DaemonSet: {flag}={files[0]} is not key {key} of Secret {secret} mounted read-only")

    ba, bt = v["pyroscope"]["basicAuth"], v["pyroscope"]["bearerToken"]
    secret_file("--basic-auth-password-file", ba["existingSecret"], ba["passwordKey"], "basicAuth")
    secret_file("--bearer-token-file", bt["existingSecret"], bt["key"], "bearerToken")
    user = env.get("KILN_BASIC_AUTH_USER")
    if ba["existingSecret"]:
        ref = (user or {}).get("valueFrom", {}).get("secretKeyRef", {})
        if ref != {"name": ba["existingSecret"], "key": ba["usernameKey"]}:
            problem(f"DaemonSet: KILN_BASIC_AUTH_USER is not key {ba['usernameKey']} of {ba['existingSecret']}")
    elif user:
        problem("DaemonSet: KILN_BASIC_AUTH_USER without basicAuth.existingSecret")

    # Probes on the health port, apart from the metrics port's clients.
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if ports.get("metrics") != v["metrics"]["port"] or ports.get("health") != v["metrics"]["healthPort"] \
            or v["metrics"]["port"] == v["metrics"]["healthPort"]:
        problem(f"DaemonSet: ports {ports}, want metrics {v['metrics']['port']} and health {v['metrics']['healthPort']}, two ports")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/ready")):
        get = c.get(probe, {}).get("httpGet", {})
        port = ports.get(get.get("port"), get.get("port"))
        if get.get("path") != path or port != v["metrics"]["healthPort"]:
            problem(f"DaemonSet: {probe} is {get}, want {path} on port {v['metrics']['healthPort']}")
    return labels, ports


def url_port(url):
    """The port of a server's URL, as the NetworkPolicy template finds it."""
    scheme, rest = url.split("://", 1)
    host = rest.split("/", 1)[0]
    m = re.search(r":([0-9]+)$", host)
    return int(m.group(1)) if m else (443 if scheme == "https" else 80)


def check_network_policy(np, v, opts, selector, pod_labels, ports, server, otlp):
    """Ingress to the metrics port only, from the configured peers and the
    test pod; egress only to DNS, the Pyroscope server, the OTLP endpoint
    (when there is one) and the API."""
    n = v["networkPolicy"]
    sp = np["spec"]
    if sp.get("podSelector", {}).get("matchLabels") != selector:
        problem("NetworkPolicy: podSelector is not the agents' selector")
    if sorted(sp.get("policyTypes", [])) != ["Egress", "Ingress"]:
        problem(f"NetworkPolicy: policyTypes {sp.get('policyTypes')}, want Ingress and Egress")
    test_peer = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "kiln",
                                                 "app.kubernetes.io/instance": opts.release,
                                                 "app.kubernetes.io/component": "test"}}}
    want_in = [{"from": n["metricsFrom"] + [test_peer], "ports": [{"port": "metrics", "protocol": "TCP"}]}]
    if n["healthFrom"]:
        want_in.append({"from": n["healthFrom"], "ports": [{"port": "health", "protocol": "TCP"}]})
    if sp.get("ingress") != want_in:
        problem(f"NetworkPolicy: ingress {sp.get('ingress')}, want {want_in}")
    for rule in sp.get("ingress", []):
        for p in rule.get("ports", []):
            if p.get("port") not in ports:
                problem(f"NetworkPolicy: ingress port {p.get('port')} names no container port")
    port = n["pyroscopePort"] or (url_port(server[0]) if server else 0)

    def rule(ports_, to):
        r = {"ports": [{"port": p, "protocol": "TCP"} for p in ports_]}
        if to:
            r["to"] = to
        return r
    want_out = [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
                rule([port], n["pyroscopeTo"])]
    want_out += [rule([url_port(u)], n["otlpTo"]) for u in otlp]
    want_out.append(rule(n["kubeAPIPorts"], n["kubeAPITo"]))
    if sp.get("egress") != want_out:
        problem(f"NetworkPolicy: egress {sp.get('egress')}, want {want_out}")


def check(opts):
    with open(opts.help_text) as f:
        help_flags = set(re.findall(r"--([a-z0-9][a-z0-9-]*)", f.read()))
    with open(f"{opts.chart}/Chart.yaml") as f:
        chart = yaml.safe_load(f)
    opts.app_version = chart["appVersion"]
    with open(f"{opts.chart}/values.yaml") as f:
        v = yaml.safe_load(f)
    for path in opts.values:
        with open(path) as f:
            merge(v, yaml.safe_load(f) or {})
    with open(opts.render) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]

    by_kind = {}
    for d in docs:
        check_metadata(d, opts.namespace)
        by_kind.setdefault(d.get("kind"), []).append(d)
    if any(k == "Secret" for k in by_kind):
        problem("the chart renders a Secret: secrets must come from existing ones")
    want = {"DaemonSet": 1, "Service": 1,
            "ServiceAccount": int(v["serviceAccount"]["create"]),
            "ClusterRole": int(v["rbac"]["create"]), "ClusterRoleBinding": int(v["rbac"]["create"]),
            "ServiceMonitor": int(v["metrics"]["serviceMonitor"]["enabled"]),
            "Pod": int(not opts.skip_tests),
            "NetworkPolicy": int(v["networkPolicy"]["enabled"])}
    for kind, n in want.items():
        if len(by_kind.get(kind, [])) != n:
            problem(f"{len(by_kind.get(kind, []))} {kind} objects, want {n}")
    if problems:
        return

    name = fullname(v, chart["name"], opts.release)
    ds = by_kind["DaemonSet"][0]
    pod_labels, ports = check_daemonset(ds, v, opts, help_flags)
    selector = ds["spec"]["selector"]["matchLabels"]
    sa_name = v["serviceAccount"]["name"] or (name if v["serviceAccount"]["create"] else "default")
    if ds["spec"]["template"]["spec"].get("serviceAccountName") != sa_name:
        problem(f"DaemonSet: serviceAccountName is not {sa_name}")
    for sa in by_kind.get("ServiceAccount", []):
        if sa["metadata"]["name"] != sa_name:
            problem(f"ServiceAccount {sa['metadata']['name']}, want {sa_name}")

    svc = by_kind["Service"][0]
    sp = svc["spec"]
    if not sp.get("selector") or not subset(sp["selector"], pod_labels):
        problem("Service: selector does not match the agent pods")
    sports = {p["name"]: p for p in sp.get("ports", [])}
    m = sports.get("metrics", {})
    if m.get("port") != v["metrics"]["port"] or m.get("targetPort") not in ports:
        problem(f"Service: metrics port {m}")

    for role in by_kind.get("ClusterRole", []):
        if role["rules"] != [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]:
            problem(f"ClusterRole: rules {role['rules']}, want pods get/list/watch only")
    for b in by_kind.get("ClusterRoleBinding", []):
        if b["roleRef"] != {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": by_kind["ClusterRole"][0]["metadata"]["name"]}:
            problem(f"ClusterRoleBinding: roleRef {b['roleRef']}")
        if b["subjects"] != [{"kind": "ServiceAccount", "name": sa_name, "namespace": opts.namespace}]:
            problem(f"ClusterRoleBinding: subjects {b['subjects']}")

    for sm in by_kind.get("ServiceMonitor", []):
        if not subset(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]):
            problem("ServiceMonitor: selector does not match the Service")
        if sm["spec"].get("namespaceSelector") != {"matchNames": [opts.namespace]}:
            problem("ServiceMonitor: namespaceSelector is not the release namespace")
        ep = sm["spec"]["endpoints"]
        if [e.get("port") for e in ep] != ["metrics"] or ep[0].get("path") != "/metrics":
            problem(f"ServiceMonitor: endpoints {ep}")
        if v["metrics"]["serviceMonitor"]["interval"] and ep[0].get("interval") != v["metrics"]["serviceMonitor"]["interval"]:
            problem("ServiceMonitor: interval not passed")
        if not subset(v["metrics"]["serviceMonitor"]["labels"], sm["metadata"]["labels"]):
            problem("ServiceMonitor: labels not passed")

    for np in by_kind.get("NetworkPolicy", []):
        args = ds["spec"]["template"]["spec"]["containers"][0].get("args", [])
        check_network_policy(np, v, opts, selector, pod_labels, ports, arg_value(args, "--server"),
                             arg_value(args, "--otlp-endpoint"))

    for test in by_kind.get("Pod", []):
        if test["metadata"].get("annotations", {}).get("helm.sh/hook") != "test":
            problem("Pod: not a helm test hook")
        if subset(selector, test["metadata"].get("labels", {})) or subset(sp["selector"], test["metadata"].get("labels", {})):
            problem("Pod: the test pod matches the agents' selector")
        script = " ".join(test["spec"]["containers"][0].get("command", []))
        url = f"http://{name}.{opts.namespace}.svc:{v['metrics']['port']}"
        if url not in script or "/ready" not in script:
            problem(f"Pod: the test does not ask {url}/ready")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--help-text", required=True)
    ap.add_argument("--chart", required=True)
    ap.add_argument("--values", action="append", default=[])
    ap.add_argument("--release", default="kiln")
    ap.add_argument("--namespace", default="default")
    ap.add_argument("--kube-version", default="v1.30.0")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("render")
    opts = ap.parse_args()
    opts.kube_minor = int(opts.kube_version.lstrip("v").split(".")[1])
    try:
        check(opts)
    except (KeyError, IndexError, TypeError, AttributeError, yaml.YAMLError) as e:
        problem(f"malformed render: {type(e).__name__}: {e}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
