# SPDX-License-Identifier: BSD-2-Clause
"""Slow HTTP clients (a slowloris): each opens a connection, sends the start
of a request and then one more header byte every --every seconds, so that
it is never idle and never done. Used by tests/e2e/agent.sh to show that
/healthz is still answered while they hold their connections.

    slow_clients.py --port P [--host 127.0.0.1] [--count 16] [--per-addr 16]
        [--first-addr 1] [--path /healthz] [--every 0.2] --status FILE

Client i connects from 127.0.0.<first-addr + i // per-addr> (all of
127.0.0.0/8 is loopback on Linux), so many client addresses can be
simulated. FILE is rewritten after every round with "open=N closed=M
rounds=R": connections still open, connections the server closed. Runs
until SIGTERM.
"""
import argparse
import errno
import os
import signal
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--per-addr", type=int, default=16)
    ap.add_argument("--first-addr", type=int, default=1)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--every", type=float, default=0.2)
    ap.add_argument("--status", required=True)
    opts = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    socks = []
    for i in range(opts.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((f"127.0.0.{opts.first_addr + i // opts.per_addr}", 0))
        s.connect((opts.host, opts.port))
        s.sendall(f"GET {opts.path} HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode())
        s.setblocking(False)
        socks.append(s)

    closed = set()
    rounds = 0
    while True:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                if s.recv(1) == b"":
                    closed.add(i)
                    continue
            except BlockingIOError:
                pass
            except OSError:
                closed.add(i)
                continue
            try:
                s.send(b"a")
            except BlockingIOError:
                pass    # the server does not read: still held
            except OSError as e:
                if e.errno in (errno.EPIPE, errno.ECONNRESET):
                    closed.add(i)
        rounds += 1
        tmp = opts.status + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"open={len(socks) - len(closed)} closed={len(closed)} rounds={rounds}\n")
        os.replace(tmp, opts.status)
        time.sleep(opts.every)


if __name__ == "__main__":
    main()
