#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# transfer's debit on the sender, decided with one look-up of the key: a
# refusal (too little, a balance so low that the debit would leave int64,
# a text value) names the balance, changes nothing and appends nothing;
# the balances written by a debit and by a credit are exact decimals at
# the ends of int64.
. "$(dirname "$0")/lib.sh"

# a_records: A's record count, from status --json.
a_records () { status_get "[a[\"records\"] for a in d if a[\"agent\"] == \"A\"][0]"; }

test_expect_success 'setup: A and B' '
	make_config A B &&
	start_cluster &&
	set_balances A=5 B=0 &&
	expect_ok put -c "$CONF" A low -9223372036854775807 &&
	expect_ok put -c "$CONF" A txt hello &&
	expect_ok put -c "$CONF" B big 9223372036854775800 &&
	expect_ok put -c "$CONF" B neg -9223372036854775800 &&
	expect_ok put -c "$CONF" A rich 9223372036854775807
'

test_expect_success 'more than the balance: exit 1, the balance named, nothing changed or appended' '
	n=$(a_records) &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 10 &&
	expect_eq "$(cat "$ERR")" "cutsnap: transfer: insufficient funds: A:bal is 5, transfer needs 10" "error" &&
	expect_eq "$(bal A)" 5 "A bal" &&
	expect_eq "$(bal B)" 0 "B bal" &&
	expect_eq "$(a_records)" "$n" "A records"
'

test_expect_success 'a debit that would leave int64: refused as insufficient, with the balance' '
	n=$(a_records) &&
	expect_error 1 transfer -c "$CONF" A:low B:bal 5 &&
	expect_eq "$(cat "$ERR")" "cutsnap: transfer: insufficient funds: A:low is -9223372036854775807, transfer needs 5" "error" &&
	expect_eq "$(cs get -c "$CONF" A low)" -9223372036854775807 "A low" &&
	expect_eq "$(a_records)" "$n" "A records"
'

test_expect_success 'a text value: refused, the key named' '
	n=$(a_records) &&
	expect_error 1 transfer -c "$CONF" A:txt B:bal 1 &&
	expect_eq "$(cat "$ERR")" "cutsnap: transfer: A:txt: value of key '\''txt'\'' is not an integer" "error" &&
	expect_eq "$(cs get -c "$CONF" A txt)" hello "A txt" &&
	expect_eq "$(a_records)" "$n" "A records"
'

test_expect_success 'exactly the balance: A prints and keeps 0, B is credited' '
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_eq "$(cat "$OUT")" 0 "printed" &&
	expect_eq "$(bal A)" 0 "A bal" &&
	wait_for 10 total_is 5 &&
	expect_eq "$(bal B)" 5 "B bal"
'

test_expect_success 'balances at the ends of int64, debited and credited' '
	expect_ok transfer -c "$CONF" A:rich B:big 7 &&
	expect_eq "$(cat "$OUT")" 9223372036854775800 "printed" &&
	expect_ok transfer -c "$CONF" A:rich B:neg 9223372036854775800 &&
	expect_eq "$(cat "$OUT")" 0 "printed" &&
	wait_for 10 eval "[ \"\$(cs get -c \"\$CONF\" B neg)\" = 0 ]" &&
	expect_eq "$(cs get -c "$CONF" B big)" 9223372036854775807 "B big" &&
	expect_eq "$(cs get -c "$CONF" A rich)" 0 "A rich" &&
	expect_ok put -c "$CONF" A rich 10 &&
	expect_ok put -c "$CONF" B neg -9223372036854775798 &&
	expect_ok transfer -c "$CONF" A:rich B:neg 1 &&
	expect_eq "$(cat "$OUT")" 9 "printed" &&
	wait_for 10 eval "[ \"\$(cs get -c \"\$CONF\" B neg)\" = -9223372036854775797 ]"
'

test_expect_success 'after a restart the same balances come back from the files' '
	stop_cluster &&
	start_cluster &&
	expect_eq "$(bal A)" 0 "A bal" &&
	expect_eq "$(bal B)" 5 "B bal" &&
	expect_eq "$(cs get -c "$CONF" B big)" 9223372036854775807 "B big" &&
	expect_eq "$(cs get -c "$CONF" B neg)" -9223372036854775797 "B neg" &&
	expect_eq "$(cs get -c "$CONF" A rich)" 9 "A rich"
'

test_done
