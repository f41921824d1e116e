#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Thirty-two agents, a full mesh of 992 channels: transfers, a snapshot
# with a message held in flight, verify, and restore to the same total.
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

NAMES=()
for i in $(seq 0 31); do NAMES+=("N$i"); done

test_expect_success 'setup: 32 agents with 100 each' '
	make_config "${NAMES[@]}" &&
	start_cluster --timeout 60 &&
	for n in "${NAMES[@]}"; do
		cs put -c "$CONF" "$n" bal 100 >/dev/null || return 1
	done &&
	expect_eq "$(total)" 3200 "total"
'

test_expect_success 'a ring of transfers, one held in flight on N7->N0; the snapshot from N0 records it' '
	for i in $(seq 0 31); do
		expect_ok transfer -c "$CONF" "N$i:bal" "N$(((i + 1) % 32)):bal" \
		    $((i + 1)) || return 1
	done &&
	expect_ok channel -c "$CONF" hold N7 N0 &&
	expect_ok transfer -c "$CONF" N7:bal N0:bal 5 &&
	snapshot_bg --initiator N0 &&
	wait_recorded N0 &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release N7 N0 &&
	snapshot_wait &&
	ID=$SNAP_ID &&
	expect_eq "$(sql "select count(*) from channels where snapshot_id = $ID")" 992 "channel rows" &&
	expect_eq "$(sql "select count(*) from agents where snapshot_id = $ID")" 32 "agent rows" &&
	expect_eq "$(sql "select group_concat(src || \">\" || dst || \":\" || seq)
	    from messages where snapshot_id = $ID and src = \"N7\" and dst = \"N0\"")" \
	    "N7>N0:1" "the held message"
'

test_expect_success 'it verifies; recorded files plus the message in flight = 3200' '
	expect_ok verify -r "$REPO" "$ID" &&
	s=0 &&
	for n in "${NAMES[@]}"; do
		v=$(blob_val "$ID" "$n" bal) || return 1
		s=$((s + v))
	done &&
	expect_eq "$(msg_sum "$ID")" 5 "in flight" &&
	expect_eq "$((s + 5))" 3200 "recorded total"
'

test_expect_success 'with a soft limit of 40 open files, 2 per agent do not fit: the snapshot raises it and completes' '
	[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 256 ] ||
	    { say "hard open-file limit $(ulimit -Hn) is too low for this case"; return 1; }
	(ulimit -S -n 40 && cs snapshot -c "$CONF" -r "$REPO" >"$OUT" 2>"$ERR") ||
	    { show_out; false; } &&
	expect_ok verify -r "$REPO" "$(cat "$OUT")"
'

test_expect_success 'stop, restore: every agent as recorded plus the replayed 5, total 3200' '
	wait_for 20 total_is 3200 &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 3200 "restored total" &&
	expect_eq "$(dump_val N0.data bal)" "$(( $(blob_val "$ID" N0 bal) + 5 ))" "N0 with the replay"
'

test_done
