#!/bin/bash
# One running cluster backed up into two repositories in turn: each
# repository numbers its snapshots from 1, yet the agents (which ignore
# markers of snapshots they have finished) take part in every one.
. "$(dirname "$0")/lib.sh"

make_config A B C
R1=$TEST_DIR/repo1
R2=$TEST_DIR/repo2

test_expect_success 'setup: three agents with 100 each' '
	start_cluster &&
	for n in A B C; do expect_ok put -c "$CONF" $n bal 100 || return 1; done
'

test_expect_success 'snapshot 1 of the first repository completes' '
	expect_ok snapshot -c "$CONF" -r "$R1" --initiator A --timeout 20 &&
	expect_eq "$(cat "$OUT")" 1 "id in repo1"
'

test_expect_success 'snapshot 1 of a second repository completes too' '
	expect_ok transfer -c "$CONF" A:bal B:bal 7 &&
	expect_ok snapshot -c "$CONF" -r "$R2" --initiator B --timeout 20 &&
	expect_eq "$(cat "$OUT")" 1 "id in repo2"
'

test_expect_success 'alternating between them keeps working' '
	expect_ok snapshot -c "$CONF" -r "$R1" --initiator C --timeout 20 &&
	expect_eq "$(cat "$OUT")" 2 "second id in repo1" &&
	expect_ok snapshot -c "$CONF" -r "$R2" --initiator A --timeout 20 &&
	expect_eq "$(cat "$OUT")" 2 "second id in repo2"
'

test_expect_success 'every snapshot of both repositories verifies' '
	for r in "$R1" "$R2"; do
		for id in 1 2; do
			expect_ok verify -r "$r" $id || return 1
		done
	done
'

test_expect_success 'each restores to the conserved total 300' '
	stop_cluster &&
	for r in "$R1" "$R2"; do
		expect_ok restore -r "$r" 2 -c "$CONF" &&
		expect_eq "$(dump_total bal)" 300 "total restored from $r" ||
		return 1
	done
'

test_done
