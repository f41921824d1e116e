"""tls_partial.py - a TLS client of an agent that sends its request's one
TLS record in two halves, with a pause between them (the e2e tests' tool
for a record that arrives in pieces; not a test itself).

usage: tls_partial.py HOST PORT TLS_DIR AGENT_PID PAUSE_S

Connects with TLS_DIR's client certificate, sends a status request
(W_REQ_STATUS) sealed in one record: first half the record's bytes, then,
PAUSE_S seconds later, the rest. Prints one JSON line: the CPU seconds
the agent process used during the pause (utime + stime from /proc), and
the type and length of the reply frame read after the rest was sent. The
frame's version byte is CS_WIRE from the environment (the test reads it
from cutsnap --version --json)."""
import json, os, socket, ssl, struct, sys, time

host, port, tls_dir, pid, pause = sys.argv[1], int(sys.argv[2]), \
    sys.argv[3], int(sys.argv[4]), float(sys.argv[5])

def cpu_s():
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
ctx.check_hostname = False
ctx.load_verify_locations(os.path.join(tls_dir, "ca.crt"))
ctx.load_cert_chain(os.path.join(tls_dir, "client.crt"),
                    os.path.join(tls_dir, "client.key"))
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_side=False)
sock = socket.create_connection((host, port), timeout=10)

def flush():
    data = out.read()
    if data:
        sock.sendall(data)

def pump_in():
    data = sock.recv(65536)
    if not data:
        sys.exit("connection closed by the agent")
    inc.write(data)

while True:
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        flush()
        pump_in()
flush()
# The request: u32 len = 2 (version + type), version, W_REQ_STATUS.
tls.write(struct.pack("<IBB", 2, int(os.environ["CS_WIRE"]), 1))
record = out.read()
half = len(record) // 2
sock.sendall(record[:half])
c0 = cpu_s()
time.sleep(pause)
c1 = cpu_s()
sock.sendall(record[half:])
buf = b""
while True:
    try:
        buf += tls.read(65536)
    except ssl.SSLWantReadError:
        pump_in()
        continue
    if len(buf) >= 6 and len(buf) >= 4 + struct.unpack("<I", buf[:4])[0]:
        break
flen, ver, typ = struct.unpack("<IBB", buf[:6])
print(json.dumps({"cpu_s": round(c1 - c0, 3), "version": ver, "type": typ,
                  "len": flen}))
