#!/bin/bash
# Dead letters: a credit the receiver cannot apply (its key holds text, or
# the sum would leave int64) is consumed as a dead letter, recorded with
# the applied seq; the channel keeps flowing, snapshots complete, status
# and dump show it, show --sum counts it, and an operator resolves it
# exactly once by retrying it into its key or refunding it to its sender.
. "$(dirname "$0")/lib.sh"

# dl_json AGENT EXPR: status --json, then EXPR about agent AGENT's object
# (bound to a) must hold.
dl_check () {
	expect_ok status -c "$CONF" --json &&
	json_check "[a for a in d if a[\"agent\"] == \"$1\"] and all($2 for a in d if a[\"agent\"] == \"$1\")"
}

# The dead letters of B as listed by deadletter list --all --json.
b_dead () {
	cs deadletter -c "$CONF" list B --all --json >"$TEST_DIR/.dl" &&
	    json_get "$1" "$TEST_DIR/.dl"
}

test_expect_success 'setup: A=100, B=50, B holds a text key and a huge one' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok put -c "$CONF" B word hello &&
	expect_ok put -c "$CONF" B big 9223372036854775800 &&
	expect_ok put -c "$CONF" A acct 100 &&
	expect_ok put -c "$CONF" B acct oops
'

test_expect_success 'a credit to a text key: transfer succeeds, A is debited' '
	expect_ok transfer -c "$CONF" A:bal B:word 5 &&
	expect_eq "$(cat "$OUT")" 95 "A bal printed" &&
	expect_eq "$(bal A)" 95 "A bal"
'

test_expect_success 'the channel keeps flowing: a later transfer to a good key arrives' '
	expect_ok transfer -c "$CONF" A:bal B:bal 7 &&
	wait_bal B 57 &&
	expect_eq "$(cs get -c "$CONF" B word)" hello "B word untouched"
'

test_expect_success 'status: exit 0, B lists the dead letter (channel, seq, key, amount, reason)' '
	dl_check B "len(a[\"dead_letters\"]) == 1 and a[\"dead_letters_total\"] == 1" &&
	json_check "[x for a in d if a[\"agent\"] == \"B\" for x in a[\"dead_letters\"]] == [{\"channel\": \"A->B\", \"src\": \"A\", \"seq\": 1, \"key\": \"word\", \"amount\": 5, \"reason\": \"not an integer\", \"from\": \"bal\", \"state\": \"open\"}]" &&
	json_check "[a[\"dead_letters\"] for a in d if a[\"agent\"] == \"A\"] == [[]]" &&
	json_check "[x[\"applied\"] for a in d if a[\"agent\"] == \"B\" for x in a[\"in\"]] == [2]"
'

test_expect_success 'status text names the dead letter on the agent line and below it' '
	expect_ok status -c "$CONF" &&
	grep -Eq "^B .*dead_letters=1" "$OUT" &&
	grep -Eq "dead letter A->B +seq=1 +key=word +amount=5" "$OUT" || { cat "$OUT"; false; }
'

test_expect_success 'one log line for the dead letter, no reconnect loop' '
	expect_eq "$(grep -c "dead letter" run/B.log)" 1 "dead letter lines in B.log" &&
	expect_eq "$(grep -c "channel A>B: peer reconnected\|channel A>B down" run/B.log)" 0 "reconnects of A->B"
'

test_expect_success 'a credit that would overflow int64 is a dead letter too' '
	expect_ok transfer -c "$CONF" A:bal B:big 10 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 58 &&
	expect_eq "$(cs get -c "$CONF" B big)" 9223372036854775800 "B big" &&
	expect_eq "$(b_dead "[[x[\"seq\"], x[\"reason\"], x[\"amount\"]] for x in d[\"agents\"][0][\"dead_letters\"]]")" \
	    "[[1,\"not an integer\",5],[3,\"integer overflow\",10]]" "B dead letters"
'

test_expect_success 'a dead letter on acct, then acct is fixed to 0: it stays open' '
	expect_ok transfer -c "$CONF" A:acct B:acct 30 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 59 &&
	expect_ok put -c "$CONF" B acct 0 &&
	expect_eq "$(b_dead "[x[\"seq\"] for x in d[\"agents\"][0][\"dead_letters\"] if x[\"state\"] == \"open\"]")" \
	    "[1,3,5]" "open dead letters"
'

test_expect_success 'a snapshot completes and verifies; show --sum counts the open dead letter' '
	take_snapshot --initiator A --timeout 20 &&
	DLSNAP=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok show -r "$REPO" "$SNAP_ID" --sum acct --json &&
	json_check "d[\"sum\"][\"total\"] == 100 and d[\"sum\"][\"dead_letters\"] == 30 and d[\"sum\"][\"agents\"] == {\"A\": 70, \"B\": 0} and d[\"sum\"][\"dead_letters_at\"] == {\"B\": 30}" &&
	json_check "[len(a[\"dead_letters\"]) for a in d[\"agents\"]] == [0, 3]" &&
	expect_ok show -r "$REPO" "$SNAP_ID" --sum acct &&
	grep -q "^acct: A=70 + B=0 + dead letters at B 30 = 100$" "$OUT" || { cat "$OUT"; false; }
'

test_expect_success 'dump shows the dead letters of a data file' '
	expect_ok dump B.data --json &&
	json_check "[[x[\"src\"], x[\"seq\"], x[\"key\"], x[\"state\"]] for x in d[\"dead_letters\"]] == [[\"A\", 1, \"word\", \"open\"], [\"A\", 3, \"big\", \"open\"], [\"A\", 5, \"acct\", \"open\"]]" &&
	expect_ok dump B.data &&
	grep -q "^#dead	A	1	word	5	not an integer	open$" "$OUT"
'

test_expect_success 'retry while the key still holds text: exit 1, one line, nothing changes' '
	expect_error 1 deadletter -c "$CONF" retry B A 1 &&
	err_matches "not an integer" &&
	expect_eq "$(b_dead "d[\"agents\"][0][\"dead_letters\"][0][\"state\"]")" open "state" &&
	expect_eq "$(cs get -c "$CONF" B word)" hello "B word"
'

test_expect_success 'retry after the key is fixed: credited once, a second retry fails' '
	expect_ok put -c "$CONF" B word 0 &&
	expect_ok deadletter -c "$CONF" retry B A 1 &&
	expect_eq "$(cat "$OUT")" 5 "printed value" &&
	expect_eq "$(cs get -c "$CONF" B word)" 5 "B word" &&
	expect_error 1 deadletter -c "$CONF" retry B A 1 &&
	err_matches "already retried" &&
	expect_error 1 deadletter -c "$CONF" refund B A 1 &&
	expect_eq "$(cs get -c "$CONF" B word)" 5 "B word after the second try"
'

test_expect_success 'refund: the credit goes back to A:bal over B->A, exactly once' '
	a0=$(bal A) &&
	expect_ok deadletter -c "$CONF" refund B A 3 &&
	grep -q "refunded as message B->A seq 1" "$OUT" &&
	wait_bal A $((a0 + 10)) &&
	expect_error 1 deadletter -c "$CONF" refund B A 3 &&
	err_matches "already refunded" &&
	expect_eq "$(bal A)" $((a0 + 10)) "A bal after the second refund"
'

test_expect_success 'a refund while B->A is held waits in the channel, then arrives' '
	a0=$(cs get -c "$CONF" A acct) &&
	expect_ok channel -c "$CONF" hold B A &&
	expect_ok deadletter -c "$CONF" refund B A 5 &&
	expect_eq "$(cs get -c "$CONF" A acct)" "$a0" "A acct while held" &&
	expect_eq "$(b_dead "d[\"agents\"][0][\"dead_letters\"][2][\"state\"]")" refunded "state" &&
	expect_ok channel -c "$CONF" release B A &&
	wait_for 10 eval "[ \"\$(cs get -c \"$CONF\" A acct)\" = $((a0 + 30)) ]"
'

test_expect_success 'unknown dead letters and bad arguments' '
	expect_error 1 deadletter -c "$CONF" retry B A 99 &&
	err_matches "no dead letter" &&
	expect_error 2 deadletter -c "$CONF" retry B Z 1 &&
	expect_error 2 deadletter -c "$CONF" retry B A x &&
	expect_error 2 deadletter -c "$CONF" frob B A 1 &&
	expect_error 2 deadletter -c "$CONF" retry B A
'

test_expect_success 'no open dead letters left: status shows none, exit 0' '
	dl_check B "a[\"dead_letters\"] == [] and a[\"dead_letters_total\"] == 0"
'

test_expect_success 'after a restart the dead letters and their states are kept' '
	stop_cluster &&
	start_cluster &&
	expect_eq "$(b_dead "[[x[\"seq\"], x[\"state\"]] for x in d[\"agents\"][0][\"dead_letters\"]]")" \
	    "[[1,\"retried\"],[3,\"refunded\"],[5,\"refunded\"]]" "states"
'

# bal: 150 + 5 moved to word (retried) - 10 + 10 (refunded); acct: 100.
test_expect_success 'money is conserved: bal + word, and acct' '
	expect_eq $(( $(total) + $(cs get -c "$CONF" B word) )) 150 "bal + word" &&
	expect_eq "$(total acct)" 100 "acct"
'

test_expect_success 'restore of the snapshot keeps its open dead letters; the restored cluster resolves them' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$DLSNAP" -c "$CONF" &&
	expect_ok dump B.data --json &&
	json_check "[[x[\"seq\"], x[\"state\"]] for x in d[\"dead_letters\"]] == [[1, \"open\"], [3, \"open\"], [5, \"open\"]]" &&
	start_cluster &&
	expect_ok status -c "$CONF" --json &&
	json_check "[a[\"dead_letters_total\"] for a in d] == [0, 3]" &&
	expect_ok deadletter -c "$CONF" retry B A 5 &&
	expect_eq "$(cs get -c "$CONF" B acct)" 30 "B acct" &&
	expect_eq "$(total acct)" 100 "acct"
'

test_done
