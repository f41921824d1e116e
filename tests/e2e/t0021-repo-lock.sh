#!/bin/bash
# The repository lock and concurrent users of one repository: an exclusive
# lock (forget/prune) refuses ls, verify, restore and snapshot naming its
# holder, and is stale once its holder dies (readers, which write nothing,
# leave its file; the next writer removes it); ls and verify run while a
# snapshot commits; two clusters snapshot into one repository at once.
. "$(dirname "$0")/lib.sh"

nlocks () { find "$REPO/locks" -name '*.lock' | wc -l; }

test_expect_success 'setup: A, B with 100 and 50; a first snapshot' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot &&
	FIRST=$SNAP_ID &&
	expect_eq "$(nlocks)" 0 "lock files left after the snapshot"
'

test_expect_success 'an exclusive lock refuses ls, verify and snapshot, naming its holder' '
	hold_exclusive &&
	for c in "ls -r $REPO" "verify -r $REPO" \
	    "snapshot -c $CONF -r $REPO --timeout 5"; do
		expect_error 11 $c &&
		err_matches "repository .* is locked exclusively by host=elsewhere pid=$LOCKER mode=exclusive" || return 1
	done &&
	expect_eq "$(sql "select count(*) from snapshots")" 1 "snapshots"
'

test_expect_success 'an exclusive lock refuses restore too, files untouched' '
	stop_cluster &&
	cp A.data A.before &&
	expect_error 11 restore -r "$REPO" -c "$CONF" &&
	err_matches "locked exclusively by host=elsewhere pid=$LOCKER" &&
	cmp A.data A.before
'

test_expect_success 'its holder killed: the lock is stale, readers work, the next writer removes it' '
	kill -KILL "$LOCKER" && { wait "$LOCKER" 2>/dev/null; true; } &&
	expect_eq "$(nlocks)" 1 "lock files before" &&
	expect_ok ls -r "$REPO" &&
	expect_ok verify -r "$REPO" "$FIRST" &&
	expect_ok restore -r "$REPO" -c "$CONF" &&
	expect_eq "$(nlocks)" 1 "lock files after the readers (they write nothing)" &&
	expect_ok prune -r "$REPO" --dry-run &&
	expect_eq "$(nlocks)" 0 "lock files after a writer"
'

test_expect_success 'ls and verify while a snapshot commits' '
	start_cluster &&
	export CUTSNAP_FAULT=coord-copy-delay:15000 &&
	snapshot_bg --timeout 45 &&
	unset CUTSNAP_FAULT &&
	wait_for 10 agent_phase_is B reported &&
	expect_ok ls -r "$REPO" --json &&
	json_check "any(s[\"status\"] == \"running\" for s in d)" &&
	expect_ok verify -r "$REPO" --json &&
	json_check "d[\"snapshot\"] == $FIRST and d[\"ok\"]" &&
	expect_eq "$(nlocks)" 1 "lock files during the snapshot" &&
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(nlocks)" 0 "lock files after"
'

# A second cluster, X and Y, in its own directory, same repository.
test_expect_success 'setup: a second cluster X, Y' '
	mkdir -p two &&
	printf "[cluster]\nrun_dir = run\n[agent X]\ndata = x.data\n[agent Y]\ndata = y.data\n" >two/cluster.ini &&
	CONF2=$TEST_DIR/two/cluster.ini &&
	expect_ok start -c "$CONF2" &&
	expect_ok put -c "$CONF2" X bal 7 &&
	expect_ok put -c "$CONF2" Y bal 8
'

test_expect_success 'two clusters snapshot into one repository at once: both complete' '
	export CUTSNAP_FAULT=coord-copy-delay:700
	snapshot_bg --timeout 20
	P1=$SNAP_PID
	cs snapshot -c "$CONF2" -r "$REPO" --timeout 20 >two.out 2>two.err &
	P2=$!
	BG_PIDS="$BG_PIDS $P2"
	unset CUTSNAP_FAULT
	wait "$P2"; rc2=$?
	SNAP_PID=$P1 && snapshot_wait &&
	expect_eq "$rc2" 0 "exit status of the second cluster" &&
	ID2=$(grep -Eo "[0-9]+" two.out | head -n 1) &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" "$ID2" &&
	expect_eq "$(sql "select group_concat(name) from agents where snapshot_id = $ID2")" "X,Y" "agents of $ID2" &&
	expect_eq "$(sql "select group_concat(name) from agents where snapshot_id = $SNAP_ID")" "A,B" "agents of $SNAP_ID"
'

test_expect_success 'their runs overlapped in time' '
	s1=$(sql "select started_at from snapshots where id = $SNAP_ID") &&
	f1=$(sql "select finished_at from snapshots where id = $SNAP_ID") &&
	s2=$(sql "select started_at from snapshots where id = $ID2") &&
	f2=$(sql "select finished_at from snapshots where id = $ID2") &&
	{ [[ ! "$s2" > "$f1" ]] && [[ ! "$s1" > "$f2" ]]; } ||
	    { say "$s1..$f1 and $s2..$f2 do not overlap"; false; }
'

test_expect_success 'stop the second cluster' '
	expect_ok stop -c "$CONF2"
'

test_done
