#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Compactions and snapshots together: a compaction requested while a
# snapshot holds its recorded prefix waits until the snapshot has copied
# it (requests are served meanwhile), and that snapshot verifies and
# restores; a snapshot taken while the rewrite runs (compact-slow hook)
# verifies and restores; the first snapshot after a rewrite, which finds
# every chunk of the new file new, verifies and restores.
. "$(dirname "$0")/lib.sh"

# phase_of NAME: the phase of NAME's first snapshot in progress, or "none".
phase_of () {
	cs status -c "$CONF" --json >ph.json 2>/dev/null || return 1
	json_get "([a[\"snapshots\"][0][\"phase\"] for a in d if a[\"agent\"] == \"$1\" and a[\"snapshots\"]] or [\"none\"])[0]" ph.json
}

# comp NAME KEY: a field of NAME's compaction object in status --json.
comp () {
	cs status -c "$CONF" --json >cs.json 2>/dev/null || return 1
	json_get "[a for a in d if a[\"agent\"] == \"$1\"][0][\"compaction\"][\"$2\"]" cs.json
}

# restore_check ID TOTAL: restore snapshot ID into the stopped cluster's
# files and check the total of bal; the cluster runs again afterwards.
restore_check () {
	stop_cluster &&
	rm -f A.data B.data C.data &&
	expect_ok restore -r "$REPO" "$1" -c "$CONF" &&
	expect_eq "$(dump_total bal)" "$2" "restored total of snapshot $1" &&
	start_cluster
}

history () {
	local i
	for i in $(seq 1 "$1"); do
		cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null &&
		cs transfer -c "$CONF" B:bal C:bal 1 >/dev/null &&
		cs put -c "$CONF" A note "n$i" >/dev/null || return 1
	done
}

test_expect_success 'setup: three agents with history' '
	make_config A B C &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	history 40 &&
	wait_for 10 total_is 3000
'

test_expect_success 'a compaction requested during a snapshot waits for its copy' '
	expect_ok channel -c "$CONF" hold A B &&
	snapshot_bg --initiator A &&
	wait_for 20 eval "[ \"\$(phase_of A)\" = reported ]" &&
	expect_eq "$(comp A generation)" 0 "A generation before" || return 1
	cs compact -c "$CONF" A >comp.out 2>comp.err &
	COMP=$!
	BG_PIDS="$BG_PIDS $COMP"
	wait_for 10 eval "[ \"\$(comp A running)\" = true ]" &&
	expect_ok transfer -c "$CONF" C:bal A:bal 5 &&
	expect_eq "$(cs get -c "$CONF" A bal)" 965 "A serves while it waits" &&
	expect_eq "$(comp A generation)" 0 "A generation while the snapshot runs" &&
	kill -0 "$COMP" &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	wait "$COMP" &&
	grep -Eq "^A  [0-9]+ -> [0-9]+ bytes" comp.out &&
	expect_eq "$(comp A generation)" 1 "A generation after" &&
	DEFERRED=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$DEFERRED"
'

test_expect_success 'that snapshot restores to the same total' '
	restore_check "$DEFERRED" 3000 &&
	wait_for 10 total_is 3000
'

test_expect_success 'setup: agents whose rewrite thread takes 2 s' '
	stop_cluster &&
	CUTSNAP_FAULT=compact-slow:2000 start_cluster &&
	history 20 &&
	wait_for 10 total_is 3000
'

test_expect_success 'a snapshot taken while the rewrite runs verifies; transfers go on' '
	cs compact -c "$CONF" >comp2.out 2>comp2.err &
	COMP=$!
	BG_PIDS="$BG_PIDS $COMP"
	wait_for 10 eval "[ \"\$(comp B running)\" = true ]" &&
	take_snapshot --initiator B &&
	DURING=$SNAP_ID &&
	expect_ok transfer -c "$CONF" B:bal C:bal 3 &&
	wait "$COMP" &&
	[ "$(grep -c " -> " comp2.out)" = 3 ] &&
	expect_ok verify -r "$REPO" "$DURING" &&
	wait_for 10 total_is 3000
'

test_expect_success 'the first snapshot after the rewrite verifies; both restore' '
	history 5 &&
	take_snapshot --initiator C &&
	AFTER=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$AFTER" &&
	restore_check "$DURING" 3000 &&
	restore_check "$AFTER" 3000 &&
	expect_eq "$(cs get -c "$CONF" A note)" n5 "A note after restore"
'

test_done
