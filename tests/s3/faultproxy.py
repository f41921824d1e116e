#!/usr/bin/env python3
"""faultproxy.py - an HTTP proxy in front of the real S3 server that injects
the faults object stores show: 503 SlowDown bursts, connections reset before
or after the server acted, stalls, truncated bodies.

Usage: faultproxy.py UPSTREAM_URL PORT_FILE RULES_FILE LOG_FILE

It listens on 127.0.0.1 (a free port, written to PORT_FILE once it
accepts) and forwards every request unchanged, Host header included, so the
client's SigV4 signature still holds at the server. RULES_FILE (read again
for every request; absent or empty: no faults) is a JSON list of rules:

  {"method": "PUT", "key": "REGEX on the path", "action": ACTION,
   "count": N (times it fires, default 1; -1: always),
   "for_seconds": S (fires only within S seconds of its first firing)}

ACTION is one of
  "503"           answer 503 SlowDown without forwarding
  "reset"         close the connection (RST) without forwarding
  "forward_reset" forward (the server acts), then reset: the answer is lost
  "stall:S"       forward, then wait S seconds before answering
  "truncate"      forward, then send the headers and half the body, close

The first rule that matches and has firings left applies. LOG_FILE gets
one JSON line per request: {"method", "path", "action", "status"}, and
for a PUT "bytes": the request body's length (its Content-Length), so
that a bench can count what each upload sent.
"""
import http.client
import http.server
import json
import os
import re
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

UPSTREAM, PORT_FILE, RULES_FILE, LOG_FILE = sys.argv[1:5]
up = urllib.parse.urlsplit(UPSTREAM)
lock = threading.Lock()
fired = {}          # rule text -> [times fired, first firing time]

SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown'
            b'</Code><Message>Please reduce your request rate.</Message>'
            b'</Error>')


def pick(method, path):
    try:
        with open(RULES_FILE) as f:
            text = f.read()
        rules = json.loads(text) if text.strip() else []
    except FileNotFoundError:
        rules = []
    now = time.monotonic()
    with lock:
        for rule in rules:
            if rule.get("method", method) != method:
                continue
            if not re.search(rule.get("key", ""), path):
                continue
            tag = json.dumps(rule, sort_keys=True)
            n, first = fired.get(tag, [0, None])
            count = rule.get("count", 1)
            if count >= 0 and n >= count:
                continue
            if first is not None and "for_seconds" in rule and \
                    now - first > rule["for_seconds"]:
                continue
            fired[tag] = [n + 1, first if first is not None else now]
            return rule["action"]
    return None


def log(entry):
    with lock, open(LOG_FILE, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reset(self):
        # SO_LINGER 0: the close sends RST, as a dropped connection does.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                   struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def forward(self, body):
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("expect", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp, data

    def answer(self, status, headers, data, cut=None):
        self.send_response_only(status)
        for k, v in headers:
            if k.lower() not in ("content-length", "transfer-encoding",
                                 "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data if cut is None else data[:cut])
        self.wfile.flush()

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
            self.wfile.flush()
        body = self.rfile.read(n) if n else None
        action = pick(self.command, self.path)
        entry = {"method": self.command, "path": self.path,
                 "action": action, "status": None}
        if self.command == "PUT":
            entry["bytes"] = n
        try:
            if action == "503":
                entry["status"] = 503
                self.answer(503, [("Content-Type", "application/xml")],
                            SLOWDOWN)
            elif action == "reset":
                self.reset()
            else:
                resp, data = self.forward(body)
                entry["status"] = resp.status
                if action == "forward_reset":
                    self.reset()
                elif action and action.startswith("stall:"):
                    # Logged now: the client gives up long before.
                    log(entry)
                    entry = None
                    time.sleep(float(action[6:]))
                    self.answer(resp.status, resp.getheaders(), data)
                elif action == "truncate" and len(data) > 1:
                    self.answer(resp.status, resp.getheaders(), data,
                                cut=len(data) // 2)
                    self.reset()
                else:
                    self.answer(resp.status, resp.getheaders(), data)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        if entry is not None:
            log(entry)

    do_GET = do_PUT = do_DELETE = do_POST = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(PORT_FILE + ".tmp", PORT_FILE)
srv.serve_forever()
