#!/bin/bash
# TLS session resumption: an agent gives a client one session ticket per
# full handshake, and a client that comes back with it resumes (no
# certificate, no signature); an agent restarted has a new ticket key, so
# an old ticket gets a full handshake, not a refusal. load (which resumes
# on its later connections to an agent) stays exact over TLS.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

LOAD=$TEST_DIR/load.json

ge () { [ "$1" -ge "$2" ] || { say "$3: $1, expected at least $2"; return 1; }; }

test_expect_success 'setup: A, B, C on 127.0.0.1 with TLS, channels up' '
	tls_loopback_abc &&
	set_balances A=1000 B=1000 C=1000
'

test_expect_success 'a full handshake gives a ticket; coming back with it resumes' '
	s_client full.out -sess_out sess.pem &&
	grep -q "^New, TLSv1.3" full.out &&
	grep -q "Verify return code: 0 (ok)" full.out &&
	[ -s sess.pem ] &&
	s_client resumed.out -sess_in sess.pem &&
	cat resumed.out >&2 &&
	grep -q "^Reused, TLSv1.3" resumed.out
'

test_expect_success 'load over TLS (resumed connections): conserved, no failure' '
	cs load --json -c "$CONF" -s 2 --clients 16 >"$LOAD" 2>"$TEST_DIR/load.err"
	rc=$?
	cat "$LOAD" "$TEST_DIR/load.err" >&2
	expect_eq "$rc" 0 "load exit" &&
	expect_eq "$(json_get "d[\"conserved\"]" "$LOAD")" true "conserved" &&
	expect_eq "$(json_get "d[\"failures\"]" "$LOAD")" 0 "failures" &&
	ge "$(json_get "d[\"transfers\"]" "$LOAD")" 100 "transfers" &&
	total_is 3000
'

test_expect_success 'after a restart the old ticket gets a full handshake, then load works' '
	stop_cluster &&
	start_cluster &&
	wait_for 10 channels_up 12 &&
	s_client again.out -sess_in sess.pem &&
	cat again.out >&2 &&
	grep -q "^New, TLSv1.3" again.out &&
	grep -q "Verify return code: 0 (ok)" again.out &&
	cs load --json -c "$CONF" -s 1 --clients 8 >"$LOAD" 2>"$TEST_DIR/load.err" &&
	expect_eq "$(json_get "d[\"conserved\"]" "$LOAD")" true "conserved" &&
	expect_eq "$(json_get "d[\"failures\"]" "$LOAD")" 0 "failures" &&
	total_is 3000
'

test_expect_success 'no agent refused a connection or logged a bad frame' '
	expect_eq "$(cat "$TEST_DIR"/run/*.log | grep -Eci "refused|malformed|handshake failed")" 0 "bad lines"
'

test_expect_success 'stop' '
	stop_cluster
'

test_done
