#!/bin/bash
# Retention: forget by --keep-last / --keep-within (a manifest change in
# one transaction), prune of the blobs no snapshot refers to; a prune
# killed after its first delete (CUTSNAP_FAULT=prune-after-delete:1) leaves
# a repository in which every remaining snapshot verifies; forget and prune
# wait for no one: they refuse while a snapshot holds the repository.
. "$(dirname "$0")/lib.sh"

nblobs () { find "$REPO/blobs" -type f -name '[0-9a-f]*' | wc -l; }
nref () { sql "select count(distinct lower(sha256)) from agent_chunks"; }
nsnaps () { sql "select count(*) from snapshots"; }

# verify_all: every snapshot in the manifest verifies.
verify_all () {
	local id
	for id in $(sql "select id from snapshots where status = 'complete'"); do
		expect_ok verify -r "$REPO" "$id" || return 1
	done
}

test_expect_success 'setup: five complete snapshots of changing data, one aborted' '
	make_config A B &&
	start_cluster &&
	for i in 1 2 3 4 5; do
		set_balances A=$((100 + i)) B=$((50 + i)) &&
		take_snapshot || return 1
		eval "S$i=\$SNAP_ID"
	done &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 1 &&
	ABORTED=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$ABORTED")" aborted "status" &&
	expect_ok channel -c "$CONF" release A B &&
	expect_eq "$(nsnaps)" 6 "snapshots"
'

test_expect_success 'forget and prune refuse while a snapshot holds the repository: exit 11' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	snapshot_bg --initiator B --timeout 60 &&
	wait_for 20 snapshot_is_running &&
	expect_error 11 forget -r "$REPO" --keep-last 1 &&
	err_matches "in use|locked" &&
	expect_error 11 prune -r "$REPO" &&
	err_matches "in use|locked" &&
	expect_eq "$(nsnaps)" 7 "snapshots while refused" &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	S6=$SNAP_ID
'

test_expect_success 'forget --dry-run: names what would go, changes nothing' '
	expect_ok forget -r "$REPO" --keep-last 2 --dry-run &&
	grep -Eq "^$S1 +[0-9-]+T[0-9:]+Z +complete$" "$OUT" &&
	grep -Eq "^$ABORTED +[0-9-]+T[0-9:]+Z +aborted$" "$OUT" &&
	grep -Eq "^$S6 +[0-9-]+T[0-9:]+Z +complete +last snapshot$" "$OUT" &&
	tail -n 1 "$OUT" | grep -qx "would forget 5 snapshots, kept 2" &&
	expect_eq "$(nsnaps)" 7 "snapshots"
'

test_expect_success 'forget --keep-last 2 --json: the two newest complete stay' '
	before=$(nblobs) &&
	expect_ok forget -r "$REPO" --keep-last 2 --json &&
	json_check "d[\"forgotten\"] == [$S1, $S2, $S3, $S4, $ABORTED] and d[\"kept\"] == [$S5, $S6] and d[\"dry_run\"] is False" &&
	json_check "[(s[\"id\"], s[\"reasons\"]) for s in d[\"keep\"]] == [($S5, [\"last snapshot\"]), ($S6, [\"last snapshot\"])]" &&
	expect_eq "$(sql "select group_concat(id) from (select id from snapshots order by id)")" "$S5,$S6" "manifest" &&
	expect_eq "$(sql "select count(*) from agent_chunks where snapshot_id not in ($S5, $S6)")" 0 "orphan chunk rows" &&
	expect_eq "$(nblobs)" "$before" "blob files (forget deletes none)" &&
	verify_all
'

test_expect_success 'prune --dry-run counts, deletes nothing' '
	before=$(nblobs) &&
	expect_ok prune -r "$REPO" --dry-run --json &&
	json_check "d[\"deleted\"] == $before - $(nref) and d[\"dry_run\"] is True" &&
	expect_eq "$(nblobs)" "$before" "blob files"
'

test_expect_success 'prune killed after its first delete: exit 99, every snapshot verifies' '
	before=$(nblobs) &&
	[ "$before" -gt "$(($(nref) + 1))" ] &&
	CUTSNAP_FAULT=prune-after-delete:1 cs prune -r "$REPO" --force >"$OUT" 2>"$ERR"; rc=$? &&
	expect_eq "$rc" 99 "exit status" &&
	expect_eq "$(nblobs)" "$((before - 1))" "blob files" &&
	verify_all
'

test_expect_success 'prune again finishes: only referenced blobs remain, all verify' '
	expect_ok prune -r "$REPO" --force &&
	grep -Eq "^pruned [0-9]+ blobs? \(.*\), kept $(nref)" "$OUT" &&
	expect_eq "$(nblobs)" "$(nref)" "blob files" &&
	verify_all &&
	expect_ok prune -r "$REPO" --json &&
	json_check "d[\"deleted\"] == 0 and d[\"kept\"] == $(nref)"
'

test_expect_success 'the kept snapshot restores: A=105, B=55' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$S5" -c "$CONF" &&
	expect_eq "$(dump_val "$TEST_DIR/A.data" bal)" 105 "A" &&
	expect_eq "$(dump_val "$TEST_DIR/B.data" bal)" 55 "B" &&
	start_cluster
'

test_expect_success 'a leftover temp file of a killed snapshot is removed by prune' '
	: >"$REPO/blobs/.tmp.99999.deadbeef" &&
	expect_ok prune -r "$REPO" --json &&
	json_check "d[\"temps\"] == 1 and d[\"deleted\"] == 0" &&
	[ ! -e "$REPO/blobs/.tmp.99999.deadbeef" ]
'

test_expect_success 'forget --keep-within 7d keeps recent snapshots, drops an old one' '
	take_snapshot && S7=$SNAP_ID &&
	sql "update snapshots set started_at = \"2020-01-01T00:00:00Z\" where id = $S5" &&
	expect_ok forget -r "$REPO" --keep-within 7d --json &&
	json_check "d[\"forgotten\"] == [$S5] and d[\"kept\"] == [$S6, $S7]" &&
	expect_ok prune -r "$REPO" --force &&
	expect_eq "$(nblobs)" "$(nref)" "blob files" &&
	verify_all
'

test_expect_success 'forget --keep-last 1 --keep-within 1h: the union of the rules' '
	expect_ok forget -r "$REPO" --keep-last 1 --keep-within 1h &&
	expect_eq "$(nsnaps)" 2 "snapshots"
'

test_expect_success 'bad usage: no rule, a bad DURATION or N, no repository: exit 2' '
	expect_error 2 forget -r "$REPO" &&
	err_matches "keep-last" &&
	expect_error 2 forget -r "$REPO" --keep-within 7x &&
	err_matches "DURATION" &&
	expect_error 2 forget -r "$REPO" --keep-within "" &&
	expect_error 2 forget -r "$REPO" --keep-last -1 &&
	expect_error 10 prune -r "$TEST_DIR/norepo" &&
	expect_error 2 prune -r "$REPO" extra
'

test_done
