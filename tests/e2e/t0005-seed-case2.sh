#!/bin/bash
# The second seed case: the message is in flight towards the initiator.
# A=100, B=100, hold B->A, transfer 40 from B to A, snapshot from A: the cut
# is A=100 (recorded before the credit), B=60 and the 40 on B->A.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A=100, B=100; hold B->A; transfer 40 from B' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	expect_ok channel -c "$CONF" hold B A &&
	expect_ok transfer -c "$CONF" B:bal A:bal 40 &&
	expect_eq "$(bal B)" 60 "B bal" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'snapshot from A is pending until B->A is released' '
	snapshot_bg --initiator A &&
	wait_recorded A &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release B A &&
	snapshot_wait &&
	wait_bal A 140 &&
	expect_eq "$(total)" 200 "live total"
'

test_expect_success 'verify exits 0' '
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'the cut: A recorded 100, B recorded 60, one 40 message on B->A' '
	expect_eq "$(blob_val "$SNAP_ID" A bal)" 100 "recorded A" &&
	expect_eq "$(blob_val "$SNAP_ID" B bal)" 60 "recorded B" &&
	expect_eq "$(msg_count "$SNAP_ID")" 1 "messages" &&
	expect_eq "$(msg_count "$SNAP_ID" B A)" 1 "messages on B->A" &&
	expect_eq "$(chan_row "$SNAP_ID" B A)" "0|1" "B->A applied|sent" &&
	expect_eq "$(chan_row "$SNAP_ID" A B)" "0|0" "A->B applied|sent" &&
	messages_sha_ok "$SNAP_ID"
'

test_expect_success 'restore: A=140, B=60' '
	stop_cluster &&
	expect_ok restore -r "$REPO" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)" 140 "restored A" &&
	expect_eq "$(dump_val B.data bal)" 60 "restored B"
'

test_expect_success 'restarted on the restored files: B does not resend the 40' '
	start_cluster &&
	expect_ok transfer -c "$CONF" B:bal A:bal 1 &&
	wait_bal A 141 &&
	expect_eq "$(bal B)" 59 "B" &&
	expect_eq "$(total)" 200 "total" &&
	stop_cluster
'

test_done
