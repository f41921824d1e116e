#!/bin/bash
# Verified means restorable. A cut records B:KEY unusable for a credit
# (text, or a value the credit would push past int64) while that credit is
# in flight; a later fix lets the live B apply it. verify must replay the
# recorded messages as restore will, pass, and note the dead letter the
# replay makes; restore must use the same rule and succeed, keeping the
# dead letter in B's file; the restored cluster resolves it.
. "$(dirname "$0")/lib.sh"

# cut_with_inflight KEY BAD FIX AMOUNT: B:KEY = BAD at the cut, AMOUNT in
# flight to it on A->B; B:KEY = FIX before the message arrives live.
cut_with_inflight () {
	expect_ok put -c "$CONF" B "$1" "$2" &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal "B:$1" "$4" &&
	snapshot_bg --initiator B --timeout 30 &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok put -c "$CONF" B "$1" "$3" &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	expect_eq "$(msg_count "$SNAP_ID" A B)" 1 "messages on A->B" &&
	wait_for 10 eval "[ \"\$(cs get -c \"$CONF\" B $1)\" = $(($3 + $4)) ]"
}

test_expect_success 'setup: A=1000, B=0' '
	make_config A B &&
	start_cluster &&
	set_balances A=1000 B=0
'

test_expect_success 'cut 1: B:str = hello while 5 for B:str is in flight; live B applies it after str=0' '
	cut_with_inflight str hello 0 5 &&
	ID1=$SNAP_ID &&
	expect_eq "$(cs get -c "$CONF" B str)" 5 "live B str"
'

test_expect_success 'verify passes and notes the dead letter the replay makes' '
	expect_ok verify -r "$REPO" "$ID1" &&
	grep -Eq "^note: snapshot $ID1: channel A->B: message seq 1 becomes a dead letter at B on replay: cannot add 5 to key .str. \(not an integer\)$" "$OUT" &&
	grep -q "^snapshot $ID1: ok .*1 dead letter on replay" "$OUT" || { cat "$OUT"; false; }
'

test_expect_success 'verify --json: ok, no problems, one note' '
	expect_ok verify -r "$REPO" "$ID1" --json &&
	json_check "d[\"ok\"] is True and d[\"problems\"] == [] and len(d[\"notes\"]) == 1 and \"dead letter\" in d[\"notes\"][0]"
'

test_expect_success 'cut 2: B:big near INT64_MAX while 100 for it is in flight' '
	cut_with_inflight big 9223372036854775800 0 100 &&
	ID2=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$ID2" --json &&
	json_check "d[\"ok\"] is True and len(d[\"notes\"]) == 1 and \"integer overflow\" in d[\"notes\"][0]"
'

test_expect_success 'a snapshot without such credits verifies with no notes' '
	take_snapshot --initiator A --timeout 30 &&
	expect_ok verify -r "$REPO" "$SNAP_ID" --json &&
	json_check "d[\"ok\"] is True and d[\"notes\"] == []"
'

test_expect_success 'restore of cut 1 succeeds; B keeps str=hello and a dead letter' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID1" -c "$CONF" &&
	grep -q "^note: .*becomes a dead letter at B" "$OUT" &&
	expect_eq "$(dump_val B.data str)" hello "restored B str" &&
	expect_ok dump B.data --json &&
	json_check "[[x[\"src\"], x[\"seq\"], x[\"key\"], x[\"amount\"], x[\"state\"]] for x in d[\"dead_letters\"]] == [[\"A\", 1, \"str\", 5, \"open\"]] and d[\"applied\"] == {\"A\": 1}"
'

test_expect_success 'restore of cut 1 again: byte-identical files' '
	cp B.data B.first &&
	expect_ok restore -r "$REPO" "$ID1" -c "$CONF" --json &&
	json_check "d[\"ok\"] is True and len(d[\"notes\"]) == 1" &&
	cmp B.data B.first
'

test_expect_success 'the restored cluster shows the dead letter and resolves it' '
	start_cluster &&
	expect_ok status -c "$CONF" --json &&
	json_check "[[x[\"channel\"], x[\"seq\"], x[\"key\"], x[\"amount\"]] for a in d if a[\"agent\"] == \"B\" for x in a[\"dead_letters\"]] == [[\"A->B\", 1, \"str\", 5]]" &&
	expect_ok deadletter -c "$CONF" refund B A 1 &&
	wait_bal A 1000 &&
	expect_eq "$(cs get -c "$CONF" B str)" hello "B str after the refund"
'

test_expect_success 'restore of cut 2 succeeds with an overflow dead letter' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID2" -c "$CONF" &&
	expect_eq "$(dump_val B.data big)" 9223372036854775800 "restored B big" &&
	expect_ok dump B.data --json &&
	json_check "[[x[\"key\"], x[\"amount\"], x[\"reason\"]] for x in d[\"dead_letters\"] if x[\"state\"] == \"open\"] == [[\"big\", 100, \"integer overflow\"]]"
'

test_done
