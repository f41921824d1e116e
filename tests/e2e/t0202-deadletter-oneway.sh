#!/bin/bash
# A dead letter on a channel without a reverse channel: refund fails with a
# clear error and changes nothing; retry still works once the key is fixed.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: only A>B, B holds text in word' '
	CHANNELS="A>B" make_config A B &&
	start_cluster &&
	set_balances A=100 B=0 &&
	expect_ok put -c "$CONF" B word hello &&
	expect_ok transfer -c "$CONF" A:bal B:word 20 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 1
'

test_expect_success 'refund without a channel B->A: exit 1, one line, still open' '
	expect_error 1 deadletter -c "$CONF" refund B A 1 &&
	err_matches "no channel B->A" &&
	expect_ok deadletter -c "$CONF" list B --json &&
	json_check "[[x[\"seq\"], x[\"state\"]] for x in d[\"agents\"][0][\"dead_letters\"]] == [[1, \"open\"]]" &&
	expect_eq "$(bal A)" 79 "A bal"
'

test_expect_success 'retry once the key is fixed' '
	expect_ok put -c "$CONF" B word 0 &&
	expect_ok deadletter -c "$CONF" retry B A 1 &&
	expect_eq "$(cs get -c "$CONF" B word)" 20 "B word" &&
	expect_ok deadletter -c "$CONF" list --json &&
	json_check "[a[\"dead_letters\"] for a in d[\"agents\"]] == [[], []]"
'

test_expect_success 'a dead letter of a channel the config lacks: bad usage' '
	expect_error 2 deadletter -c "$CONF" retry A B 1 &&
	err_matches "no channel B->A"
'

test_done
