#!/bin/bash
# show: the recorded cut in detail (files, watermarks, in-flight messages
# with their amounts) and the conserved total with --sum; ls: the aligned
# table with duration, stored bytes (as --json says) and the abort reason.
# Text and JSON parsed back.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: the seed case, 10 in flight on A->B when B records' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok put -c "$CONF" A note hello &&
	snapshot_in_flight 10 &&
	SEED=$SNAP_ID
'

test_expect_success 'show --sum bal: A=90 + B=50 + in flight A->B 10 = 150' '
	expect_ok show -r "$REPO" "$SEED" --sum bal &&
	grep -qx "bal: A=90 + B=50 + in flight A->B 10 = 150" "$OUT"
'

test_expect_success 'show: each file with its size, sha256 and watermarks' '
	for n in A B; do
		size=$(sql "select size from agents where snapshot_id = $SEED and name = \"$n\"") &&
		sha=$(sql "select case typeof(sha256) when \"blob\" then lower(hex(sha256)) else lower(sha256) end from agents where snapshot_id = $SEED and name = \"$n\"") &&
		grep -Eq "^agent $n +size $size +sha256 $sha " "$OUT" || return 1
	done &&
	grep -Eq "^agent A .* sent B=1 +applied -$" "$OUT" &&
	grep -Eq "^agent B .* sent - +applied -$" "$OUT"
'

test_expect_success 'show: the channel with its recorded message and amount' '
	grep -qx "channel A->B  sent 1  applied 0  1 message: seq 1 add bal 10" "$OUT" &&
	head -n 1 "$OUT" | grep -Eq "^snapshot $SEED +complete .* [0-9]+ bytes \([0-9]+ stored\)  1 in-flight message$"
'

test_expect_success 'show --json: the same, parsed back' '
	expect_ok show -r "$REPO" "$SEED" --sum bal --json &&
	json_check "d[\"snapshot\"][\"id\"] == $SEED and d[\"snapshot\"][\"status\"] == \"complete\"" &&
	json_check "[a[\"agent\"] for a in d[\"agents\"]] == [\"A\", \"B\"]" &&
	json_check "d[\"agents\"][0][\"sent\"] == {\"B\": 1} and d[\"agents\"][1][\"applied\"] == {}" &&
	json_check "d[\"agents\"][0][\"keys\"] == 2 and len(d[\"agents\"][0][\"sha256\"]) == 64" &&
	json_check "d[\"channels\"] == [{\"src\": \"A\", \"dst\": \"B\", \"sent\": 1, \"applied\": 0, \"count\": 1, \"messages\": [{\"seq\": 1, \"op\": \"add\", \"key\": \"bal\", \"amount\": 10}]}]" &&
	json_check "d[\"sum\"] == {\"key\": \"bal\", \"agents\": {\"A\": 90, \"B\": 50}, \"in_flight\": 10, \"dead_letters\": 0, \"dead_letters_at\": {}, \"total\": 150}"
'

test_expect_success 'show without --sum: "sum" is null; the default is the newest' '
	take_snapshot &&
	expect_ok show -r "$REPO" --json &&
	json_check "d[\"sum\"] is None and d[\"snapshot\"][\"id\"] == $SNAP_ID" &&
	json_check "d[\"channels\"][0][\"count\"] == 0"
'

test_expect_success 'show --sum of a key that is not an integer: exit 1, one line' '
	expect_error 1 show -r "$REPO" --sum note &&
	err_matches "note at A is not an integer"
'

test_expect_success 'show of a snapshot that does not exist, bad usage: exit 2' '
	expect_error 2 show -r "$REPO" 999 &&
	expect_error 2 show -r "$REPO" 1 2 &&
	expect_error 2 show -r "$REPO" --sum "" &&
	expect_error 10 show -r "$TEST_DIR/norepo"
'

test_expect_success 'an aborted snapshot: ls shows its reason in the last column' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator B --timeout 1 &&
	ABORTED=$(sql "select max(id) from snapshots") &&
	expect_ok channel -c "$CONF" release A B &&
	take_snapshot
'

test_expect_success 'ls: an aligned table, newest last, with duration and reason' '
	cs ls -r "$REPO" --json >ls.json &&
	seed_stored=$(json_get "[s for s in d if s[\"id\"] == $SEED][0][\"stored_bytes\"]" ls.json) &&
	{ [ "$seed_stored" -gt 0 ] || { say "stored_bytes $seed_stored"; false; }; } &&
	expect_ok ls -r "$REPO" &&
	head -n 1 "$OUT" | grep -Eq "^ID +STARTED +DURATION +STATUS +INITIATOR +AGENTS +BYTES +STORED +MSGS +REASON$" &&
	expect_eq "$(($(wc -l <"$OUT") - 1))" "$(sql "select count(*) from snapshots")" "rows" &&
	grep -Eq "^ *$SEED +[0-9T:Z-]+ +[0-9]+s +complete +B +2 +[0-9]+ +[0-9]+ +1$" "$OUT" &&
	grep -Eq "^ *$ABORTED +[0-9T:Z-]+ +[0-9]+s +aborted +B +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  timed out" "$OUT" &&
	grep -Eq "^ *$SEED +[0-9T:Z-]+ +[0-9]+s +complete +B +2 +[0-9]+ +$seed_stored +1$" "$OUT" &&
	tail -n 1 "$OUT" | grep -Eq "^ *$SNAP_ID .* complete " &&
	awk "NR > 1 { print index(\$0, \"complete\") + index(\$0, \"aborted\") }" "$OUT" | sort -u | wc -l | grep -qx 1
'

test_expect_success 'ls --json: every snapshot, the reason of the aborted one' '
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"id\"] for s in d] == sorted(s[\"id\"] for s in d)" &&
	json_check "[s for s in d if s[\"id\"] == $ABORTED][0][\"status\"] == \"aborted\"" &&
	json_check "\"timed out\" in [s for s in d if s[\"id\"] == $ABORTED][0][\"reason\"]" &&
	json_check "[s for s in d if s[\"id\"] == $SEED][0][\"msgs\"] == 1"
'

test_done
