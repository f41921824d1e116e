#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A transaction's send and consume ops are checked for form before
# anything else: an agent that is not a channel peer, a payload above the
# 16 MiB cap or a truncated op is refused by name (REPLY_BADREQ, one
# line) and changes nothing. Neither op is carried out yet: a well-formed
# one is refused too, and the transaction's other writes are not applied.
. "$(dirname "$0")/lib.sh"

CS_WIRE=$(cs --version | sed -n 's/.*wire protocol \([0-9]*\).*/\1/p')
export CS_WIRE
CAP=16777216

# tx NAME CMD ARGS...: the helper against agent NAME, its JSON in $OUT.
tx () {
	local a=$1
	shift
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/$a.sock" "$@" >"$OUT" 2>"$ERR"
}

# refused WHAT: the last reply is BADREQ, one line, containing WHAT.
refused () {
	json_check "d[\"code\"] == 2 and \"\\n\" not in d[\"message\"]" &&
	json_check "\"$1\" in d[\"message\"] and d[\"message\"].endswith(\"nothing was done\")"
}

size_of () { stat -c %s "$1.data"; }

test_expect_success 'setup: a one-way channel A>B, C unconnected' '
	[ -n "$CS_WIRE" ] &&
	CHANNELS="A>B" make_config A B C &&
	start_cluster &&
	expect_ok put -c "$CONF" A k before
'

test_expect_success 'send to an unknown agent, to itself or without a channel: refused by name' '
	s=$(size_of A) &&
	tx A txn put k after send Z hi && refused "op 1: send names unknown agent Z" &&
	tx A txn send A hi && refused "op 0: send: no channel A->A" &&
	tx A txn send C hi && refused "op 0: send: no channel A->C" &&
	tx B txn send A hi && refused "op 0: send: no channel B->A" &&
	expect_eq "$(cs get -c "$CONF" A k)" before "A:k" &&
	expect_eq "$(size_of A)" "$s" "A.data size"
'

test_expect_success 'a payload above the cap is refused with the cap; one at the cap only as not yet supported' '
	s=$(size_of A) &&
	tx A txn put k after sendn B $((CAP + 1)) &&
	refused "op 1: send payload is $((CAP + 1)) bytes, at most $CAP" &&
	tx A txn put k after sendn B $CAP &&
	refused "op 1: send is not supported by agent A yet" &&
	expect_eq "$(cs get -c "$CONF" A k)" before "A:k" &&
	expect_eq "$(size_of A)" "$s" "A.data size"
'

test_expect_success 'consume names a channel into this agent' '
	s=$(size_of B) &&
	tx B txn consume Z 1 && refused "op 0: consume names unknown agent Z" &&
	tx B txn consume C 1 && refused "op 0: consume: no channel C->B" &&
	tx A txn consume B 1 && refused "op 0: consume: no channel B->A" &&
	tx B txn put k x consume A 1 &&
	refused "op 1: consume is not supported by agent B yet" &&
	expect_exit 1 get -c "$CONF" B k &&
	expect_eq "$(size_of B)" "$s" "B.data size"
'

test_expect_success 'a truncated send or consume is malformed, and the agent serves on' '
	tx A txn kind 13 && refused "op 0 (send) is truncated" &&
	tx B txn kind 14 && refused "op 0 (consume) is truncated" &&
	expect_eq "$(cs get -c "$CONF" A k)" before "A:k"
'

test_expect_success 'stop' '
	stop_cluster
'

test_done
