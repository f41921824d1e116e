#!/bin/bash
# An agent's peak memory with 16 MiB values (the largest a put takes):
# a put holds the value once, in the frame it arrived in (its record is
# written to the file from there, not copied into the staging buffer);
# a compaction copies a large value a piece at a time; the recovery on
# start checks a large record a window at a time, never the whole record
# in memory. Before, the puts peaked at about 65 MiB above the agent at
# rest (a compaction held a value twice) and the start at 16 MiB above.
# The values come back exact after the compaction and the restart, and a
# snapshot of them verifies.
. "$(dirname "$0")/lib.sh"

MIB=1048576
N=6
# hwm: agent A's peak resident size, KiB (VmHWM of /proc/PID/status).
hwm () { agent_kib A VmHWM; }

test_expect_success 'setup: compaction from 32 MiB; the agent at rest' '
	make_config A B &&
	sed -i "/^\[cluster\]/a compact_min_size = 32M" "$CONF" &&
	start_cluster &&
	set_balances A=100 B=50 &&
	REST=$(hwm) && [ -n "$REST" ] &&
	say "at rest: $REST KiB" &&
	head -c $((N * 16 * MIB)) /dev/urandom >values
'

# Six new keys leave the file all live, so the agent skips its automatic
# rewrite (t0375); cutsnap compact asks for one.
test_expect_success 'six puts of 16 MiB and a compaction: peak at most one value (+8 MiB) above rest' '
	n=0 &&
	for i in $(seq 0 $((N - 1))); do
		dd if=values bs=16M skip=$i count=1 status=none of=v$i &&
		cs put -c "$CONF" A "v$i" - <v$i &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" $N "values put" &&
	expect_ok compact -c "$CONF" A &&
	grep -q "compaction: " run/A.log &&
	kib_below "$(hwm)" $((REST + 24 * 1024)) "peak after the puts and the compaction"
'

test_expect_success 'restart: the recovery of the file stays within 8 MiB of rest' '
	stop_cluster && start_cluster &&
	size=$(stat -c %s A.data) &&
	[ "$size" -gt $((N * 16 * MIB)) ] &&
	kib_below "$(hwm)" $((REST + 8 * 1024)) "peak after the start on a $size-byte file"
'

test_expect_success 'gets: every value exact after the compaction and the restart; peak one value above rest' '
	n=0 &&
	for i in $(seq 0 $((N - 1))); do
		cs get -c "$CONF" A "v$i" >got &&
		head -c $((16 * MIB)) got | cmp - v$i &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" $N "values checked" &&
	expect_eq "$(bal A)" 100 "A bal" &&
	kib_below "$(hwm)" $((REST + 24 * 1024)) "peak after the gets"
'

test_expect_success 'a snapshot of the values verifies; the peak stays one value above rest' '
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	kib_below "$(hwm)" $((REST + 24 * 1024)) "peak after the snapshot"
'

test_done
