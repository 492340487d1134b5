#!/usr/bin/env python3
"""A man in the middle for the e2e tests: forwards POSTs to an upstream
'nodeforge serve', from the client's own address (so the server still sees
the node's address), records the answers' bytes and can tamper with the
sealed box (tamper), or forge a rotation answer's proof as a server without
the cluster's key would have to (forge).
Usage: enroll-proxy.py PORTFILE UPSTREAM_PORT CAPTURE [tamper|forge]"""
import http.client, http.server, json, os, sys

portfile, upstream, capture = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tamper = len(sys.argv) > 4 and sys.argv[4] == "tamper"
forge = len(sys.argv) > 4 and sys.argv[4] == "forge"


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(min(n, 65536))
        up = http.client.HTTPConnection("127.0.0.1", upstream, timeout=10,
                                        source_address=(self.client_address[0], 0))
        up.request("POST", self.path, body, {"Content-Type": "application/json"})
        r = up.getresponse()
        out = r.read()
        with open(capture, "ab") as f:
            f.write(out)
        if tamper and r.status == 200:
            d = json.loads(out)
            s = d["sealed"]
            i = len(s) // 2
            d["sealed"] = s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1:]
            out = json.dumps(d).encode()
        if forge and r.status == 200:
            d = json.loads(out)
            if "answer_proof" in d:
                d["answer_proof"] = "A" * 43 + "="
                out = json.dumps(d).encode()
        self.send_response(r.status)
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
