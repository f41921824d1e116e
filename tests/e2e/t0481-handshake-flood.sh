#!/bin/bash
# A flood of connections that never finish their TLS handshake (each
# sends a record header announcing 16 KiB, then nothing) at an agent:
# peers and clients that authenticate keep working during and after it,
# the agent's log grows by a bounded number of lines (refusals are
# counted, not each logged), its memory stays bounded and returns, and
# with few descriptors (ulimit -n 64) it still serves. A client the agent
# closes during the handshake is told so.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

N=2000
FLOODED=$TEST_DIR/flooded

# flood.py PORT N FILE: N connections to PORT, each sending a partial
# TLS record; "N" in FILE once all are open, then held until killed.
cat >"$TEST_DIR/flood.py" <<'PY'
import resource, socket, sys, time
port, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(n):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        s.send(bytes([0x16, 3, 1, 0x40, 0]) + b"\1" * 64)
    except OSError:
        pass
    held.append(s)
with open(out, "w") as f:
    f.write("%d\n" % n)
while True:
    time.sleep(60)
PY

# The closer: accepts and closes at once, before any handshake.
cat >"$TEST_DIR/closer.py" <<'PY'
import socket, sys
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(64)
while True:
    c, _ = ls.accept()
    c.close()
PY

log_lines () { wc -l <"$TEST_DIR/run/A.log"; }
rss_below () { [ "$(agent_kib A VmRSS)" -le "$1" ]; }
flooded () { [ -s "$FLOODED" ]; }

# flood: start the flood at A; FLOOD_PID, wait until it is all open.
flood () {
	rm -f "$FLOODED"
	python3 "$TEST_DIR/flood.py" "$PA" "$N" "$FLOODED" &
	FLOOD_PID=$!
	wait_for 120 flooded
}

flood_end () {
	kill "$FLOOD_PID" && wait "$FLOOD_PID" 2>/dev/null
	return 0
}

# work: three transfers A -> B and a status, each succeeding.
work () {
	local i
	for i in 1 2 3; do
		expect_ok transfer -c "$CONF" A:bal B:bal 1 || return 1
	done
	expect_ok status -c "$CONF" --json &&
	json_check "all(a[\"up\"] for a in d)"
}

test_expect_success 'setup: A and B over TLS, balances set' '
	tls_loopback_ab &&
	wait_for 10 channels_up 4 &&
	set_balances A=1000 B=1000 &&
	RSS0=$(agent_kib A VmRSS) && LINES0=$(log_lines) &&
	say "A: VmRSS $RSS0 KiB, $LINES0 log lines"
'

test_expect_success "during a flood of $N unauthenticated connections: transfers and status work" '
	flood &&
	work &&
	channels_up 4
'

test_expect_success 'memory under the flood stayed bounded' '
	kib_below "$(agent_kib A VmHWM)" $((RSS0 + 20000)) "A VmHWM"
'

test_expect_success 'after the flood: memory back near its earlier size, log bounded, suppressed lines counted' '
	flood_end &&
	wait_for 60 log_has A "more refused connections not logged" &&
	wait_for 30 rss_below $((RSS0 + 8000)) &&
	kib_below "$(agent_kib A VmRSS)" $((RSS0 + 8000)) "A VmRSS after" &&
	lines=$(( $(log_lines) - LINES0 )) &&
	say "A logged $lines lines" &&
	[ "$lines" -lt 50 ] &&
	work &&
	wait_bal B 1006 &&
	take_snapshot &&
	total_is 2000
'

test_expect_success 'A restarted with 64 descriptors: a flood does not keep clients out' '
	pid=$(agent_pid A) &&
	kill -TERM "$pid" && wait_for 20 pid_gone "$pid" &&
	( ulimit -n 64 && start_cluster ) && _record_agent_pids &&
	wait_for 20 channels_up 4 &&
	flood &&
	work &&
	flood_end &&
	wait_for 20 channels_up 4 &&
	wait_bal B 1009 &&
	take_snapshot &&
	total_is 2000
'

test_expect_success 'a client closed by the agent during the handshake is told so' '
	PC=$(free_ports 1) &&
	make_tls_config A=127.0.0.1:$PC &&
	{ python3 "$TEST_DIR/closer.py" "$PC" & } &&
	wait_for 20 python3 -c "import socket; socket.create_connection((\"127.0.0.1\", $PC)).close()" &&
	expect_error 1 get -c "$CONF" A bal &&
	err_matches "agent A at 127\.0\.0\.1:[0-9]+: closed by the agent during the TLS handshake \(too many unauthenticated connections"
'

test_done
