#!/usr/bin/env python3
"""A Redfish stand-in for the power tests: not a BMC, only the resources
nodeforge uses, as DMTF's Redfish schema names them.

  GET   /redfish/v1/Systems                                 the collection
  GET   /redfish/v1/Systems/1                               PowerState, Boot
  PATCH /redfish/v1/Systems/1                               Boot override
  POST  /redfish/v1/Systems/1/Actions/ComputerSystem.Reset  ResetType

HTTP basic authentication with USER:PASSWORD; every request is appended
to LOG as one JSON line, with how many requests were in flight.
Usage: redfish_standin.py PORTFILE USER PASSWORD LOG [DELAY [TRANSITION]]
Listens on 127.0.0.1 on a free port, written to PORTFILE; each answer
waits DELAY seconds (default 0), one thread per connection.  A reset
changes PowerState at once, or after TRANSITION seconds of PoweringOn or
PoweringOff; TRANSITION "stuck", or a file LOG.stuck: a reset is taken
and PowerState does not change (a machine whose power does not follow
its BMC).  With RF_TLS=CERT:KEY in the environment it speaks https
with that certificate (as BMCs do), else plain http.
"""
import base64
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, user, password, log = sys.argv[1:5]
delay = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
transition = sys.argv[6] if len(sys.argv) > 6 else "0"
lock = threading.Lock()
inflight = 0
want = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
system = {
    "@odata.id": "/redfish/v1/Systems/1",
    "Id": "1",
    "PowerState": "Off",
    "Boot": {"BootSourceOverrideTarget": "None",
             "BootSourceOverrideEnabled": "Disabled"},
    "Actions": {"#ComputerSystem.Reset": {
        "target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"}},
}
RESETS = {"On": "On", "ForceOff": "Off", "PowerCycle": "On",
          "ForceRestart": "On", "GracefulShutdown": "Off"}


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, code, doc=None):
        body = json.dumps(doc).encode() if doc is not None else b""
        self.send_response(code)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")

    def handle_one(self, method):
        global inflight
        with lock:
            inflight += 1
            now = inflight
        reply = (500, None)
        try:
            time.sleep(delay)
            reply = self.handle_locked(method, now)
        finally:
            # out of flight before the answer leaves: the client's next
            # request may arrive as soon as it has this one
            with lock:
                inflight -= 1
            self.answer(*reply)

    def handle_locked(self, method, now):
        doc = self.body() if method in ("PATCH", "POST") else None
        with lock, open(log, "a") as f:
            f.write(json.dumps({"method": method, "path": self.path,
                                "body": doc, "inflight": now}) + "\n")
        if self.headers.get("Authorization") != want:
            return (401, {"error": {"message": "unauthorized"}})
        p = self.path
        if method == "GET" and p == "/redfish/v1/Systems":
            return (200, {"Members": [
                {"@odata.id": "/redfish/v1/Systems/1"}],
                "Members@odata.count": 1})
        if method == "GET" and p == "/redfish/v1/Systems/1":
            return (200, system)
        if method == "PATCH" and p == "/redfish/v1/Systems/1":
            boot = (doc or {}).get("Boot") or {}
            if boot.get("BootSourceOverrideTarget") not in ("Pxe", "Hdd", "None") or \
               boot.get("BootSourceOverrideEnabled") not in ("Once", "Continuous", "Disabled"):
                return (400, {"error": {"message": "bad Boot"}})
            system["Boot"].update(boot)
            return (204,)
        if method == "POST" and p == system["Actions"]["#ComputerSystem.Reset"]["target"]:
            rt = (doc or {}).get("ResetType")
            if rt not in RESETS:
                return (400, {"error": {"message": "bad ResetType"}})
            if transition == "stuck" or os.path.exists(log + ".stuck"):
                return (204,)
            if float(transition) > 0:
                target = RESETS[rt]
                system["PowerState"] = "PoweringOn" if target == "On" else "PoweringOff"
                t = threading.Timer(float(transition), system.__setitem__,
                                    ("PowerState", target))
                t.daemon = True
                t.start()
                return (204,)
            system["PowerState"] = RESETS[rt]
            return (204,)
        return (404, {"error": {"message": "not found"}})

    def do_GET(self):
        self.handle_one("GET")

    def do_PATCH(self):
        self.handle_one("PATCH")

    def do_POST(self):
        self.handle_one("POST")


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
if os.environ.get("RF_TLS"):
    cert, key = os.environ["RF_TLS"].split(":")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    srv.socket = tls.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
