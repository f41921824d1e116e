#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Application messages in a snapshot: one already in the receiver's inbox
# is in its recorded data file; one held in flight on the channel at the
# cut is recorded with the channel. verify accepts them (they carry no
# credit); restore puts both in the inbox exactly once, also when run
# twice, and the channel carries on from the cut. An agent restored alone
# stays fenced: its sends are refused.
. "$(dirname "$0")/lib.sh"

CS_WIRE=$(cs --version | sed -n 's/.*wire protocol \([0-9]*\).*/\1/p')
export CS_WIRE

tx () {
	local a=$1
	shift
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/$a.sock" "$@" >"$OUT" 2>"$ERR"
}

ok () { json_check 'd["code"] == 0'; }

got () {
	json_check "d[\"code\"] == 0 and d[\"from\"] == \"$1\" and d[\"seq\"] == $2 and d[\"payload\"] == \"$3\""
}

empty () { tx "$1" recv 0 && json_check 'd["code"] == 5'; }

# inbox_is_cut: B's inbox holds the two messages of the cut, once each,
# in order; they are consumed, and the inbox is empty then.
inbox_is_cut () {
	tx B recv 10000 && got A 1 in-inbox &&
	tx B txn consume A 1 && ok &&
	tx B recv 10000 && got A 2 in-flight &&
	tx B txn put seen 2 consume A 2 && ok &&
	empty B
}

test_expect_success 'setup: A<->B, a message in the inbox of B' '
	[ -n "$CS_WIRE" ] &&
	make_config A B &&
	expect_ok init -r "$REPO" &&
	start_cluster &&
	tx A txn put n 1 send B in-inbox && ok &&
	tx B recv 10000 && got A 1 in-inbox
'

test_expect_success 'a snapshot with a message held in flight on A>B' '
	expect_ok channel -c "$CONF" hold A B &&
	tx A txn put n 2 send B in-flight && ok &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	tx B recv 10000 && got A 1 in-inbox
'

test_expect_success 'the snapshot records the message in flight; verify is ok' '
	expect_ok show -r "$REPO" "$SNAP_ID" --json &&
	json_check "sum(1 for c in d[\"channels\"] for m in c.get(\"messages\", [])) == 1" ||
	{ show_out; false; } &&
	expect_ok verify -r "$REPO" "$SNAP_ID" --json
'

test_expect_success 'after the cut: both consumed and more sent live' '
	tx B txn consume A 1 consume A 2 && ok &&
	tx A txn put n 3 send B after-cut && ok &&
	tx B recv 10000 && got A 3 after-cut &&
	stop_cluster
'

test_expect_success 'restore: the inbox holds the two messages of the cut, once each' '
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	expect_eq "$(cs get -c "$CONF" A n)" 2 "A:n" &&
	inbox_is_cut
'

test_expect_success 'the channel carries on from the cut: the next message is seq 3' '
	tx A txn send B next && ok &&
	tx B recv 10000 && got A 3 next &&
	tx B txn consume A 3 && ok &&
	stop_cluster
'

test_expect_success 'restore run twice gives the same inbox' '
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	cp B.data B.once &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	cmp B.data B.once &&
	start_cluster &&
	inbox_is_cut
'

test_expect_success 'a 64 KiB message in flight at a cut is restored whole' '
	expect_ok channel -c "$CONF" hold A B &&
	tx A txn sendn B 65536 && ok &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	tx B recv 10000 &&
	json_check "d[\"seq\"] == 3 and d[\"payload\"] == \"x\" * 65536" &&
	tx B txn consume A 3 && ok &&
	empty B &&
	stop_cluster
'

test_expect_success 'A restored alone while B moved on: fenced, its sends refused' '
	start_cluster &&
	tx A txn send B late && ok &&
	tx B recv 10000 && got A 4 late &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" --agent A &&
	start_cluster &&
	s=$(stat -c %s A.data) &&
	tx A txn put z 1 send B refused &&
	json_check "d[\"code\"] == 1 and \"agent A is fenced\" in d[\"message\"] and d[\"message\"].endswith(\"nothing was done\")" &&
	expect_eq "$(stat -c %s A.data)" "$s" "A.data size" &&
	expect_exit 1 get -c "$CONF" A z &&
	stop_cluster
'

test_done
