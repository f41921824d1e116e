#!/bin/bash
# A snapshot that times out behind a held channel ("channel hold") names
# the channel and the command that releases it, not only the agent that
# waits behind it; with two held, both; with none held, none is blamed.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A=100, B=50; hold A->B' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B
'

test_expect_success 'the timeout names the held channel and how to release it' '
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 2 &&
	err_matches "^cutsnap: snapshot: snapshot [0-9]+ aborted: timed out after 2 s waiting for B: channel A->B is held \(cutsnap channel release A B\)$"
'

test_expect_success 'two held channels are both named' '
	expect_ok channel -c "$CONF" hold B A &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --initiator A --timeout 2 &&
	err_matches "waiting for A, B: channels A->B, B->A are held \(cutsnap channel release SRC DST\)$"
'

test_expect_success 'released, the snapshot completes and the total holds' '
	expect_ok channel -c "$CONF" release A B &&
	expect_ok channel -c "$CONF" release B A &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --timeout 20 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'an agent that does not answer (stopped): no channel is blamed' '
	kill -STOP "$(agent_pid B)" &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --initiator A --timeout 2
	rc=$?
	kill -CONT "$(agent_pid B)"
	[ $rc = 0 ] &&
	err_matches "agent B" && ! grep -q held "$ERR"
'

test_done
