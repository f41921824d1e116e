"""notify_listen.py - a stand-in for systemd's end of sd_notify(3) (the
e2e tests' tool; not a test itself).

usage: notify_listen.py SOCKET OUT

Binds a Unix datagram socket at SOCKET (what NOTIFY_SOCKET names) and
appends every datagram received to OUT, one line per assignment
("MONOTONIC_MS STATE", e.g. "1234567 READY=1"), flushed as it arrives,
until it is killed."""
import os, socket, sys, time

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(out, "a", buffering=1) as f:
    while True:
        data = s.recv(4096)
        now = int(time.monotonic() * 1000)
        for line in data.decode("utf-8", "replace").splitlines():
            if line:
                f.write("%d %s\n" % (now, line))
