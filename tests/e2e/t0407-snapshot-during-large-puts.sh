#!/bin/bash
# A snapshot taken while 16 MiB values are being put (each spooled to a
# temporary file as it arrives, then appended from there) and while one
# put is stalled halfway: it verifies, and restored, every value it holds
# is exact, the stalled put's key is not there and the money is
# conserved. The snapshot reads the data file itself, which a spooled
# value enters only whole, as one record.
. "$(dirname "$0")/lib.sh"

# The version byte put_partial.py writes.
CS_WIRE=$(wire_version)
export CS_WIRE

MIB=1048576
N=6
tcs () { timeout 300 "$CUTSNAP" "$@"; }

test_expect_success 'setup: A and B, two 16 MiB values' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	head -c $((16 * MIB)) /dev/urandom >big &&
	head -c $((16 * MIB)) /dev/urandom >keep &&
	cs put -c "$CONF" A keep - <keep &&
	cs put -c "$CONF" B keep - <keep
'

test_expect_success 'a snapshot during large puts and a stalled one verifies' '
	python3 "$_lib_dir/put_partial.py" unix "$TEST_DIR/run/A.sock" \
	    half $((16 * MIB)) $((8 * MIB)) stalled &
	STALL=$!
	BG_PIDS="$BG_PIDS $STALL"
	wait_for 60 test -e stalled || return 1
	( for i in $(seq 1 $N); do
		tcs put -c "$CONF" A "p$i" - <big >/dev/null &&
		echo "$i" >>puts.ok
	done ) &
	LOOP=$!
	BG_PIDS="$BG_PIDS $LOOP"
	wait_for 60 test -s puts.ok &&
	take_snapshot &&
	wait "$LOOP" &&
	expect_eq "$(wc -l <puts.ok)" $N "puts done" &&
	kill -0 "$STALL" &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'restored: its values exact, the stalled key absent, the money conserved' '
	kill -KILL "$STALL" && { wait "$STALL" 2>/dev/null || :; } &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	expect_error 1 get -c "$CONF" A half && err_matches "not found" &&
	n=0 && held=0 &&
	for i in $(seq 1 $N); do
		if tcs get -c "$CONF" A "p$i" >got 2>/dev/null; then
			head -c $((16 * MIB)) got | cmp - big &&
			held=$((held + 1)) || return 1
		fi
		n=$((n + 1))
	done &&
	expect_eq "$n" $N "keys looked at" && [ "$held" -ge 1 ] &&
	say "the snapshot holds $held of the $N values" &&
	tcs get -c "$CONF" A keep | head -c $((16 * MIB)) | cmp - keep &&
	tcs get -c "$CONF" B keep | head -c $((16 * MIB)) | cmp - keep &&
	total_is 150
'

test_done
