#!/bin/bash
# A TLS record that reaches an agent in pieces is waited for, not polled
# for: while a client's request record is half sent, the agent sleeps in
# epoll (its CPU time stays flat), and once the rest arrives it answers.
# An agent that counted the half record as readable data polled every
# connection with a zero timeout until the rest came (a busy loop whose
# cost grew with the number of clients). Checked with one and with 64
# other idle TLS clients connected.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

PAUSE=3
# The most CPU the agent may use while it waits PAUSE seconds: a spinning
# agent uses about PAUSE on an idle machine, and still a good share of a
# core on a loaded one; a waiting one uses close to nothing.
MAX_CPU=0.6

test_expect_success 'setup: A and B over TCP + TLS on loopback' '
	ports=$(free_ports 2) &&
	PA=$(echo "$ports" | sed -n 1p) && PB=$(echo "$ports" | sed -n 2p) &&
	[ -n "$PA" ] && [ -n "$PB" ] &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	set_balances A=100 B=50 &&
	APID=$(agent_pid A) && [ -n "$APID" ]
'

# The version byte tls_partial.py writes.
CS_WIRE=$(wire_version)
export CS_WIRE

# half_record: send a status request in two halves PAUSE s apart; the
# agent must stay idle meanwhile and answer with a REPLY (type 30).
half_record () {
	python3 "$_lib_dir/tls_partial.py" 127.0.0.1 "$PA" "$TEST_DIR/tls" \
	    "$APID" "$PAUSE" >"$TEST_DIR/.half" &&
	cat "$TEST_DIR/.half" >&2 &&
	json_check "d[\"version\"] == $CS_WIRE and d[\"type\"] == 30" "$TEST_DIR/.half" &&
	json_check "d[\"cpu_s\"] <= $MAX_CPU" "$TEST_DIR/.half"
}

# conns_to_a_at_least N: N established TCP connections to A's port.
conns_to_a_at_least () {
	[ "$(ss -Htn state established "( sport = :$PA )" | wc -l)" -ge "$1" ]
}

test_expect_success 'half a record: A waits without spinning, then answers' '
	half_record
'

test_expect_success 'the same with 64 other idle TLS clients connected' '
	rc=1 && pids="" &&
	for i in $(seq 1 64); do
		sleep 20 | timeout 25 openssl s_client -quiet \
		    -connect 127.0.0.1:$PA -cert tls/client.crt \
		    -key tls/client.key -CAfile tls/ca.crt >/dev/null 2>&1 &
		pids="$pids $!"
	done &&
	BG_PIDS="$BG_PIDS $pids" &&
	wait_for 20 conns_to_a_at_least 64 &&
	{ half_record; rc=$?; }
	kill $pids 2>/dev/null
	[ "$rc" -eq 0 ]
'

test_expect_success 'A is unharmed: balances and a transfer work' '
	expect_eq "$(bal A)" 100 "A" && expect_eq "$(bal B)" 50 "B" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	wait_for 10 total_is 150 &&
	expect_eq "$(bal A)" 90 "A after"
'

test_done
