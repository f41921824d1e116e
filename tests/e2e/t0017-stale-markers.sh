#!/bin/bash
# Markers of an aborted snapshot still queued on a held channel, delivered
# before, after or mixed with those of the next snapshot: the next snapshot
# is right, and the agents are not left inside a snapshot nobody drives.
. "$(dirname "$0")/lib.sh"

# stale_case RELEASE_ARGS: hold A->B; transfer 10; a snapshot that times
# out (its marker stays queued at A); a second snapshot (its marker queued
# behind); release with RELEASE_ARGS; the second completes with the 10.
stale_case () {
	local a0 b0
	a0=$(bal A) && b0=$(bal B) &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 1 &&
	STALE=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$STALE")" aborted "first snapshot" &&
	snapshot_bg --initiator B --timeout 20 &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release "$@" A B &&
	snapshot_wait &&
	[ "$SNAP_ID" -gt "$STALE" ] &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(msg_count "$SNAP_ID" A B)" 1 "messages on A->B" &&
	expect_eq "$(msg_sum "$SNAP_ID")" 10 "amount in flight" &&
	expect_eq "$(blob_val "$SNAP_ID" A bal)/$(blob_val "$SNAP_ID" B bal)" \
	    "$((a0 - 10))/$b0" "recorded A/B" &&
	wait_bal B $((b0 + 10)) &&
	wait_for 10 agents_idle || { cs status -c "$CONF"; return 1; }
}

test_expect_success 'setup: A=100, B=50' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50
'

test_expect_success 'stale marker, FIFO release: the next snapshot is right' '
	stale_case
'

test_expect_success 'stale marker, reversed release (new marker, stale marker, message)' '
	stale_case --reverse
'

test_expect_success 'two stale markers queued, then a good snapshot' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 1 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 2 &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator A --timeout 1 &&
	expect_ok channel -c "$CONF" release --reverse A B &&
	wait_for 10 eval "[ \"\$(bal B)\" = 73 ]" &&
	wait_for 10 agents_idle &&
	take_snapshot --initiator A --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	take_snapshot --initiator B --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'restore the last: 150' '
	stop_cluster &&
	expect_ok restore -r "$REPO" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 150 "restored total"
'

test_done
