#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A request ID over TCP + TLS: transfer's lost reply (CUTSNAP_FAULT=
# drop-reply:1) is retried over a new TLS connection with the same ID and
# applied once; with every reply lost it exits 4, and the printed ID
# applies nothing more once the agent answers.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

restart () {
	stop_cluster && env "$@" "$CUTSNAP" start -c "$CONF" >/dev/null &&
	_record_agent_pids
}

printed_id () { grep -Eo -- '--request-id [0-9a-f]{32}' "$ERR" | cut -c14-; }

test_expect_success 'setup: A and B on TLS, 100 each' '
	ports=$(free_ports 2) &&
	PA=$(echo "$ports" | sed -n 1p) && PB=$(echo "$ports" | sed -n 2p) &&
	[ -n "$PA" ] && [ -n "$PB" ] &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	set_balances A=100 B=100
'

test_expect_success 'first reply lost over TLS: exit 0, applied once' '
	restart CUTSNAP_FAULT=drop-reply:1 &&
	expect_ok transfer -c "$CONF" -t 20 A:bal B:bal 10 &&
	expect_eq "$(cat "$OUT")" 90 "printed value" &&
	log_has A "reply to a request with an ID dropped" &&
	wait_bal B 110 &&
	expect_eq "$(bal A)" 90 "A" &&
	total_is 200
'

test_expect_success 'every reply lost over TLS: exit 4; the printed ID applies nothing more' '
	restart CUTSNAP_FAULT=drop-reply:1000 &&
	expect_error 4 add -c "$CONF" -t 4 A bal -5 &&
	err_matches "outcome unknown: request ID [0-9a-f]{32}" &&
	ID=$(printed_id) && [ -n "$ID" ] &&
	expect_eq "$(bal A)" 85 "A" &&
	restart &&
	expect_ok add -c "$CONF" --request-id "$ID" A bal -5 &&
	expect_eq "$(cat "$OUT")" 85 "printed value" &&
	expect_eq "$(bal A)" 85 "A"
'

test_done
