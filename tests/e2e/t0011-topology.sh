#!/bin/bash
# A config that lists its channels: transfers need a channel, snapshots need
# an initiator whose markers reach every agent.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: channels A>B B>C only; balances 100 each' '
	CHANNELS="A>B B>C" make_config A B C &&
	grep -q "^channels = A>B B>C" "$CONF" &&
	start_cluster &&
	set_balances A=100 B=100 C=100
'

test_expect_success 'transfer along a channel works (A->B, B->C)' '
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	wait_bal B 110 &&
	expect_ok transfer -c "$CONF" B:bal C:bal 20 &&
	wait_bal C 120
'

test_expect_success 'transfer A->C (no channel): refused with one line, nothing changes' '
	expect_error "[12]" transfer -c "$CONF" A:bal C:bal 5 &&
	err_matches "channel" &&
	expect_eq "$(bal A)/$(bal B)/$(bal C)" 90/90/120 "A/B/C"
'

test_expect_success 'transfer B->A (reverse of a channel): refused, nothing changes' '
	expect_error "[12]" transfer -c "$CONF" B:bal A:bal 5 &&
	expect_eq "$(bal A)/$(bal B)/$(bal C)" 90/90/120 "A/B/C"
'

test_expect_success 'snapshot from C (markers cannot reach A, B): refused, nothing complete' '
	expect_error "[12]" snapshot -c "$CONF" -r "$REPO" --initiator C &&
	err_matches "reach|channel|topolog" &&
	{ [ ! -f "$REPO/manifest.db" ] ||
	  expect_eq "$(sql "select count(*) from snapshots where status = '\''complete'\''")" 0 "complete"; }
'

test_expect_success 'snapshot from B (cannot reach A): refused' '
	expect_error "[12]" snapshot -c "$CONF" -r "$REPO" --initiator B
'

test_expect_success 'snapshot from A reaches everyone: complete, verifies' '
	take_snapshot --initiator A &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(sql "select count(*) from channels where snapshot_id = $SNAP_ID")" 2 "channel rows"
'

# C's only incoming channel is B->C: over FIFO the message reaches C before
# the marker, so C records it in its state and the channel empty.
test_expect_success 'snapshot from A, a message held on B->C, FIFO: C records it in its file' '
	expect_ok channel -c "$CONF" hold B C &&
	expect_ok transfer -c "$CONF" B:bal C:bal 30 &&
	snapshot_bg --initiator A &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release B C &&
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(msg_count "$SNAP_ID")" 0 "messages" &&
	expect_eq "$(blob_val "$SNAP_ID" B bal)/$(blob_val "$SNAP_ID" C bal)" \
	    60/150 "recorded B/C" &&
	wait_bal C 150
'

test_expect_success 'the same released in reverse: the 30 is recorded on B->C, restore 300' '
	expect_ok channel -c "$CONF" hold B C &&
	expect_ok transfer -c "$CONF" B:bal C:bal 30 &&
	snapshot_bg --initiator A &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release --reverse B C &&
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(msg_count "$SNAP_ID" B C)" 1 "messages on B->C" &&
	expect_eq "$(blob_val "$SNAP_ID" B bal)/$(blob_val "$SNAP_ID" C bal)" \
	    30/150 "recorded B/C" &&
	wait_bal C 180 &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)/$(dump_val C.data bal)" \
	    90/30/180 "A/B/C" &&
	expect_eq "$(dump_total bal)" 300 "total"
'

test_expect_success 'restore into a config with different agents: refused' '
	cat >other.ini <<-INI &&
	[cluster]
	run_dir = run2
	[agent A]
	data = A.other
	[agent X]
	data = X.other
	INI
	expect_error "[12]" restore -r "$REPO" "$SNAP_ID" -c "$TEST_DIR/other.ini" &&
	[ ! -e A.other ] && [ ! -e X.other ]
'

test_expect_success 'a cluster of one agent: snapshot and restore work' '
	mkdir solo &&
	printf "[cluster]\nrun_dir = run\n[agent S]\ndata = s.data\n" >solo/c.ini &&
	expect_ok start -c "$TEST_DIR/solo/c.ini" &&
	expect_ok put -c "$TEST_DIR/solo/c.ini" S bal 7 &&
	expect_ok snapshot -c "$TEST_DIR/solo/c.ini" -r "$TEST_DIR/solo/repo" &&
	expect_ok stop -c "$TEST_DIR/solo/c.ini" &&
	expect_ok verify -r "$TEST_DIR/solo/repo" &&
	rm solo/s.data &&
	expect_ok restore -r "$TEST_DIR/solo/repo" -c "$TEST_DIR/solo/c.ini" &&
	expect_eq "$(dump_val solo/s.data bal)" 7 "S"
'

test_done
