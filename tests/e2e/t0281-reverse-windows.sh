#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# `channel release --reverse` works at any queue length: more messages
# than a receiver holds back (65,536) are delivered in reversed windows,
# marker first in its window; a snapshot taken while they were queued
# completes and verifies, and each message arrives exactly once.
. "$(dirname "$0")/lib.sh"

BACKLOG=80000		# > 65,536, the receiver's hold-back
START=10000000

chan () { out_field A B "$1"; }
drained () { channel_drained A B; }

# A has recorded its state for the running snapshot (from status --json).
a_recorded () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st" &&
	    json_check '[a["snapshot"]["phase"] for a in d if a["agent"] == "A"
	        and a["snapshot"]][0] in ("recording", "recorded", "reported")' \
	    "$TEST_DIR/.st"
}

test_expect_success "setup: A>B held with more than $BACKLOG messages queued" '
	CHANNELS="A>B" make_config A B &&
	start_cluster &&
	set_balances A=$START B=0 &&
	expect_ok channel -c "$CONF" hold A B &&
	rounds=0 &&
	while [ "$(chan sent)" -lt $BACKLOG ]; do
		rounds=$((rounds + 1)) &&
		[ $rounds -le 12 ] &&
		expect_ok load -c "$CONF" -s 2 --clients 32 --max-amount 1 --no-drain --json &&
		json_check "d[\"failures\"] == 0" || return 1
	done &&
	SENT=$(chan sent) &&
	say "queued: $SENT" &&
	expect_eq "$(chan queued)" "$SENT" "queued"
'

test_expect_success 'a snapshot from A records its state; its marker queues behind them' '
	snapshot_bg --initiator A --timeout 120 &&
	wait_for 20 a_recorded &&
	snapshot_running &&
	expect_eq "$(chan queued)" $((SENT + 1)) "queued (messages and the marker)"
'

test_expect_success 'release --reverse: the channel drains, the receiver never gives up' '
	expect_ok channel -c "$CONF" release --reverse A B &&
	wait_for 40 drained &&
	! grep -q "ahead of applied" run/B.log
'

# The marker leads the last window: B records then, having applied every
# earlier window, so the cut holds the last window's messages in flight.
test_expect_success 'the snapshot completes and verifies; the cut holds the total' '
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	row=$(chan_row "$SNAP_ID" A B) &&
	n=$(msg_count "$SNAP_ID" A B) &&
	say "channel A>B in the cut: applied|sent $row, $n messages recorded" &&
	expect_eq "$row" "$((SENT - n))|$SENT" "applied|sent of A>B" &&
	[ "$n" -ge 1 ] && [ "$n" -le 4096 ] &&
	expect_ok show -r "$REPO" "$SNAP_ID" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == $START and d[\"sum\"][\"in_flight\"] == $n"
'

test_expect_success 'every message arrived exactly once' '
	expect_eq "$(bal B)" "$SENT" "B (one per message)" &&
	expect_eq "$(bal A)" $((START - SENT)) "A" &&
	expect_eq "$(total)" $START "total"
'

test_done
