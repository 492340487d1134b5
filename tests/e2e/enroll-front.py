#!/usr/bin/env python3
"""A minimal HTTP front for 'nodeforge enroll answer', for the e2e tests:
POST /api/v1/enroll and /api/v1/rotate run the real binary with the peer's address, as
'nodeforge serve' does in-process.  Usage:
  enroll-front.py PORTFILE SITE INVENTORY [tamper] [capture-file]"""
import http.server, json, os, subprocess, sys

portfile, site, inv = sys.argv[1:4]
tamper = len(sys.argv) > 4 and sys.argv[4] == "tamper"
capture = sys.argv[5] if len(sys.argv) > 5 else None
nf = os.environ["NF_BIN"]


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path not in ("/api/v1/enroll", "/api/v1/rotate"):
            self.send_error(404)
            return
        extra = ["--rotate"] if self.path == "/api/v1/rotate" else []
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(min(n, 8192))
        p = subprocess.run([nf, "-s", site, "enroll", "answer", "-i", inv,
                            "--peer", self.client_address[0]] + extra,
                           input=body, capture_output=True)
        sys.stderr.write(p.stderr.decode())
        resp = json.loads(p.stdout)
        status = resp.pop("status")
        if tamper and "sealed" in resp:
            s = resp["sealed"]
            i = len(s) // 2
            resp["sealed"] = s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1:]
        out = json.dumps(resp).encode()
        if capture:
            with open(capture, "ab") as f:
                f.write(out)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
