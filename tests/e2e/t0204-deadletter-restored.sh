#!/bin/bash
# Dead letters on a restored cluster: a refund over a reverse channel that
# came out of a half-finished restore diverged fails and leaves the dead
# letter open; once the restore is finished the refund goes through, and
# only once.
. "$(dirname "$0")/lib.sh"

# The outgoing channel B->A is diverged at B (status --json).
b_to_a_diverged () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st" 2>/dev/null
	json_check "[o[\"diverged\"] for a in d if a[\"agent\"] == \"B\" for o in a[\"out\"]] == [True]" "$TEST_DIR/.st"
}

test_expect_success 'setup: a dead letter at B, B->A traffic, a snapshot, more B->A traffic' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok put -c "$CONF" B word hello &&
	expect_ok transfer -c "$CONF" A:bal B:word 5 &&
	expect_ok transfer -c "$CONF" B:bal A:bal 10 &&
	wait_bal A 105 &&
	take_snapshot --initiator A --timeout 20 &&
	ID=$SNAP_ID &&
	expect_ok transfer -c "$CONF" B:bal A:bal 10 &&
	wait_bal A 115 &&
	stop_cluster
'

test_expect_success 'a restore stopped after the first file leaves B->A diverged' '
	CUTSNAP_FAULT=restore-after-file:1 cs restore -r "$REPO" "$ID" -c "$CONF" \
	    >"$OUT" 2>"$ERR"
	expect_eq $? 99 "exit status of the interrupted restore" &&
	start_cluster &&
	wait_for 15 b_to_a_diverged
'

test_expect_success 'refund over the diverged channel: exit 1, one line, the dead letter stays open' '
	expect_error 1 deadletter -c "$CONF" refund B A 1 &&
	err_matches "diverged" &&
	expect_ok deadletter -c "$CONF" list B --json &&
	json_check "[[x[\"seq\"], x[\"state\"]] for x in d[\"agents\"][0][\"dead_letters\"]] == [[1, \"open\"]]"
'

test_expect_success 'after the restore is finished the refund goes through, once' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	start_cluster &&
	expect_eq "$(bal A)" 105 "A bal at the cut" &&
	expect_ok deadletter -c "$CONF" refund B A 1 &&
	wait_bal A 110 &&
	expect_error 1 deadletter -c "$CONF" refund B A 1 &&
	expect_eq $(( $(bal A) + $(bal B) )) 150 "A + B"
'

test_done
