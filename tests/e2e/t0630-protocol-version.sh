#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The protocol version (net/wire.h, docs/PROTOCOL.md): a client in
# another version gets one REPLY_VERSION frame in its own version naming
# both versions, then the connection closes, and the agent carries on; a
# W_HELLO is answered with the agent's protocol and name. Two agents that
# speak different versions (CUTSNAP_FAULT=wire-version:1 makes B an older
# build) refuse each other's channel by name, log it once, move nothing,
# and the channel comes up once both speak one protocol: nothing is lost.
. "$(dirname "$0")/lib.sh"

# wire SOCK VERSION MODE: wireclient.py's JSON in $OUT.
wire () {
	python3 "$_lib_dir/wireclient.py" "$@" >"$OUT" 2>"$ERR" || {
		show_out; return 1; }
}

# WV: the protocol this build speaks; B is made to speak 1, an older one.
WV=$(wire_version)

# log_count NAME REGEX: lines of NAME's log matching REGEX.
log_count () { grep -Ec -- "$2" "run/$1.log"; }

test_expect_success 'setup: A and B' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	APID=$(agent_pid A) && [ -n "$APID" ]
'

test_expect_success 'a protocol 1 request: REPLY_VERSION in version 1, then closed' '
	wire run/A.sock 1 get &&
	json_check "d[\"version\"] == 1 and d[\"type\"] == 30 and d[\"code\"] == 15" "$OUT" &&
	json_check "d[\"body\"] == \"agent A speaks protocol $WV, this client 1\"" "$OUT" &&
	json_check "d[\"closed\"]" "$OUT" &&
	wait_for 10 grep -q "client fd [0-9]* refused: protocol version mismatch: agent A speaks protocol $WV, this client 1" run/A.log
'

test_expect_success 'a HELLO naming protocol 1 is refused the same way' '
	wire run/A.sock "$WV" hello:1 &&
	json_check "d[\"version\"] == $WV and d[\"code\"] == 15 and d[\"closed\"]" "$OUT" &&
	json_check "d[\"body\"] == \"agent A speaks protocol $WV, this client 1\"" "$OUT"
'

test_expect_success 'a HELLO naming its own protocol: OK with the protocol and the name' '
	wire run/A.sock "$WV" "hello:$WV" &&
	json_check "d[\"code\"] == 0 and d[\"body\"] == \"$WV A\" and not d[\"closed\"]" "$OUT"
'

test_expect_success 'the agent stayed healthy: same process, requests answered' '
	expect_eq "$(agent_pid A)" "$APID" "A pid" &&
	expect_ok put -c "$CONF" A k v &&
	expect_ok get -c "$CONF" A k &&
	expect_eq "$(cat "$OUT")" v "k on A" &&
	expect_ok status -c "$CONF" --json
'

test_expect_success 'setup: B restarted speaking protocol 1' '
	stop_cluster || return 1
	"$CUTSNAP" agent -c "$CONF" --name A >>run/A.log 2>&1 &
	AGENT_PIDS="$AGENT_PIDS $!"
	CUTSNAP_FAULT=wire-version:1 "$CUTSNAP" agent -c "$CONF" --name B \
	    >>run/B.log 2>&1 &
	BPID=$! && AGENT_PIDS="$AGENT_PIDS $BPID" &&
	wait_for 10 cs get -c "$CONF" A bal &&
	wait_for 10 test -S run/B.sock
'

test_expect_success 'the command (the current protocol) is refused by B by name' '
	expect_error 1 get -c "$CONF" B bal &&
	err_matches "agent B speaks protocol 1, this client $WV"
'

test_expect_success 'channel A>B refused by name at both ends, logged once by A' '
	wait_for 20 eval "[ \$(log_count B \"channel A>B refused: protocol version mismatch: agent A speaks protocol $WV, this agent 1\") -ge 3 ]" &&
	expect_eq "$(log_count A "channel A>B refused by B: agent B speaks protocol 1, this agent $WV")" 1 "A refusal lines" &&
	expect_eq "$(log_count A "malformed")" 0 "malformed lines in A.log" &&
	expect_eq "$(log_count B "malformed")" 0 "malformed lines in B.log"
'

test_expect_success 'a transfer to B waits: nothing applied, nothing lost' '
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_eq "$(bal A)" 90 "A after the transfer" &&
	kill -0 "$BPID" && agent_alive "$(agent_pid A)"
'

test_expect_success 'B speaking the current protocol again: the channel comes up, the 10 arrive' '
	kill "$BPID" && wait_for 10 eval "! kill -0 $BPID 2>/dev/null" ||
	    return 1
	"$CUTSNAP" agent -c "$CONF" --name B >>run/B.log 2>&1 &
	AGENT_PIDS="$AGENT_PIDS $!"
	wait_bal B 110 &&
	expect_eq "$(bal A)" 90 "A" &&
	stop_cluster
'

test_done
