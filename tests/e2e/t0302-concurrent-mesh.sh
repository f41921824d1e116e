#!/bin/bash
# Concurrent snapshots on a full mesh of four agents: four started at
# once, one at each agent, into one repository while transfers wait on
# held channels; two configs listing the agents in opposite orders taking
# snapshots at the same time; and two snapshots of the same new data
# sharing the chunk copy (each chunk copied once between them).
. "$(dirname "$0")/lib.sh"

# Small chunks: a little data makes many of them.
export CUTSNAP_CHUNK_SIZE=4096
declare -A ID_OF

# start_four TAG-PREFIX: a snapshot at each of A, B, C, D, all at once.
start_four () {
	local n
	for n in A B C D; do
		snapshot_bg_as "$1$n" -r "$REPO" --initiator "$n" --timeout 60 ||
		    return 1
	done
}

# finish_four TAG-PREFIX TOTAL: all four complete, verify, hold TOTAL,
# and have distinct ids.
finish_four () {
	local n ids=""
	for n in A B C D; do
		snapshot_wait_as "$1$n" || return 1
		ID_OF[$1$n]=$SNAP_ID
		ids="$ids $SNAP_ID"
		expect_ok verify -r "$REPO" "$SNAP_ID" &&
		expect_eq "$(cut_total "$REPO" "$SNAP_ID")" "$2" \
		    "total of the snapshot started at $n" || return 1
	done
	expect_eq "$(printf "%s\n" $ids | sort -u | wc -l)" 4 "distinct ids"
}

test_expect_success 'setup: A, B, C, D with 100 each, full mesh' '
	make_config A B C D &&
	start_cluster &&
	set_balances A=100 B=100 C=100 D=100
'

test_expect_success 'four snapshots started together, one at each agent, transfers held' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok channel -c "$CONF" hold C D &&
	expect_ok channel -c "$CONF" hold D A &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_ok transfer -c "$CONF" C:bal D:bal 20 &&
	expect_ok transfer -c "$CONF" D:bal A:bal 5 &&
	start_four m &&
	wait_for 20 snapshots_at_least 4 "[\"recording\", \"recorded\", \"reported\"]" &&
	expect_ok status -c "$CONF" --json &&
	json_check "all(len(a[\"snapshots\"]) == 4 for a in d)" &&
	expect_ok status -c "$CONF" &&
	grep -Eq "^A .*snapshot=[0-9]+:[a-z]+,[0-9]+:[a-z]+,[0-9]+:[a-z]+,[0-9]+:[a-z]+$" "$OUT"
'

test_expect_success 'more transfers while they run, then release: all four complete with 400' '
	expect_ok transfer -c "$CONF" B:bal C:bal 7 &&
	expect_ok transfer -c "$CONF" A:bal D:bal 3 &&
	expect_ok channel -c "$CONF" release A B &&
	expect_ok channel -c "$CONF" release C D &&
	expect_ok channel -c "$CONF" release D A &&
	finish_four m 400
'

# The three transfers were sent before any snapshot and delivered only
# after every agent had recorded all four: each cut holds all three.
test_expect_success 'each of the four recorded the 10, the 20 and the 5 in flight' '
	n=0 &&
	for t in mA mB mC mD; do
		expect_eq "$(msg_count "${ID_OF[$t]}")" 3 "messages in $t" &&
		expect_eq "$(msg_sum "${ID_OF[$t]}")" 35 "amount in flight in $t" ||
		return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 4 "snapshots checked"
'

test_expect_success 'two configs listing the agents in opposite orders: snapshots at the same time both complete' '
	sed -n "1,4p" "$CONF" >"$TEST_DIR/rev.ini" &&
	for n in D C B A; do printf "\n[agent %s]\ndata = %s.data\n" "$n" "$n" >>"$TEST_DIR/rev.ini"; done &&
	expect_ok channel -c "$CONF" hold B C &&
	expect_ok transfer -c "$CONF" B:bal C:bal 1 &&
	snapshot_bg_as fwd -r "$REPO" --initiator A --timeout 60 &&
	SNAP_CONF=$TEST_DIR/rev.ini snapshot_bg_as rev -r "$REPO" --initiator D --timeout 60 &&
	wait_for 20 snapshots_at_least 2 &&
	expect_ok channel -c "$CONF" release B C &&
	snapshot_wait_as fwd && F=$SNAP_ID &&
	snapshot_wait_as rev && R=$SNAP_ID &&
	[ "$F" != "$R" ] &&
	expect_ok verify -r "$REPO" "$F" && expect_ok verify -r "$REPO" "$R" &&
	expect_eq "$(cut_total "$REPO" "$F")" 400 "total (A first)" &&
	expect_eq "$(cut_total "$REPO" "$R")" 400 "total (D first)"
'

# 8 values of ~130 KB each: with 4 KiB chunks some 250 new chunks.
test_expect_success 'two snapshots of the same new data at once copy each chunk once between them' '
	for i in 1 2 3 4 5 6 7 8; do
		head -c 100000 /dev/urandom | base64 -w0 >"$TEST_DIR/v$i" &&
		cs put -c "$CONF" C "blob$i" - <"$TEST_DIR/v$i" >/dev/null || return 1
	done &&
	expect_ok channel -c "$CONF" hold A B &&
	snapshot_bg_as c1 -r "$REPO" --initiator B --timeout 60 --json &&
	snapshot_bg_as c2 -r "$REPO" --initiator A --timeout 60 --json &&
	wait_for 20 snapshots_at_least 2 &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait_as c1 && snapshot_wait_as c2 &&
	c1=$TEST_DIR/.snap-c1.out && c2=$TEST_DIR/.snap-c2.out &&
	say "c1: $(json_get "d[\"chunks\"]" "$c1") c2: $(json_get "d[\"chunks\"]" "$c2")" &&
	n1=$(json_get "d[\"chunks\"][\"copied\"] + d[\"chunks\"][\"shared\"]" "$c1") &&
	n2=$(json_get "d[\"chunks\"][\"copied\"] + d[\"chunks\"][\"shared\"]" "$c2") &&
	new=$(( n1 > n2 ? n1 : n2 )) &&
	[ "$new" -ge 200 ] &&
	copied=$(( $(json_get "d[\"chunks\"][\"copied\"]" "$c1") + $(json_get "d[\"chunks\"][\"copied\"]" "$c2") )) &&
	expect_eq "$copied" "$new" "chunks copied by the two together" &&
	expect_ok verify -r "$REPO" "$(json_get "d[\"id\"]" "$c1")" &&
	expect_ok verify -r "$REPO" "$(json_get "d[\"id\"]" "$c2")"
'

test_expect_success 'restore each of the four started together: 400' '
	stop_cluster &&
	restore_each 400 "$REPO:${ID_OF[mA]}" "$REPO:${ID_OF[mB]}" \
	    "$REPO:${ID_OF[mC]}" "$REPO:${ID_OF[mD]}"
'

test_done
