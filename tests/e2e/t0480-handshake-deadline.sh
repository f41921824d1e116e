#!/bin/bash
# A command's TCP connect and TLS handshake end by one deadline for the
# whole handshake: a peer at an agent's addr that accepts and then sends
# one byte a second (a TLS record that never completes) cannot keep
# status, get or snapshot --timeout waiting, and SIGTERM ends a command
# stuck in such a handshake at once, with one line and its status.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

ACC=$TEST_DIR/accepted

# The slow peer: accepts every connection, appends a line to $ACC, then
# trickles a record header announcing 16 KiB and its body, a byte a second.
cat >"$TEST_DIR/trickle.py" <<'PY'
import socket, sys, threading, time
port, log = int(sys.argv[1]), sys.argv[2]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(64)
def trickle(c):
    try:
        for b in bytes([0x16, 3, 3, 0x40, 0]) + b"\0" * 16384:
            c.send(bytes([b]))
            time.sleep(1)
    except OSError:
        pass
n = 0
while True:
    c, _ = ls.accept()
    n += 1
    threading.Thread(target=trickle, args=(c,), daemon=True).start()
    with open(log, "a") as f:
        f.write("accepted %d\n" % n)
PY

accepted () { [ -f "$ACC" ] && wc -l <"$ACC"; }
accepted_more () { [ "$(accepted)" -gt "$1" ]; }
now_ms () { echo $(($(date +%s%N) / 1000000)); }

# timed ARGS...: expect_exit 1 ARGS, with the time it took in ELAPSED (ms).
timed () {
	local t0
	t0=$(now_ms)
	expect_error 1 "$@"
	local rc=$?
	ELAPSED=$(($(now_ms) - t0))
	say "took $ELAPSED ms"
	return $rc
}

# stuck_then_term ARGS...: run cutsnap ARGS in the background; once the
# slow peer has accepted its connection, SIGTERM it; its status in RC,
# the time from the signal to its end in ELAPSED (ms).
stuck_then_term () {
	local n p t0
	n=$(accepted)
	cs "$@" >"$OUT" 2>"$ERR" &
	p=$!
	wait_for 20 accepted_more "${n:-0}" || return 1
	t0=$(now_ms)
	kill -TERM "$(cutsnap_pid "$p")" || return 1
	wait "$p"
	RC=$?
	ELAPSED=$(($(now_ms) - t0))
	say "exit $RC, $ELAPSED ms after SIGTERM"
	show_out
}

test_expect_success 'setup: agent A at an addr where a slow peer listens' '
	PA=$(free_ports 1) &&
	make_tls_config A=127.0.0.1:$PA &&
	expect_ok cert -c "$CONF" &&
	{ python3 "$TEST_DIR/trickle.py" "$PA" "$ACC" & } &&
	wait_for 20 python3 -c "import socket; socket.create_connection((\"127.0.0.1\", $PA)).close()"
'

test_expect_success 'status: A is down, the handshake timed out, within the bound' '
	expect_exit 1 status -c "$CONF" --json &&
	expect_eq "$(json_get "d[0][\"up\"]" "$OUT")" false "A up" &&
	json_get "d[0][\"error\"]" "$OUT" | grep -q "agent A .*handshake timed out"
'

test_expect_success 'get: exit 1 naming A and the handshake timeout, within 30 s' '
	timed get -c "$CONF" A bal &&
	err_matches "agent A at 127\.0\.0\.1:[0-9]+: TLS handshake timed out" &&
	[ "$ELAPSED" -lt 30000 ]
'

test_expect_success 'snapshot --timeout 3: exit 1 naming A, within 30 s, nothing recorded' '
	timed snapshot -c "$CONF" -r "$REPO" --timeout 3 &&
	err_matches "nothing was recorded.*agent A .*handshake timed out" &&
	[ "$ELAPSED" -lt 30000 ] &&
	[ ! -e "$REPO" ]
'

test_expect_success 'SIGTERM ends a get stuck in the handshake at once: 143, one line' '
	stuck_then_term get -c "$CONF" A bal &&
	expect_eq "$RC" 143 "exit status" &&
	err_is_one_line &&
	err_matches "^cutsnap: get: interrupted \(SIGTERM\)" &&
	[ "$ELAPSED" -lt 5000 ]
'

test_expect_success 'SIGTERM ends a snapshot stuck in the handshake at once: 1, nothing recorded' '
	stuck_then_term snapshot -c "$CONF" -r "$REPO" --timeout 300 &&
	expect_eq "$RC" 1 "exit status" &&
	err_is_one_line &&
	err_matches "agent A .*interrupted during the TLS handshake" &&
	[ "$ELAPSED" -lt 5000 ] &&
	[ ! -e "$REPO" ]
'

test_done
