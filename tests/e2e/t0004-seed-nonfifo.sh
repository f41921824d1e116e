#!/bin/bash
# The seed example with a reordering transport: `channel release --reverse`
# delivers the held queue marker first.  The classic Chandy-Lamport rule
# would lose the in-flight 10 (140); cutsnap's (a, s] rule keeps it: 150.
. "$(dirname "$0")/lib.sh"

# seed_reverse INITIATOR: A=100, B=50; hold A->B; transfer 10; a snapshot
# from INITIATOR that has recorded there; release --reverse A B.
seed_reverse () {
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	snapshot_bg --initiator "$1" &&
	wait_recorded "$1" &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release --reverse A B &&
	snapshot_wait &&
	wait_bal B 60
}

test_expect_success 'setup: two agents' '
	make_config A B &&
	start_cluster
'

test_expect_success 'initiator B, A->B released in reverse: snapshot completes' '
	seed_reverse B &&
	ID_B=$SNAP_ID
'

test_expect_success 'initiator B: verify exits 0; cut A=90, B=50, one message A->B' '
	expect_ok verify -r "$REPO" "$ID_B" &&
	expect_eq "$(blob_val "$ID_B" A bal)" 90 "recorded A" &&
	expect_eq "$(blob_val "$ID_B" B bal)" 50 "recorded B" &&
	expect_eq "$(msg_count "$ID_B")" 1 "messages" &&
	expect_eq "$(msg_count "$ID_B" A B)" 1 "messages on A->B"
'

test_expect_success 'initiator A (marker overtakes the message at B): completes' '
	set_balances A=100 B=50 &&
	seed_reverse A &&
	ID_A=$SNAP_ID
'

test_expect_success 'initiator A: verify exits 0; B recorded 50 and the 10 is in the cut' '
	expect_ok verify -r "$REPO" "$ID_A" &&
	expect_eq "$(blob_val "$ID_A" A bal)" 90 "recorded A" &&
	expect_eq "$(blob_val "$ID_A" B bal)" 50 "recorded B" &&
	expect_eq "$(msg_count "$ID_A" A B)" 1 "messages on A->B" &&
	messages_sha_ok "$ID_A"
'

test_expect_success 'three messages and the marker, all reversed: held back, all recorded' '
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 2 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 4 &&
	expect_eq "$(bal A)" 93 "A bal" &&
	snapshot_bg --initiator A &&
	wait_recorded A &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release --reverse A B &&
	snapshot_wait &&
	ID_3=$SNAP_ID &&
	wait_bal B 57 &&
	expect_ok verify -r "$REPO" "$ID_3" &&
	expect_eq "$(msg_count "$ID_3" A B)" 3 "messages on A->B" &&
	expect_eq "$(blob_val "$ID_3" B bal)" 50 "recorded B" &&
	expect_eq "$(blob_val "$ID_3" A bal)" 93 "recorded A"
'

test_expect_success 'restore each: 150, the in-flight amounts arrive once' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID_B" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B from $ID_B" &&
	expect_ok restore -r "$REPO" "$ID_A" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B from $ID_A" &&
	expect_ok restore -r "$REPO" "$ID_3" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 93/57 "A/B from $ID_3"
'

test_done
