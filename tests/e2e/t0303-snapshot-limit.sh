#!/bin/bash
# The limit on concurrent snapshots: an agent takes part in up to 8 at
# once. Eight started at different agents run together and status lists
# every one; a ninth is refused at once with a clear error and recorded
# as aborted, while the eight go on and complete; then the slots are free
# again.
. "$(dirname "$0")/lib.sh"

declare -A ID_OF

test_expect_success 'setup: A=100, B=50, C=0; A->B held with 10 on it' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=50 C=0 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10
'

test_expect_success 'eight snapshots started at A, B and C in turn all run at once' '
	i=0 &&
	for n in A B C A B C A B; do
		i=$((i + 1)) &&
		snapshot_bg_as "s$i" -r "$REPO" --initiator "$n" --timeout 60 ||
		return 1
	done &&
	expect_eq "$i" 8 "started" &&
	wait_for 20 snapshots_at_least 8 &&
	expect_ok status -c "$CONF" --json &&
	json_check "all(len(a[\"snapshots\"]) == 8 for a in d)" &&
	json_check "all(len(set(s[\"uid\"] for s in a[\"snapshots\"])) == 8 for a in d)" &&
	json_check "len(set(s[\"id\"] for s in d[0][\"snapshots\"])) == 8" &&
	expect_eq "$(sql "select count(*) from snapshots where status = '\''running'\''")" 8 "running in the manifest"
'

test_expect_success 'status text lists the eight on each agent'"'"'s line' '
	expect_ok status -c "$CONF" &&
	for n in A B C; do
		line=$(grep -E "^$n " "$OUT") &&
		snaps=${line##*snapshot=} &&
		expect_eq "$(printf "%s" "$snaps" | tr "," "\n" | grep -Ec "^[0-9]+:(joined|recording|recorded|reported)$")" 8 "snapshots of $n" ||
		return 1
	done
'

test_expect_success 'a ninth is refused at once with a clear error, and aborted' '
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --initiator C --timeout 30 &&
	err_matches "agent A already takes part in 8 snapshots, the most it runs at once; try again once one has finished" &&
	NINTH=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$NINTH")" aborted "status of the ninth" &&
	sql "select reason from snapshots where id = $NINTH" | grep -q "8 snapshots"
'

test_expect_success 'the ninth into another repository is refused the same way' '
	expect_error 1 snapshot -c "$CONF" -r "$TEST_DIR/repo2" --initiator B --timeout 30 &&
	err_matches "already takes part in 8 snapshots"
'

test_expect_success 'the eight were not disturbed: all still run' '
	for i in 1 2 3 4 5 6 7 8; do kill -0 "${SNAP_PIDS[s$i]}" || return 1; done &&
	expect_ok status -c "$CONF" --json &&
	json_check "all(len(a[\"snapshots\"]) == 8 for a in d)"
'

test_expect_success 'release: all eight complete, verify and hold the total 150' '
	expect_ok channel -c "$CONF" release A B &&
	n=0 &&
	for i in 1 2 3 4 5 6 7 8; do
		snapshot_wait_as "s$i" &&
		ID_OF[s$i]=$SNAP_ID &&
		expect_ok verify -r "$REPO" "$SNAP_ID" &&
		expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "total of s$i" ||
		return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 8 "completed" &&
	expect_eq "$(printf "%s\n" "${ID_OF[@]}" | sort -u | wc -l)" 8 "distinct ids"
'

test_expect_success 'the slots are free again: a snapshot completes, status shows none' '
	wait_for 10 agents_idle &&
	take_snapshot --initiator C --timeout 20 &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "total"
'

test_expect_success 'restore one of the eight: 150' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "${ID_OF[s5]:-}" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 150 "restored total"
'

test_done
