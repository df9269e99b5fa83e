# SPDX-License-Identifier: BSD-2-Clause
"""A debuginfod server that answers late: GET /buildid/<hex>/debuginfo
waits --delay seconds (only for --slow-id's build id when given), then
sends DIR/<hex>.debug when --dir holds it, else 404 (the debuginfod URL
scheme, as libdebuginfod asks it). Used by tests/e2e/symbols.sh to show
that a slow server never slows the agent's drains.

    slow_debuginfod.py --port-file FILE [--delay 30] [--slow-id HEX] [--dir DIR]
        --log FILE

Listens on 127.0.0.1 (a free port, written to --port-file); every request
appends one line "<path> <status>" to --log when it is answered, and one
line "<path> started" when it comes in. Runs until SIGTERM.
"""
import argparse
import http.server
import os
import re
import signal
import sys
import threading
import time

PATH = re.compile(r"^/buildid/([0-9a-f]{2,128})/debuginfo$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--delay", type=float, default=30)
    ap.add_argument("--slow-id")
    ap.add_argument("--dir")
    ap.add_argument("--log", required=True)
    opts = ap.parse_args()
    lock = threading.Lock()

    def log(line):
        with lock, open(opts.log, "a") as f:
            f.write(line + "\n")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            log("%s started" % self.path)
            m = PATH.match(self.path)
            if m and (not opts.slow_id or m.group(1) == opts.slow_id):
                time.sleep(opts.delay)
            body = None
            if m and opts.dir:
                try:
                    with open(os.path.join(opts.dir, m.group(1) + ".debug"), "rb") as f:
                        body = f.read()
                except OSError:
                    pass
            try:
                if body is None:
                    self.send_error(404)
                else:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
            except OSError:
                pass     # the client gave up first
            log("%s %d" % (self.path, 404 if body is None else 200))

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(opts.port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(opts.port_file + ".tmp", opts.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
