#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# transfer and add carry a client request id: a reply lost after the
# agent applied the request (CUTSNAP_FAULT=drop-reply:N keeps the first N
# replies of requests with an id unsent) is retried with the same id and
# applied once; with no reply at all the command exits 4 naming the id,
# and running it again with --request-id applies nothing more, also after
# a kill -9 and a compaction. The total is conserved throughout.
. "$(dirname "$0")/lib.sh"

# The version byte of the frames written below.
CS_WIRE=$(wire_version)
export CS_WIRE

ID1=00112233445566778899aabbccddeeff
ID2=0123456789abcdef0123456789abcdef
ID3=fedcba9876543210fedcba9876543210
TID="" AID=""	# the IDs printed by the cases with no reply

# restart [ENV...]: the cluster stopped and started again with ENV.
restart () {
	stop_cluster && env "$@" "$CUTSNAP" start -c "$CONF" >/dev/null &&
	_record_agent_pids
}

# dropped AGENT: how many replies the agent's log says it dropped.
dropped () { grep -c "reply to a request with an ID dropped" "run/$1.log"; }

# the id printed in the last command's "retry with --request-id ID".
printed_id () { grep -Eo -- '--request-id [0-9a-f]{32}' "$ERR" | cut -c14-; }

# add_raw AGENT KEY DELTA: W_REQ_ADD without an id, as an older client
# sends it; prints the reply's code and body.
add_raw () {
	python3 - "$TEST_DIR/run/$1.sock" "$2" "$3" <<'EOF'
import os, socket, struct, sys
k = sys.argv[2].encode()
p = struct.pack("<I", len(k)) + k + struct.pack("<q", int(sys.argv[3]))
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(struct.pack("<IBB", len(p) + 2, int(os.environ["CS_WIRE"]), 5) + p)
b = b""
while len(b) < 4 or len(b) < 4 + struct.unpack("<I", b[:4])[0]:
    c = s.recv(4096)
    if not c:
        break
    b += c
n = struct.unpack("<I", b[7:11])[0]
print(b[6], b[11:11 + n].decode())
EOF
}

test_expect_success 'setup: A and B, 100 each' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100
'

test_expect_success 'first reply lost: transfer retries, exits 0, applied once' '
	restart CUTSNAP_FAULT=drop-reply:1 &&
	expect_ok transfer -c "$CONF" -t 10 A:bal B:bal 10 &&
	expect_eq "$(cat "$OUT")" 90 "printed value" &&
	grep -q "reply to a request with an ID dropped" run/A.log &&
	wait_bal B 110 &&
	expect_eq "$(bal A)" 90 "A" &&
	total_is 200
'

test_expect_success 'first reply lost: add retries, exits 0, applied once' '
	restart CUTSNAP_FAULT=drop-reply:1 &&
	expect_ok add -c "$CONF" -t 10 A n 7 &&
	expect_eq "$(cat "$OUT")" 7 "printed value" &&
	expect_eq "$(dropped A)" 2 "replies dropped" &&
	expect_ok add -c "$CONF" A n -7 &&
	expect_eq "$(cs get -c "$CONF" A n)" 0 "A:n"
'

test_expect_success 'first reply lost: del retries, exits 0 (not "not found")' '
	restart CUTSNAP_FAULT=drop-reply:1 &&
	expect_ok put -c "$CONF" A gone x &&
	expect_ok del -c "$CONF" -t 10 A gone &&
	expect_eq "$(dropped A)" 3 "replies dropped" &&
	expect_error 1 get -c "$CONF" A gone &&
	expect_error 1 del -c "$CONF" A gone &&
	err_matches "key .gone. not found on A"
'

test_expect_success 'no reply at all: exit 4 naming the ID, applied once' '
	restart CUTSNAP_FAULT=drop-reply:1000 &&
	expect_error 4 transfer -c "$CONF" -t 2 A:bal B:bal 5 &&
	err_matches "outcome unknown: request ID [0-9a-f]{32} may or may not have been applied .*; retry with --request-id [0-9a-f]{32}$" &&
	TID=$(printed_id) && [ -n "$TID" ] &&
	wait_bal B 115 &&
	expect_eq "$(bal A)" 85 "A" &&
	expect_error 4 add -c "$CONF" -t 2 A n -3 &&
	err_is_one_line &&
	AID=$(printed_id) && [ -n "$AID" ] &&
	expect_eq "$(cs get -c "$CONF" A n)" -3 "A:n"
'

test_expect_success 'run again with the printed ID: the first outcome, nothing more' '
	restart &&
	expect_ok transfer -c "$CONF" --request-id "$TID" A:bal B:bal 5 &&
	expect_eq "$(cat "$OUT")" 85 "printed value" &&
	expect_ok add -c "$CONF" --request-id "$AID" A n -3 &&
	expect_eq "$(cat "$OUT")" -3 "printed value" &&
	expect_eq "$(cs get -c "$CONF" A n)" -3 "A:n" &&
	expect_eq "$(bal A)" 85 "A" &&
	expect_eq "$(bal B)" 115 "B" &&
	total_is 200
'

test_expect_success 'an ID reused for another request is refused, nothing done' '
	expect_error 1 transfer -c "$CONF" --request-id "$TID" A:bal B:bal 6 &&
	err_matches "request ID $TID was already used on agent A for a different request; nothing was done" &&
	expect_error 1 add -c "$CONF" --request-id "$TID" A n 1 &&
	expect_eq "$(bal A)" 85 "A" &&
	expect_eq "$(cs get -c "$CONF" A n)" -3 "A:n"
'

test_expect_success 'a malformed --request-id is a usage error' '
	expect_error 2 transfer -c "$CONF" --request-id 12zz A:bal B:bal 1 &&
	err_matches "invalid request ID .12zz.: expected 32 hex digits"
'

test_expect_success 'reply lost, agent killed -9 and restarted: the retry applies once' '
	restart CUTSNAP_FAULT=drop-reply:1 || return 1
	n=$(dropped A)
	cs transfer -c "$CONF" -t 60 --request-id "$ID1" A:bal B:bal 4 \
	    >"$TEST_DIR/bg.out" 2>"$TEST_DIR/bg.err" &
	BG=$!
	BG_PIDS="$BG_PIDS $BG"
	wait_for 20 eval "[ \$(dropped A) -gt $n ]" &&
	kill -9 "$(agent_pid A)" &&
	start_cluster &&
	{ wait "$BG"; rc=$?; } &&
	expect_eq "$rc" 0 "exit status of the transfer" &&
	expect_eq "$(cat "$TEST_DIR/bg.out")" 81 "printed value" &&
	wait_bal B 119 &&
	expect_eq "$(bal A)" 81 "A" &&
	total_is 200
'

test_expect_success 'kill -9 and restart: the ID is remembered from the data file' '
	expect_ok transfer -c "$CONF" --request-id "$ID2" A:bal B:bal 1 &&
	kill -9 "$(agent_pid A)" &&
	start_cluster &&
	expect_ok transfer -c "$CONF" --request-id "$ID2" A:bal B:bal 1 &&
	expect_eq "$(cat "$OUT")" 80 "printed value" &&
	expect_ok transfer -c "$CONF" --request-id "$ID1" A:bal B:bal 4 &&
	expect_eq "$(bal A)" 80 "A" &&
	wait_bal B 120 &&
	total_is 200
'

test_expect_success 'after compact, and a restart after it: still applied once' '
	expect_ok transfer -c "$CONF" --request-id "$ID3" A:bal B:bal 2 &&
	expect_ok compact -c "$CONF" A &&
	expect_ok transfer -c "$CONF" --request-id "$ID3" A:bal B:bal 2 &&
	expect_eq "$(cat "$OUT")" 78 "printed value" &&
	expect_ok add -c "$CONF" --request-id "$AID" A n -3 &&
	expect_eq "$(cat "$OUT")" -3 "printed value" &&
	kill -9 "$(agent_pid A)" &&
	start_cluster &&
	for idn in "$ID1:4" "$ID2:1" "$ID3:2" "$TID:5"; do
		expect_ok transfer -c "$CONF" --request-id "${idn%:*}" \
		    A:bal B:bal "${idn#*:}" || return 1
	done &&
	expect_eq "$(bal A)" 78 "A" &&
	expect_eq "$(cs get -c "$CONF" A n)" -3 "A:n" &&
	wait_bal B 122 &&
	total_is 200
'

test_expect_success 'a request without an ID (an older client) still applies' '
	expect_eq "$(add_raw A m 5)" "0 5" "reply" &&
	expect_eq "$(add_raw A m 5)" "0 10" "reply" &&
	expect_eq "$(cs get -c "$CONF" A m)" 10 "A:m"
'

test_expect_success 'a snapshot after requests with IDs verifies and restores' '
	expect_ok init -r "$REPO" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok dump A.data --json &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	expect_eq "$(bal A)" 78 "A" &&
	total_is 200 &&
	expect_ok transfer -c "$CONF" --request-id "$ID3" A:bal B:bal 2 &&
	expect_eq "$(bal A)" 78 "A after a retry on the restored agent"
'

test_done
