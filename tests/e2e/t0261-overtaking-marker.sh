#!/bin/bash
# A message that overtakes its marker (the drill `channel release
# --overtake`): the receiver records a state that holds a credit the
# sender's recorded state has not sent yet. The commit checks the cut
# first, so the snapshot is aborted with the reason and never listed
# complete; before, it was committed and only a later verify failed.
. "$(dirname "$0")/lib.sh"

complete_count () {
	cs ls -r "$REPO" --json >"$TEST_DIR/.ls" &&
	json_get "len([s for s in d if s[\"status\"] == \"complete\"])" "$TEST_DIR/.ls"
}

test_expect_success 'setup: A=100, B=100, one good snapshot' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	take_snapshot &&
	expect_eq "$(complete_count)" 1 "complete snapshots"
'

test_expect_success 'bad usage: --overtake with hold, or with --reverse: exit 2, one line' '
	expect_error 2 channel -c "$CONF" hold --overtake A B &&
	expect_error 2 channel -c "$CONF" release --overtake --reverse A B
'

# A->B queues: 10 (seq 1), the marker (s = 1), 5 (seq 2, sent after A
# recorded). Overtaking delivers 10, 5, marker: B records applied 2.
test_expect_success 'a message overtakes its marker: the snapshot is aborted with the reason' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	snapshot_bg --initiator A --timeout 20 &&
	wait_recorded A &&
	snapshot_running &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok channel -c "$CONF" release --overtake A B &&
	! snapshot_wait &&
	expect_eq "$SNAP_RC" 1 "snapshot exit status" &&
	grep -q "^cutsnap: .*the cut is inconsistent: channel A->B: applied 2 > sent 1" "$TEST_DIR/.snap.err" || {
		cat "$TEST_DIR/.snap.err" >&2; false; } &&
	ID=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$ID")" aborted "status of snapshot $ID" &&
	sql "select reason from snapshots where id = $ID" | grep -q "applied 2 > sent 1" &&
	expect_eq "$(complete_count)" 1 "complete snapshots"
'

test_expect_success 'nothing was lost; the next snapshot is complete and verifies' '
	wait_bal B 115 &&
	expect_eq "$(total)" 200 "total" &&
	take_snapshot --initiator A &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok show -r "$REPO" "$SNAP_ID" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == 200"
'

test_expect_success 'release --overtake with no marker queued delivers every message' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 2 &&
	expect_ok channel -c "$CONF" release --overtake A B &&
	wait_bal B 118 &&
	expect_eq "$(total)" 200 "total"
'

test_done
