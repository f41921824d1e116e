#!/bin/bash
# Snapshots started while another is in progress run beside it, into the
# same repository or another one; an interrupted or killed coordinator
# never leaves a snapshot listed as complete, and the agents are ready for
# the next snapshot.
. "$(dirname "$0")/lib.sh"

# The cutsnap process of the background snapshot.
snap_child () { cutsnap_pid "$SNAP_PID"; }

test_expect_success 'setup: A=100, B=50; a first snapshot pending on held A->B' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	snapshot_bg --initiator B &&
	FIRST_PID=$SNAP_PID &&
	wait_recorded B &&
	snapshot_running
'

test_expect_success 'a second snapshot meanwhile (same repository) runs beside the first' '
	snapshot_bg_as second -r "$REPO" --initiator A --timeout 30 &&
	wait_for 10 snapshots_at_least 2 &&
	kill -0 "${SNAP_PIDS[second]}"
'

test_expect_success 'a third meanwhile (another repository) runs beside them' '
	snapshot_bg_as third -r "$TEST_DIR/repo2" --initiator B --timeout 30 &&
	wait_for 10 snapshots_at_least 3 &&
	kill -0 "${SNAP_PIDS[third]}"
'

test_expect_success 'release: all three complete and verify, each with the total 150' '
	expect_ok channel -c "$CONF" release A B &&
	SNAP_PID=$FIRST_PID &&
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(msg_count "$SNAP_ID" A B)" 1 "messages on A->B" &&
	expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "total of the first" &&
	FIRST=$SNAP_ID &&
	snapshot_wait_as second &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	[ "$SNAP_ID" != "$FIRST" ] &&
	expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "total of the second" &&
	snapshot_wait_as third &&
	expect_eq "$SNAP_ID" 1 "id in repo2" &&
	expect_ok verify -r "$TEST_DIR/repo2" 1 &&
	expect_eq "$(cut_total "$TEST_DIR/repo2" 1)" 150 "total of the third"
'

test_expect_success 'nothing is left running in the manifest; failed ones are aborted' '
	expect_eq "$(sql "select count(*) from snapshots where status = '\''running'\''")" 0 running &&
	expect_eq "$(sql "select count(*) from snapshots where status = '\''complete'\''")" 2 complete
'

# interrupted SIG: a snapshot pending on held A->B gets SIG; it must exit
# non-zero and leave the snapshot aborted; then release A->B.
interrupted () {
	local id child rc
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	id=$(sql "select max(id) from snapshots") &&
	child=$(snap_child) && [ -n "$child" ] &&
	kill -"$1" "$child" || return 1
	wait "$SNAP_PID"; rc=$?
	expect_ok channel -c "$CONF" release A B || return 1
	[ "$rc" -ne 0 ] || { say "exit 0 after SIG$1"; return 1; }
	expect_eq "$(snap_status "$id")" aborted "status of $id after SIG$1" &&
	say "reason: $(sql "select reason from snapshots where id = $id")"
}

test_expect_success 'SIGTERM to a pending snapshot: exit non-zero, marked aborted' '
	interrupted TERM
'

test_expect_success 'after it the agents forget the snapshot; a new one completes' '
	wait_bal B 61 &&
	wait_for 10 agents_idle &&
	take_snapshot --initiator A --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'SIGINT (Ctrl-C) to a pending snapshot: exit non-zero, marked aborted' '
	interrupted INT
'

test_expect_success 'after it a new snapshot completes' '
	wait_bal B 62 &&
	wait_for 10 agents_idle &&
	take_snapshot --initiator A --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'kill -9 of a pending snapshot: never listed as complete' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	KILLED=$(sql "select max(id) from snapshots") &&
	child=$(snap_child) && [ -n "$child" ] &&
	kill -KILL "$child" || return 1
	wait "$SNAP_PID"
	wait_for 5 eval "! kill -0 $child 2>/dev/null" &&
	[ "$(snap_status "$KILLED")" != complete ] &&
	expect_exit 1 verify -r "$REPO" "$KILLED"
'

test_expect_success 'the agents notice the coordinator is gone: a new snapshot completes' '
	expect_ok channel -c "$CONF" release A B &&
	wait_bal B 63 &&
	take_snapshot --initiator B --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" &&
	expect_eq "$(snap_status "$KILLED")" aborted "status of the killed one"
'

test_expect_success 'ls lists every snapshot, newest last, with its status' '
	expect_ok ls -r "$REPO" --json &&
	n=$(sql "select count(*) from snapshots") &&
	[ "$n" -gt 1 ] &&
	expect_eq "$(json_get "len(d)")" "$n" "listed snapshots" &&
	expect_eq "$(json_get "d[-1][\"id\"]")" "$SNAP_ID" "the newest, last" &&
	json_check "[s[\"id\"] for s in d] == sorted(s[\"id\"] for s in d)" &&
	json_check "[s[\"status\"] for s in d if s[\"id\"] == $FIRST] == [\"complete\"]"
'

test_expect_success 'several snapshots in a row, alternating initiators: all complete' '
	for i in 1 2 3 4 5 6; do
		if [ $((i % 2)) = 0 ]; then take_snapshot --initiator A; else take_snapshot --initiator B; fi || return 1
		expect_ok verify -r "$REPO" "$SNAP_ID" || return 1
	done
'

test_done
