#!/bin/bash
# An agent restored alone (restore --agent) into a cluster whose other
# agents moved on since the snapshot must not spend its recorded balance
# again, not even over a channel that saw no traffic since the cut: it
# starts fenced (no transfer, no message sent or applied, no snapshot)
# until every one of its channels has checked its history with the peer.
# Where a channel diverged, restoring the others from the same snapshot
# resolves it and the total is the snapshot's again; where nothing moved,
# the fence lifts by itself and messages queued for it arrive once.
. "$(dirname "$0")/lib.sh"

status_json () {
	cs status -c "$CONF" --json >"$OUT" 2>"$ERR"
	RC=$?
}

# fenced_of NAME: the agent's "fenced" member of status --json ("null"
# when not fenced).
fenced_of () {
	status_json
	json_get "[a.get('fenced') for a in d if a['agent'] == '$1'][0]"
}
unfenced () { [ "$(fenced_of "$1")" = "null" ]; }
# waiting_is NAME SPEC: the channels NAME's fence still waits for,
# sorted, space-separated.
waiting_of () {
	status_json
	json_get "' '.join(sorted([a for a in d if a['agent'] == '$1'][0]['fenced']['waiting']))"
}

# written_unacked SRC DST: SRC wrote its message to DST (nothing queued)
# and DST has not acknowledged it.
written_unacked () {
	[ "$(out_field "$1" "$2" queued)" = 0 ] &&
	    [ "$(out_field "$1" "$2" unacked)" = 1 ]
}

# out_diverged SRC DST: SRC's outgoing end to DST is diverged.
out_diverged () {
	status_json
	json_check "[o['diverged'] for a in d if a['agent'] == '$1'
	    for o in a['out'] if o['dst'] == '$2'] == [True]"
}

test_expect_success 'setup: A=100 B=100 C=100, a snapshot, then A pays B 100' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=100 C=100 &&
	take_snapshot &&
	ID=$SNAP_ID &&
	expect_eq "$(cut_total "$REPO" "$ID")" 300 "the snapshot total" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 100 &&
	wait_bal B 200 &&
	wait_channels_settled
'

test_expect_success 'A loses its disk and is restored alone into the live cluster: it starts fenced' '
	p=$(agent_pid A) && kill -9 "$p" &&
	wait_for 15 pid_gone "$p" &&
	rm -f A.data &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --agent A &&
	cs dump A.data --json >"$TEST_DIR/a.json" &&
	expect_eq "$(json_get "d[\"fenced\"]" "$TEST_DIR/a.json")" "$ID" "dump: fenced from" &&
	expect_ok start -c "$CONF" &&
	err_matches "agent A is fenced" &&
	err_matches "restore the other agents from the same snapshot" &&
	expect_eq "$(fenced_of A | json_get "d[\"snapshot\"]" /dev/stdin)" "$ID" "status: fenced from" &&
	wait_for 15 out_diverged A B
'

test_expect_success 'status exits 1 and names the fence in text and --json' '
	expect_exit 1 status -c "$CONF" &&
	grep -Eq "^A .*fenced \(restored alone from snapshot $ID\)" "$OUT" &&
	expect_exit 1 status -c "$CONF" --json &&
	json_check "[a[\"fenced\"] is None for a in d] == [False, True, True]"
'

test_expect_success 'the old balance cannot be spent over a channel without traffic since the cut' '
	expect_eq "$(bal A)" 100 "A restored" &&
	expect_error 1 transfer -c "$CONF" A:bal C:bal 100 &&
	err_matches "agent A is fenced" &&
	err_matches "nothing was transferred" &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 10 &&
	expect_eq "$(bal A)/$(bal C)" "100/100" "A/C unchanged"
'

test_expect_success 'what C sends A meanwhile is not applied while the fence holds' '
	expect_ok transfer -c "$CONF" C:bal A:bal 7 &&
	wait_for 15 written_unacked C A &&
	expect_eq "$(bal A)" 100 "A applied nothing" &&
	expect_eq "$(out_field C A unacked)" 1 "C->A unacknowledged"
'

test_expect_success 'no snapshot while an agent is fenced: it fails at once with the reason' '
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --timeout 20 &&
	err_matches "fenced"
'

test_expect_success 'the fence survives a restart and a compaction' '
	expect_ok compact -c "$CONF" A &&
	stop_cluster &&
	cs dump A.data --json >"$TEST_DIR/a.json" &&
	expect_eq "$(json_get "d[\"fenced\"]" "$TEST_DIR/a.json")" "$ID" "fenced after compaction" &&
	expect_ok start -c "$CONF" &&
	_record_agent_pids &&
	expect_eq "$(fenced_of A | json_get "d[\"snapshot\"]" /dev/stdin)" "$ID" "fenced after restart" &&
	expect_error 1 transfer -c "$CONF" A:bal C:bal 1 &&
	err_matches "fenced"
'

test_expect_success 'the documented resolution: restore the others from the same snapshot; the total is the cut total' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --agent B --agent C &&
	start_cluster &&
	wait_for 20 unfenced A &&
	wait_channels_settled &&
	expect_eq "$(total)" 300 "total after the restore" &&
	expect_ok transfer -c "$CONF" A:bal C:bal 100 &&
	wait_bal C 200 &&
	expect_eq "$(total)" 300 "total after a transfer" &&
	grep -q "fence lifted" run/A.log
'

test_expect_success 'a restore of every agent named with --agent is a whole restore: no fence' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --agent A --agent B --agent C &&
	for n in A B C; do
		cs dump $n.data --json >"$TEST_DIR/d.json" &&
		expect_eq "$(json_get "d[\"fenced\"]" "$TEST_DIR/d.json")" null "$n fenced" || return 1
	done
'

test_expect_success 'nothing moved since the cut: A restored alone lifts its fence itself; a credit queued for it arrives once' '
	start_cluster &&
	wait_channels_settled &&
	take_snapshot &&
	ID2=$SNAP_ID &&
	p=$(agent_pid A) && kill -9 "$p" &&
	wait_for 15 pid_gone "$p" &&
	expect_ok transfer -c "$CONF" B:bal A:bal 5 &&
	rm -f A.data &&
	expect_ok restore -r "$REPO" "$ID2" -c "$CONF" --agent A &&
	start_cluster &&
	! grep -q "fenced" "$ERR" &&
	expect_ok status -c "$CONF" &&
	wait_bal A 105 &&
	wait_channels_settled &&
	expect_eq "$(total)" 300 "total" &&
	expect_ok transfer -c "$CONF" A:bal C:bal 5 &&
	wait_bal C 105 &&
	expect_eq "$(total)" 300 "total after A spends"
'

test_done
