# ports.sh - free_ports, shared by the e2e TLS tests (tests/e2e/lib-tls.sh)
# and the fault loop's TCP variant (tests/torture/torture.sh); sourced.

# free_ports N: N TCP ports free on 127.0.0.1 now, one a line. The ports
# are bound together, so the N differ (another process may still take one
# before the caller binds it).
free_ports () {
	python3 - "$1" <<'PY'
import socket, sys
ss = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    ss.append(s)
for s in ss:
    print(s.getsockname()[1])
PY
}
