"""wireclient.py SOCK VERSION MODE: one exchange with an agent's Unix
socket in frames of protocol VERSION, printed as JSON for the e2e tests.

MODE get: a W_REQ_GET of key "k"; hello:N: a W_HELLO naming protocol N.
Prints {"version": reply frame's version byte, "type", "code", "body"
(text), "closed": whether the agent closed the connection after it}.
"""
import json
import socket
import struct
import sys

W_REQ_GET, W_HELLO = 3, 60


def frame(version, typ, payload):
    return struct.pack("<IBB", len(payload) + 2, version, typ) + payload


def bstr(b):
    return struct.pack("<I", len(b)) + b


def main():
    path, version, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    if mode == "get":
        s.sendall(frame(version, W_REQ_GET, bstr(b"k")))
    else:
        proto = int(mode.split(":")[1])
        s.sendall(frame(version, W_HELLO,
                        struct.pack("<I", proto) + bstr(b"wireclient")))
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack("<I", buf[:4])[0]:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("connection closed before a whole reply")
        buf += chunk
    ver, typ = buf[4], buf[5]
    code = buf[6]
    n = struct.unpack("<I", buf[7:11])[0]
    body = buf[11:11 + n]
    if code == 0 and mode != "get":
        proto, nl = struct.unpack("<II", body[:8])
        text = "%d %s" % (proto, body[8:8 + nl].decode())
    else:
        text = body.decode()
    try:
        closed = s.recv(1) == b""
    except socket.timeout:
        closed = False
    print(json.dumps({"version": ver, "type": typ, "code": code,
                      "body": text, "closed": closed}))


main()
