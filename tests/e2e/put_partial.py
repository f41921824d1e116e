"""put_partial.py - a client of an agent that sends part of a put and then
stalls (the e2e tests' tool for a put cut short; not a test itself).

usage: put_partial.py unix SOCKET KEY VLEN SEND MARKER
       put_partial.py tls HOST:PORT TLS_DIR KEY VLEN SEND MARKER

Connects (over TLS with TLS_DIR's client certificate), sends the head of
a put (W_REQ_PUT) of KEY with a value of VLEN bytes and SEND bytes of
that value (0xA5), creates the file MARKER once they are sent, and then
sleeps with the connection open until it is killed. The frame's version
byte is CS_WIRE from the environment (the test reads it from cutsnap
--version --json)."""
import os, socket, ssl, struct, sys, time

args = sys.argv[1:]
if args[0] == "unix":
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(args[1])
    args = args[2:]
else:
    host, port = args[1].rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False
    ctx.load_verify_locations(os.path.join(args[2], "ca.crt"))
    ctx.load_cert_chain(os.path.join(args[2], "client.crt"),
                        os.path.join(args[2], "client.key"))
    sock = ctx.wrap_socket(socket.create_connection((host, int(port))))
    args = args[3:]
key, vlen, send, marker = args[0].encode(), int(args[1]), int(args[2]), \
    args[3]
payload_len = 4 + len(key) + 4 + vlen
# u32 len (payload + version + type), version, type 2 (W_REQ_PUT).
sock.sendall(struct.pack("<IBB", payload_len + 2, int(os.environ["CS_WIRE"]),
                         2) +
             struct.pack("<I", len(key)) + key + struct.pack("<I", vlen))
left = send
while left > 0:
    n = min(left, 65536)
    sock.sendall(b"\xa5" * n)
    left -= n
open(marker, "w").close()
while True:
    time.sleep(60)
