#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# An agent keeps an index in memory and large values on disk: with 192 MiB
# of 4 MiB values its peak RSS stays far below the file's size, while it
# recovers the file on start, serves gets of those values and snapshots.
. "$(dirname "$0")/lib.sh"

NVALS=48		# x 4 MiB = 192 MiB
LIMIT_KIB=65536		# 64 MiB

# peak_kib AGENT: VmHWM of the agent's process.
peak_kib () {
	awk '/^VmHWM:/ { print $2 }' "/proc/$(agent_pid "$1")/status"
}

# Under AddressSanitizer the peak measures its shadow memory and the
# quarantine of freed blocks, not the agent's design: there the bound is
# reported but not asserted (the plain build asserts it).
case $(basename "$CUTSNAP") in
*-asan) SANITIZED=1 ;;
*) SANITIZED=0 ;;
esac

peak_below_limit () {
	local k
	k=$(peak_kib "$1") || return 1
	say "agent $1 VmHWM: $k KiB"
	[ -n "$k" ] || return 1
	[ $SANITIZED = 1 ] || [ "$k" -lt $LIMIT_KIB ]
}

test_expect_success "setup: A holds $NVALS values of 4 MiB, distinct contents" '
	make_config A B &&
	start_cluster &&
	head -c $((NVALS * 4 * 1048576)) /dev/urandom >vals &&
	for i in $(seq 0 $((NVALS - 1))); do
		dd if=vals bs=4M skip=$i count=1 status=none |
		    cs put -c "$CONF" A "k$i" - >/dev/null || return 1
	done &&
	set_balances A=100 B=50 &&
	[ "$(stat -c %s A.data)" -gt $((NVALS * 4 * 1048576)) ]
'

test_expect_success 'restarted on the 192 MiB file, A peaks below 64 MiB' '
	stop_cluster &&
	start_cluster &&
	expect_eq "$(bal A)" 100 "A bal after recovery" &&
	peak_below_limit A
'

test_expect_success 'gets of large values return the exact bytes; peak stays below 64 MiB' '
	for i in 0 17 $((NVALS - 1)); do
		cs get -c "$CONF" A "k$i" >got || return 1
		# get prints the value and a newline.
		head -c 4194304 got >got.v &&
		dd if=vals bs=4M skip=$i count=1 status=none >want.v &&
		cmp got.v want.v || return 1
	done &&
	peak_below_limit A
'

test_expect_success 'a value overwritten after the restart reads back new; the old stays in the snapshot' '
	head -c 4194304 /dev/urandom >new.v &&
	cs put -c "$CONF" A k5 - <new.v >/dev/null &&
	cs get -c "$CONF" A k5 | head -c 4194304 >got.v &&
	cmp got.v new.v
'

test_expect_success 'a snapshot under transfers verifies; peak stays below 64 MiB' '
	cs transfer -c "$CONF" A:bal B:bal 10 >/dev/null &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(total)" 150 "total" &&
	peak_below_limit A
'

test_done
