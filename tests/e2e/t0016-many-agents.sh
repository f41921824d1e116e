#!/bin/bash
# Ten agents, a full mesh of 90 channels: snapshots from several initiators
# during transfers verify and restore to the same total.
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

NAMES=(N0 N1 N2 N3 N4 N5 N6 N7 N8 N9)

transfer_loop () {
	local s d rc
	RANDOM=$1
	for _ in $(seq 1 200); do
		s=${NAMES[RANDOM % 10]}
		d=${NAMES[RANDOM % 10]}
		[ "$s" = "$d" ] && continue
		cs transfer -c "$CONF" "$s:bal" "$d:bal" $((RANDOM % 100 + 1)) \
		    >/dev/null 2>&1
		rc=$?
		case $rc in 0 | 1) ;; *) echo "exit $rc" >>loop.errors ;; esac
	done
}

test_expect_success 'setup: ten agents with 500 each' '
	make_config "${NAMES[@]}" &&
	start_cluster &&
	for n in "${NAMES[@]}"; do
		cs put -c "$CONF" "$n" bal 500 >/dev/null || return 1
	done &&
	expect_eq "$(total)" 5000 "total"
'

test_expect_success 'snapshots from three initiators during transfers, with held channels' '
	transfer_loop $((TEST_SEED + 11)) &
	L1=$!
	transfer_loop $((TEST_SEED + 12)) &
	L2=$!
	BG_PIDS="$BG_PIDS $L1 $L2"
	IDS="" &&
	for init in N0 N5 N9; do
		expect_ok channel -c "$CONF" hold N1 "$init" &&
		expect_ok transfer -c "$CONF" N1:bal "$init:bal" 1 &&
		snapshot_bg --initiator "$init" &&
		wait_recorded "$init" &&
		snapshot_running &&
	snapshot_running &&
		expect_ok channel -c "$CONF" release --reverse N1 "$init" &&
		snapshot_wait || return 1
		IDS="$IDS $SNAP_ID"
	done &&
	wait $L1 && wait $L2 &&
	[ ! -s loop.errors ] || { cat loop.errors; false; }
'

test_expect_success 'each verifies; files plus messages = 5000; each has a message' '
	at_least 3 snapshots $IDS &&
	for id in $IDS; do
		expect_ok verify -r "$REPO" "$id" || return 1
		s=0
		for n in "${NAMES[@]}"; do
			v=$(blob_val "$id" "$n" bal) || return 1
			s=$((s + v))
		done
		m=$(msg_sum "$id") &&
		expect_eq "$((s + m))" 5000 "snapshot $id" || return 1
		[ "$(msg_count "$id")" -ge 1 ] || { say "snapshot $id has no message"; return 1; }
		expect_eq "$(sql "select count(*) from channels where snapshot_id = $id")" 90 "channel rows" || return 1
	done
'

test_expect_success 'the channels drain to 5000; restore each snapshot: 5000' '
	wait_for 20 total_is 5000 &&
	stop_cluster &&
	at_least 3 snapshots $IDS &&
	for id in $IDS; do
		expect_ok restore -r "$REPO" "$id" -c "$CONF" || return 1
		expect_eq "$(dump_total bal)" 5000 "restored $id" || return 1
	done
'

test_done
