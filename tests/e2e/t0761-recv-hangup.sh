#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A parked recv is freed as soon as its client hangs up, not at its
# timeout: a client parks a recv with a 60 s timeout and is killed; the
# agent's count of parked recvs (status --json) is back to 0 within a
# few seconds, and the agent serves on. Over TCP + TLS (B has an addr) a
# killed client's socket is only half closed (a FIN), which the agent
# sees only by watching a parked connection for it.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

parked () { status_get "[a[\"inbox\"][\"recv_parked\"] for a in d if a[\"agent\"] == \"B\"][0]"; }
parked_is () { [ "$(parked)" = "$1" ]; }

# park: a client of B waiting in a recv of 60 s (PARK_PID, the python
# process itself, so that a kill reaches the client), once parked.
park () {
	python3 "$_lib_dir/inboxcap.py" "$CONF" park B 60 >park.out 2>park.err &
	PARK_PID=$!
	BG_PIDS="$BG_PIDS $PARK_PID"
	wait_for 20 grep -q parked park.out &&
	wait_for 20 parked_is 1
}

# drain_bg: a client of B that receives and consumes one message
# (DRAIN_PID), waiting up to 30 s for it.
drain_bg () {
	python3 "$_lib_dir/inboxcap.py" "$CONF" drain B 1 >drain.out 2>drain.err &
	DRAIN_PID=$!
	BG_PIDS="$BG_PIDS $DRAIN_PID"
}

# freed: kill the parked client; its recv is freed well before 60 s.
freed () {
	local start=$SECONDS
	kill -KILL "$PARK_PID" &&
	wait_for 20 parked_is 0 &&
	[ $((SECONDS - start)) -lt 30 ]
}

test_expect_success 'setup: A>B, B on TCP + TLS' '
	port=$(free_ports 1) && [ -n "$port" ] &&
	make_tls_config A B=127.0.0.1:$port &&
	sed -i "/^tls_dir/a channels = A>B" "$CONF" &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	parked_is 0
'

test_expect_success 'over TCP + TLS a killed client frees its parked recv at once' '
	park &&
	freed
'

test_expect_success 'two parked, one killed: the other stays parked and gets its message' '
	park && first=$PARK_PID &&
	drain_bg &&
	wait_for 20 parked_is 2 &&
	kill -KILL "$first" &&
	wait_for 20 parked_is 1 &&
	timeout 60 python3 "$_lib_dir/inboxcap.py" "$CONF" fill A B 1 hi 10 >"$OUT" &&
	json_check "d[\"sent\"] == 1" &&
	wait "$DRAIN_PID" &&
	json_check "d[\"consumed\"] == 1 and d[\"tags\"] == [\"hi-1-\"]" drain.out &&
	parked_is 0
'

test_done
