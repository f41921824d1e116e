#!/bin/bash
# A snapshot that cannot finish in time is aborted, never listed as
# complete, and does not stop later snapshots.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A=100, B=50; hold A->B' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B
'

test_expect_success 'snapshot --timeout 2 with A->B held: exit 1 within bounds, one line' '
	start=$SECONDS &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 2 &&
	took=$((SECONDS - start)) &&
	say "took ${took}s" &&
	[ $took -ge 1 ] && [ $took -le 10 ] &&
	err_matches "time|abort"
'

test_expect_success 'ls shows that snapshot as aborted' '
	ABORTED=$(sql "select max(id) from snapshots") &&
	[ -n "$ABORTED" ] &&
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d if s[\"id\"] == $ABORTED] == [\"aborted\"]" &&
	json_check "not any(s[\"status\"] == \"running\" for s in d)" &&
	expect_eq "$(snap_status "$ABORTED")" aborted "manifest status"
'

test_expect_success 'the aborted snapshot records why' '
	reason=$(sql "select reason from snapshots where id = $ABORTED") &&
	say "reason: $reason" &&
	[ -n "$reason" ]
'

test_expect_success 'verify with no complete snapshot: exit 1, one line' '
	expect_error 1 verify -r "$REPO"
'

test_expect_success 'verify of the aborted id: exit 1, saying it is aborted' '
	expect_exit 1 verify -r "$REPO" "$ABORTED" &&
	cat "$OUT" "$ERR" | grep -Eqi "abort|not complete"
'

test_expect_success 'restore of the aborted id: refused, data files untouched' '
	cp A.data A.saved && cp B.data B.saved &&
	expect_exit 1 restore -r "$REPO" "$ABORTED" -c "$CONF" &&
	cmp A.data A.saved && cmp B.data B.saved
'

test_expect_success 'the agents kept serving during and after the aborted snapshot' '
	expect_ok status -c "$CONF" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_eq "$(bal A)" 90 "A"
'

test_expect_success 'after release a new snapshot completes and verifies' '
	expect_ok channel -c "$CONF" release A B &&
	wait_bal B 60 &&
	take_snapshot --initiator B --timeout 10 &&
	[ "$SNAP_ID" != "$ABORTED" ] &&
	expect_eq "$(snap_status "$SNAP_ID")" complete "status" &&
	expect_ok verify -r "$REPO" &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'verify of the aborted id still fails' '
	expect_exit 1 verify -r "$REPO" "$ABORTED"
'

test_expect_success 'a snapshot with an agent down: exit 1 at once, not complete, not left running' '
	pid=$(agent_pid B) && kill -TERM $pid &&
	wait_for 10 pid_gone $pid &&
	before=$(sql "select count(*) from snapshots where status = '\''complete'\''") &&
	start=$SECONDS &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --initiator A --timeout 20 &&
	took=$((SECONDS - start)) &&
	{ [ $took -le 5 ] || { say "took ${took}s with --timeout 20"; false; }; } &&
	err_matches "B" &&
	expect_eq "$(sql "select count(*) from snapshots where status = '\''complete'\''")" \
	    "$before" "complete snapshots" &&
	expect_eq "$(sql "select count(*) from snapshots where status = '\''running'\''")" \
	    0 "running snapshots"
'

# With A->B held, A reports at once (its only incoming channel brought the
# marker) while B waits for the marker on A->B.
test_expect_success 'the waiting agent killed during a snapshot: aborted promptly' '
	start_cluster &&
	expect_ok channel -c "$CONF" hold A B &&
	snapshot_bg --initiator B --timeout 20 &&
	wait_recorded B &&
	snapshot_running &&
	wait_recorded A &&
	snapshot_running &&
	pid=$(agent_pid B) && kill -KILL $pid || return 1
	start=$SECONDS
	wait "$SNAP_PID"; rc=$?
	took=$((SECONDS - start))
	expect_eq "$rc" 1 "snapshot exit status" &&
	{ [ $took -le 10 ] || { say "took ${took}s to notice (timeout 20)"; false; }; } &&
	LAST=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$LAST")" aborted "status" &&
	say "reason: $(sql "select reason from snapshots where id = $LAST")"
'

test_expect_success 'an agent killed after it reported: the snapshot is aborted, not complete' '
	start_cluster &&
	expect_ok channel -c "$CONF" hold A B &&
	snapshot_bg --initiator B --timeout 4 &&
	wait_recorded B &&
	snapshot_running &&
	wait_for 10 agent_phase_is A reported &&
	pid=$(agent_pid A) && kill -KILL $pid || return 1
	wait "$SNAP_PID"; rc=$?
	expect_eq "$rc" 1 "snapshot exit status" &&
	LAST=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$LAST")" aborted "status" &&
	say "reason: $(sql "select reason from snapshots where id = $LAST")"
'

# A was restarted, so nothing is held any more.
test_expect_success 'after all that, a fresh snapshot completes and verifies' '
	start_cluster &&
	take_snapshot --initiator A &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'restore and verify without an id use the newest complete snapshot, not a newer aborted one' '
	GOOD=$SNAP_ID &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 1 &&
	NEWEST=$(sql "select max(id) from snapshots") &&
	[ "$NEWEST" -gt "$GOOD" ] &&
	expect_eq "$(snap_status "$NEWEST")" aborted "newest" &&
	expect_ok verify -r "$REPO" &&
	grep -Eq "(^|[^0-9])$GOOD([^0-9]|$)" "$OUT" "$ERR" &&
	expect_ok channel -c "$CONF" release A B &&
	stop_cluster &&
	expect_ok restore -r "$REPO" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" \
	    "$(blob_val "$GOOD" A bal)/$(blob_val "$GOOD" B bal)" "A/B"
'

test_done
