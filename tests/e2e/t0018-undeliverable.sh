#!/bin/bash
# A transfer whose credit cannot be applied at the destination (the key
# holds text, or the sum would overflow int64): the receiver consumes it as
# a dead letter, and the operator retries it once the key is fixed --
# without restarting anything; the channel and the snapshots must not stay
# blocked.
. "$(dirname "$0")/lib.sh"

# undeliverable KEY FIXVALUE EXPECT: B's KEY cannot take +5; transfer 5 from
# A to it; then put B KEY FIXVALUE and expect EXPECT there.
undeliverable () {
	local a0
	a0=$(bal A) &&
	cs transfer -c "$CONF" A:bal "B:$1" 5 >"$OUT" 2>"$ERR"; RC=$?
	case $RC in
	1)
		say "transfer refused: $(cat "$ERR")"
		err_is_one_line &&
		expect_eq "$(bal A)" "$a0" "A after a refused transfer"
		return
		;;
	0) ;;
	*) say "transfer exit $RC"; show_out; return 1 ;;
	esac
	expect_eq "$(bal A)" $((a0 - 5)) "A debited" &&
	# A later transfer on the same channel, to a good key.
	expect_ok transfer -c "$CONF" A:bal B:bal 7 &&
	expect_ok put -c "$CONF" B "$1" "$2" &&
	expect_ok deadletter -c "$CONF" list B --json &&
	seq=$(json_get "[x[\"seq\"] for x in d[\"agents\"][0][\"dead_letters\"] if x[\"key\"] == \"$1\"][0]") &&
	expect_ok deadletter -c "$CONF" retry B A "$seq" &&
	wait_for 5 eval "[ \"\$(cs get -c \"$CONF\" B $1)\" = $3 ]" ||
	    { say "B $1 = $(cs get -c "$CONF" B "$1") after the fix"; return 1; }
}

test_expect_success 'setup: A=100, B=50, B has a text key' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok put -c "$CONF" B word hello
'

test_expect_success 'transfer to a text key: a dead letter, retried once the key is fixed' '
	undeliverable word 0 5
'

test_expect_success 'the channel A->B carries later transfers again' '
	wait_for 5 bal_is B 57 || { say "B bal is $(bal B), expected 57"; false; }
'

test_expect_success 'a snapshot completes and verifies after the fix' '
	take_snapshot --initiator A --timeout 3 &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'transfer that would overflow the destination: a dead letter, retried after a fix' '
	expect_ok put -c "$CONF" B big 9223372036854775805 &&
	undeliverable big 100 105
'

# word and big were reset to 0 and 100 by the fixes: 150 + 0 + 100.
test_expect_success 'money is conserved: A + B bal + word + big' '
	wait_for 5 eval "[ \$((\$(bal A) + \$(bal B) + \$(cs get -c \"$CONF\" B word) + \$(cs get -c \"$CONF\" B big))) = 250 ]" ||
	    { say "A=$(bal A) B=$(bal B) word=$(cs get -c "$CONF" B word) big=$(cs get -c "$CONF" B big)"; false; }
'

test_expect_success 'snapshots still complete' '
	take_snapshot --initiator B --timeout 3 &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_done
