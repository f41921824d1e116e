#!/bin/bash
# Calendar retention (restic's rules): forget --keep-hourly/daily/weekly/
# monthly/yearly over a history laid out with a fixed clock
# (CUTSNAP_FAULT=clock:T sets the time a snapshot records and forget's
# now), the union of rules with the reasons for each kept snapshot, a
# dry run that changes nothing, and forget --prune: the forgotten
# snapshots' blobs go, every kept snapshot still verifies and restores;
# a prune refused by its guard leaves the forget done.
. "$(dirname "$0")/lib.sh"

NOW=2024-05-01T12:00:00Z
nblobs () { find "$REPO/blobs" -type f -name '[0-9a-f]*' | wc -l; }
nref () { sql "select count(distinct lower(sha256)) from agent_chunks"; }
ids () { sql "select group_concat(id) from (select id from snapshots order by id)"; }

# kept_are RULES... EXPECTED: a dry run of RULES keeps the snapshots at
# the positions EXPECTED ("1 3 10", oldest is 1) and removes the rest.
kept_are () {
	local want=${*: -1} w="" p
	for p in $want; do w="$w${w:+, }${S[$p]}"; done
	CUTSNAP_FAULT=clock:$NOW expect_ok forget -r "$REPO" \
	    "${@:1:$(($# - 1))}" --dry-run --json &&
	json_check "d[\"kept\"] == [$w] and d[\"dry_run\"] is True and len(d[\"kept\"]) + len(d[\"forgotten\"]) == 10"
}

# One snapshot a time T, with balances that differ from the others'.
snap_at () {
	set_balances A=$((100 + $2)) B=$((200 + $2)) &&
	CUTSNAP_FAULT=clock:$1 take_snapshot &&
	S[$2]=$SNAP_ID
}

declare -a S
test_expect_success 'setup: ten snapshots over two years, hours and days' '
	make_config A B &&
	start_cluster &&
	snap_at 2022-06-15T10:00:00Z 1 &&
	snap_at 2023-03-10T10:00:00Z 2 &&
	snap_at 2023-12-31T23:00:00Z 3 &&
	snap_at 2024-01-31T10:00:00Z 4 &&
	snap_at 2024-04-29T10:00:00Z 5 &&
	snap_at 2024-04-30T09:00:00Z 6 &&
	snap_at 2024-05-01T09:10:00Z 7 &&
	snap_at 2024-05-01T09:50:00Z 8 &&
	snap_at 2024-05-01T10:15:00Z 9 &&
	snap_at 2024-05-01T11:05:00Z 10 &&
	expect_eq "$(sql "select started_at from snapshots where id = ${S[3]}")" \
	    2023-12-31T23:00:00Z "the recorded time"
'

test_expect_success '--keep-hourly: the newest of each of the last N hours' '
	kept_are --keep-hourly 2 "9 10" &&
	kept_are --keep-hourly 3 "8 9 10"
'

test_expect_success '--keep-daily: the newest of each of the last N days' '
	kept_are --keep-daily 3 "5 6 10" &&
	kept_are --keep-daily unlimited "1 2 3 4 5 6 10"
'

test_expect_success '--keep-weekly: ISO weeks (2024-04-29..05-01 is one week)' '
	kept_are --keep-weekly 2 "4 10" &&
	kept_are --keep-weekly 3 "3 4 10"
'

test_expect_success '--keep-monthly and --keep-yearly' '
	kept_are --keep-monthly 3 "4 6 10" &&
	kept_are --keep-monthly unlimited "1 2 3 4 6 10" &&
	kept_are --keep-yearly 2 "3 10" &&
	kept_are --keep-yearly 5 "1 3 10"
'

test_expect_success 'combined rules are a union; --keep-within uses the clock' '
	kept_are --keep-last 1 --keep-daily 2 --keep-monthly 2 --keep-yearly 3 "1 3 6 10" &&
	kept_are --keep-within 2h --keep-yearly 2 "3 9 10"
'

test_expect_success 'the reasons name every rule that keeps a snapshot' '
	CUTSNAP_FAULT=clock:$NOW expect_ok forget -r "$REPO" --keep-last 1 \
	    --keep-daily 2 --keep-monthly 2 --keep-yearly 3 --dry-run --json &&
	json_check "[(s[\"id\"], s[\"started\"], s[\"reasons\"]) for s in d[\"keep\"]] == [
	    (${S[1]}, \"2022-06-15T10:00:00Z\", [\"yearly snapshot\"]),
	    (${S[3]}, \"2023-12-31T23:00:00Z\", [\"yearly snapshot\"]),
	    (${S[6]}, \"2024-04-30T09:00:00Z\", [\"daily snapshot\", \"monthly snapshot\"]),
	    (${S[10]}, \"2024-05-01T11:05:00Z\", [\"last snapshot\", \"daily snapshot\", \"monthly snapshot\", \"yearly snapshot\"])]" &&
	json_check "[s[\"id\"] for s in d[\"remove\"]] == [${S[2]}, ${S[4]}, ${S[5]}, ${S[7]}, ${S[8]}, ${S[9]}] and all(s[\"reasons\"] == [] for s in d[\"remove\"])" &&
	CUTSNAP_FAULT=clock:$NOW expect_ok forget -r "$REPO" --keep-daily 2 --keep-within 2h --dry-run &&
	grep -Eq "^keep 3 snapshots:$" "$OUT" &&
	grep -Eq "^${S[10]} +2024-05-01T11:05:00Z +complete +within 2h, daily snapshot$" "$OUT" &&
	grep -Eq "^remove 7 snapshots:$" "$OUT" &&
	tail -n 1 "$OUT" | grep -qx "would forget 7 snapshots, kept 3"
'

test_expect_success 'the dry runs changed nothing, --prune --dry-run included' '
	before=$(nblobs) &&
	CUTSNAP_FAULT=clock:$NOW expect_ok forget -r "$REPO" --keep-last 1 \
	    --keep-daily 2 --keep-monthly 2 --keep-yearly 3 --prune --dry-run --json &&
	PREDICTED=$(json_get "d[\"prune\"][\"deleted\"]") &&
	[ "$PREDICTED" -gt 0 ] &&
	expect_eq "$(sql "select count(*) from snapshots")" 10 "snapshots" &&
	expect_eq "$(nblobs)" "$before" "blob files"
'

test_expect_success 'forget --prune: forgotten blobs go, the kept ones verify' '
	before=$(nblobs) &&
	CUTSNAP_FAULT=clock:$NOW expect_ok forget -r "$REPO" --keep-last 1 \
	    --keep-daily 2 --keep-monthly 2 --keep-yearly 3 --prune --force --json &&
	json_check "d[\"forgotten\"] == [${S[2]}, ${S[4]}, ${S[5]}, ${S[7]}, ${S[8]}, ${S[9]}] and d[\"prune\"][\"deleted\"] == $PREDICTED" &&
	expect_eq "$(ids)" "${S[1]},${S[3]},${S[6]},${S[10]}" "manifest" &&
	expect_eq "$(nblobs)" "$((before - PREDICTED))" "blob files" &&
	expect_eq "$(nblobs)" "$(nref)" "only referenced blobs left" &&
	for i in 1 3 6 10; do
		expect_ok verify -r "$REPO" "${S[$i]}" || return 1
	done
'

test_expect_success 'the oldest kept snapshot restores its balances: A=101 B=201' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "${S[1]}" -c "$CONF" &&
	expect_eq "$(dump_val "$TEST_DIR/A.data" bal)" 101 "A" &&
	expect_eq "$(dump_val "$TEST_DIR/B.data" bal)" 201 "B"
'

test_expect_success 'forget --prune whose prune would delete most blobs: the forget stays done, exit 1' '
	CUTSNAP_FAULT=clock:$NOW expect_ok forget -r "$REPO" --keep-last 1 --prune --dry-run --json &&
	cp "$OUT" "$TEST_DIR/dry.json" &&
	json_check "d[\"prune\"][\"deleted\"] * 2 > d[\"prune\"][\"deleted\"] + d[\"prune\"][\"kept\"]" &&
	before=$(nblobs) &&
	CUTSNAP_FAULT=clock:$NOW expect_error 1 forget -r "$REPO" --keep-last 1 --prune &&
	err_matches "prune would delete [0-9]+ of [0-9]+ blobs" &&
	grep -qx "forgot 3 snapshots, kept 1" "$OUT" &&
	expect_eq "$(ids)" "${S[10]}" "manifest" &&
	expect_eq "$(nblobs)" "$before" "blob files" &&
	expect_ok prune -r "$REPO" --force &&
	expect_eq "$(nblobs)" "$(nref)" "only referenced blobs left" &&
	expect_ok verify -r "$REPO" "${S[10]}"
'


test_expect_success 'bad counts and --prune over s3:// are usage errors (exit 2)' '
	expect_error 2 forget -r "$REPO" --keep-daily -1 &&
	err_matches "keep-daily" &&
	expect_error 2 forget -r "$REPO" --keep-weekly x &&
	expect_error 2 forget -r "$REPO" --keep-daily 0 &&
	err_matches "give a rule" &&
	expect_error 2 forget -r s3://bucket/prefix --keep-daily 1 --prune &&
	err_matches "forget --prune needs a directory repository" &&
	expect_eq "$(ids)" "${S[10]}" "manifest"
'

test_done
