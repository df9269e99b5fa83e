#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A fake Kubernetes API server for kiln's pod watcher tests (stdlib only).

It serves the one resource kiln uses, GET /api/v1/pods, the way the real
API server does:

  list   ?fieldSelector=spec.nodeName%3D<node>&resourceVersion=0[&limit=L]
         -> 200 {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"N"},"items":[...]}
         With limit, the list is paged (Kubernetes' chunked list): at most L
         items, sorted by namespace/name, and metadata.continue when more
         follow; ?limit=L&continue=TOKEN reads the next page of the same
         snapshot (same resourceVersion). A token the server no longer
         knows (or an injected "continue" failure) gets HTTP 410 Expired.
  watch  ?fieldSelector=...&watch=1&resourceVersion=N&allowWatchBookmarks=true&timeoutSeconds=S
         -> 200, Transfer-Encoding: chunked, one {"type":...,"object":...} per line:
            events after N are replayed from history, then live ones follow
            until timeoutSeconds, an "end_watches" control, or an error.
         A watch from a resourceVersion older than the compaction point gets
         an ERROR event carrying a Status with code 410 (reason Expired), or
         an HTTP 410 when the server was told to answer that way.

Every /api request must carry "Authorization: Bearer <token>" when a token
is set (401 Status otherwise) and a fieldSelector of exactly
spec.nodeName=<node> (400 otherwise); only pods whose spec.nodeName is the
node are listed or sent.

Tests drive it over HTTP:
  POST /_control  one JSON object or a list of them, each with an "op":
    {"op":"add","pod":{...},"silent":false}  store a pod (ADDED event unless silent)
    {"op":"modify","pod":{...}}              replace it (MODIFIED)
    {"op":"delete","uid":"..."}              remove it (DELETED)
    {"op":"bookmark","rv":N}                 move resourceVersion to N (optional)
                                             and send live watches a BOOKMARK
    {"op":"end_watches"}                     end live watches normally
    {"op":"drop_watches"}                    close live watches without the final chunk
    {"op":"expire","mode":"event"|"http"}    compact history: watches from older
                                             versions get 410 (ERROR event or HTTP);
                                             live watches get it now
    {"op":"fail","kind":"list"|"watch"|"continue"|"any","status":500,"count":1}
                                             answer the next requests with that status
                                             ("continue": list pages after the first;
                                             410 there is an expired continue token)
    {"op":"list_delay","seconds":S}          answer first list pages S seconds late
    {"op":"expire_continue"}                 forget every continue token (410 on use)
    {"op":"token","token":"..."}             expect another token from now on
    {"op":"raw","data":"..."}                write raw bytes to live watches
    {"op":"reset_log"}
  GET /_log    the request log: [{"method","path","kind","query":{...},"token","status"}]
  GET /_state  {"resourceVersion":N,"watches":live watch count,"pods":count}

Usage: fake_apiserver.py --node NODE [--token T] [--scenario FILE] [--port P]
                         [--list-delay S]
Prints "PORT <port>" on stdout once it listens. A scenario file is
{"resourceVersion": N, "pods": [pod, ...]}.
"""

import argparse
import base64
import json
import queue
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

END = object()
DROP = object()


class State:
    def __init__(self, node, token, rv=1000, pods=()):
        self.lock = threading.RLock()
        self.node = node
        self.token = token
        self.rv = rv
        self.compacted = 0          # watches from a version below this are too old
        self.expire_http = False    # answer them with HTTP 410 instead of an ERROR event
        self.pods = {}              # uid -> pod
        self.history = []           # (rv, event) for replay
        self.watches = []           # live watch queues
        self.fail = []              # [kind, status, count]
        self.log = []
        self.list_delay = 0.0       # seconds before a first list page
        self.snapshots = {}         # continue id -> (rv, items) of a paged list
        self.next_snapshot = 1
        for pod in pods:
            self.rv += 1
            self._stamp(pod)
            self.pods[pod["metadata"]["uid"]] = pod

    def _stamp(self, pod):
        pod.setdefault("kind", "Pod")
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def on_node(self, pod):
        return (pod.get("spec") or {}).get("nodeName") == self.node

    def _emit(self, etype, pod):
        event = {"type": etype, "object": pod}
        self.history.append((self.rv, event))
        if self.on_node(pod):
            for q in self.watches:
                q.put(event)

    def control(self, op):
        kind = op.get("op")
        if kind == "add" or kind == "modify":
            pod = op["pod"]
            self.rv += 1
            self._stamp(pod)
            self.pods[pod["metadata"]["uid"]] = pod
            if not op.get("silent"):
                self._emit("ADDED" if kind == "add" else "MODIFIED", pod)
        elif kind == "delete":
            pod = self.pods.pop(op["uid"])
            self.rv += 1
            self._stamp(pod)
            self._emit("DELETED", pod)
        elif kind == "bookmark":
            if "rv" in op:
                self.rv = int(op["rv"])
            mark = {"type": "BOOKMARK", "object": {
                "kind": "Pod", "apiVersion": "v1",
                "metadata": {"resourceVersion": str(self.rv),
                             "annotations": {"k8s.io/initial-events-end": "true"}}}}
            for q in self.watches:
                q.put(mark)
        elif kind == "end_watches":
            for q in self.watches:
                q.put(END)
        elif kind == "drop_watches":
            for q in self.watches:
                q.put(DROP)
        elif kind == "expire":
            self.rv += 1
            self.compacted = self.rv
            self.history = []
            self.expire_http = op.get("mode") == "http"
            for q in self.watches:
                if self.expire_http:
                    q.put(END)
                else:
                    q.put(expired_event(0))
                    q.put(END)
        elif kind == "fail":
            self.fail.append([op.get("kind", "any"), int(op["status"]), int(op.get("count", 1))])
        elif kind == "token":
            self.token = op["token"]
        elif kind == "raw":
            for q in self.watches:
                q.put(op["data"].encode())
        elif kind == "list_delay":
            self.list_delay = float(op["seconds"])
        elif kind == "expire_continue":
            self.snapshots = {}
        elif kind == "reset_log":
            self.log = []
        else:
            raise ValueError("unknown op %r" % kind)

    def take_failure(self, kind, cont=False):
        for rule in self.fail:
            if (rule[0] in (kind, "any") or (cont and rule[0] == "continue")) and rule[2] > 0:
                rule[2] -= 1
                return rule[1]
        return None


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def expired_event(rv):
    return {"type": "ERROR", "object": status_body(
        410, "Expired", "too old resource version: %d" % rv)}


EXPIRED_CONTINUE = ("The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter.")


def page_token(snap, offset):
    raw = json.dumps({"snapshot": snap, "offset": offset}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def parse_token(token):
    try:
        obj = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(obj["snapshot"]), int(obj["offset"])
    except (ValueError, KeyError, TypeError):
        return None


REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           410: "Expired", 500: "InternalError", 503: "ServiceUnavailable"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def record(self, kind, query, token, status):
        state = self.server.state
        with state.lock:
            state.log.append({"method": self.command, "path": urlsplit(self.path).path,
                              "kind": kind, "query": query, "token": token,
                              "status": status, "time": time.monotonic()})

    def do_POST(self):
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if urlsplit(self.path).path != "/_control":
            self.send_json(404, status_body(404, "NotFound", "no such path"))
            return
        try:
            ops = json.loads(raw)
            ops = ops if isinstance(ops, list) else [ops]
            with state.lock:
                for op in ops:
                    state.control(op)
                rv = state.rv
        except (ValueError, KeyError, TypeError) as e:
            self.send_json(400, {"error": str(e)})
            return
        self.send_json(200, {"ok": True, "resourceVersion": rv})

    def do_GET(self):
        state = self.server.state
        url = urlsplit(self.path)
        if url.path == "/_log":
            with state.lock:
                self.send_json(200, list(state.log))
            return
        if url.path == "/_state":
            with state.lock:
                self.send_json(200, {"resourceVersion": state.rv, "watches": len(state.watches),
                                     "pods": len(state.pods)})
            return
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        watch = query.get("watch") in ("1", "true")
        kind = "watch" if watch else "list"
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        if url.path != "/api/v1/pods":
            self.record("other", query, token, 404)
            self.send_json(404, status_body(404, "NotFound", "the server could not find the requested resource"))
            return
        cont = query.get("continue")
        with state.lock:
            expected = state.token
            failure = state.take_failure(kind, bool(cont))
            delay = state.list_delay if kind == "list" and not cont else 0
        if expected is not None and token != expected:
            self.record(kind, query, token, 401)
            self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        if query.get("fieldSelector") != "spec.nodeName=" + state.node:
            self.record(kind, query, token, 400)
            self.send_json(400, status_body(400, "BadRequest", "unexpected fieldSelector %r"
                                            % query.get("fieldSelector")))
            return
        if failure:
            self.record(kind, query, token, failure)
            self.send_json(failure, status_body(failure, REASONS.get(failure, "Unknown"),
                                                "injected failure"))
            return
        if not watch:
            if delay:
                time.sleep(delay)
            self.serve_list(query, token, cont)
            return
        self.serve_watch(query, token)

    def serve_list(self, query, token, cont):
        state = self.server.state
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            limit = -1
        if limit < 0 or (cont and not limit):
            self.record("list", query, token, 400)
            self.send_json(400, status_body(400, "BadRequest", "bad limit"))
            return
        with state.lock:
            if cont:
                where = parse_token(cont)
                snap = state.snapshots.get(where[0]) if where else None
                if snap is None:
                    self.record("list", query, token, 410)
                    self.send_json(410, status_body(410, "Expired", EXPIRED_CONTINUE))
                    return
                sid, offset = where
                rv, items = snap
            else:
                items = sorted((p for p in state.pods.values() if state.on_node(p)),
                               key=lambda p: (p["metadata"].get("namespace", ""),
                                              p["metadata"].get("name", "")))
                rv, offset, sid = state.rv, 0, None
                if limit and len(items) > limit:
                    sid = state.next_snapshot
                    state.next_snapshot += 1
                    state.snapshots[sid] = (rv, items)
            meta = {"resourceVersion": str(rv)}
            end = offset + limit if limit else len(items)
            if end < len(items):
                meta["continue"] = page_token(sid, end)
            elif sid is not None:
                state.snapshots.pop(sid, None)
            body = {"kind": "PodList", "apiVersion": "v1", "metadata": meta,
                    "items": items[offset:end]}
            self.record("list", query, token, 200)
        self.send_json(200, body)

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def client_gone(self):
        # An idle watch writes nothing, so a client that hung up is only
        # seen by peeking at the socket: readable with no data = closed.
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def serve_watch(self, query, token):
        state = self.server.state
        try:
            since = int(query.get("resourceVersion") or 0)
        except ValueError:
            self.record("watch", query, token, 400)
            self.send_json(400, status_body(400, "BadRequest", "bad resourceVersion"))
            return
        timeout = float(query.get("timeoutSeconds") or 1800)
        q = queue.Queue()
        with state.lock:
            too_old = since < state.compacted
            if too_old and state.expire_http:
                self.record("watch", query, token, 410)
                self.send_json(410, status_body(410, "Gone", "too old resource version: %d" % since))
                return
            if too_old:
                q.put(expired_event(since))
                q.put(END)
            else:
                for rv, event in state.history:
                    if rv > since and state.on_node(event["object"]):
                        q.put(event)
            state.watches.append(q)
            self.record("watch", query, token, 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    item = q.get(timeout=min(left, 0.1))
                except queue.Empty:
                    if self.client_gone():
                        self.close_connection = True
                        return
                    continue
                if item is END:
                    break
                if item is DROP:
                    self.close_connection = True
                    return
                if isinstance(item, bytes):
                    self.write_chunk(item)
                else:
                    self.write_chunk(json.dumps(item).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            with state.lock:
                state.watches.remove(q)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--node", required=True)
    ap.add_argument("--token")
    ap.add_argument("--scenario")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--list-delay", type=float, default=0.0,
                    help="answer first list pages this many seconds late")
    args = ap.parse_args()
    rv, pods = 1000, []
    if args.scenario:
        with open(args.scenario) as f:
            sc = json.load(f)
        rv, pods = int(sc.get("resourceVersion", rv)), sc.get("pods", [])
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.state = State(args.node, args.token, rv, pods)
    server.state.list_delay = args.list_delay
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
