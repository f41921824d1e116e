#!/bin/bash
# A channel that breaks during a snapshot: the markers written before the
# break are written again after the reconnect, in their place among the
# channel's messages, so the snapshot completes instead of waiting for its
# timeout, and its cut is consistent (verify, the conserved total).
. "$(dirname "$0")/lib.sh"

# sum_of ID: the conserved total of bal that show --sum prints.
sum_of () {
	cs show -r "$REPO" "$1" --sum bal --json >"$OUT" 2>"$ERR" || return 1
	json_get 'd["sum"]["total"]'
}

test_expect_success 'setup: A, B, C with 1000 each; A breaks its first channel at a marker' '
	make_config A B C &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	stop_cluster &&
	export CUTSNAP_FAULT=break-channel-at-marker &&
	expect_ok start -c "$CONF" --log-level debug &&
	_record_agent_pids &&
	unset CUTSNAP_FAULT
'

test_expect_success 'messages queued on both sides of the marker; the snapshot completes' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok channel -c "$CONF" hold A C &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok transfer -c "$CONF" A:bal C:bal 6 &&
	snapshot_bg --initiator A --timeout 20 &&
	wait_recorded A &&
	expect_ok transfer -c "$CONF" A:bal B:bal 7 &&
	expect_ok transfer -c "$CONF" A:bal C:bal 8 &&
	expect_ok channel -c "$CONF" release A B &&
	expect_ok channel -c "$CONF" release A C &&
	snapshot_wait &&
	expect_eq "$(snap_status "$SNAP_ID")" complete "status of the snapshot"
'

test_expect_success 'the break really happened (one line in the log of A)' '
	expect_eq "$(grep -c "channel broken by CUTSNAP_FAULT after a marker" run/A.log)" 1 \
	    "break lines"
'

test_expect_success 'the cut verifies and holds every unit: 3000' '
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(sum_of "$SNAP_ID")" 3000 "conserved total in the snapshot"
'

test_expect_success 'the live cluster carries on: everything delivered once' '
	wait_bal B 1012 &&
	wait_bal C 1014 &&
	expect_eq "$(total)" 3000 "live total" &&
	take_snapshot --initiator B &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_done
