#!/bin/bash
# An agent serving 16 MiB values (the largest a put takes) holds each at
# most once while it is in use, and gives the memory back: a get reads
# the value from the data file straight into the reply, and a
# connection's large buffers are freed once empty. Before, a get of a
# 16 MiB value held it three times (peak RSS about 120 MiB).
. "$(dirname "$0")/lib.sh"

MIB=1048576
# hwm / rss: the agent's peak and current resident size, KiB.
hwm () { agent_kib A VmHWM; }
rss () { agent_kib A VmRSS; }

test_expect_success 'setup: four values of 16 MiB (no compaction), agent restarted' '
	make_config A B &&
	sed -i "/^\[cluster\]/a compact_min_size = 1G" "$CONF" &&
	start_cluster &&
	head -c $((64 * MIB)) /dev/urandom >values &&
	n=0 &&
	for i in 0 1 2 3; do
		dd if=values bs=16M skip=$i count=1 status=none of=v$i &&
		cs put -c "$CONF" A "v$i" - <v$i &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 4 "values put" &&
	stop_cluster && start_cluster &&
	REST=$(rss) && [ -n "$REST" ]
'

test_expect_success 'gets of every value: the exact bytes; peak at most one value above rest; memory given back' '
	n=0 &&
	for i in 0 1 2 3 2 1; do
		cs get -c "$CONF" A "v$i" >got &&
		head -c $((16 * MIB)) got | cmp - v$i &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 6 "gets checked" &&
	kib_below "$(hwm)" $((REST + 16 * 1024 + 6 * 1024)) "peak after the gets" &&
	kib_below "$(rss)" $((REST + 4 * 1024)) "resident after the gets"
'

test_expect_success 'a put of a 16 MiB value: memory given back once it is written' '
	cs put -c "$CONF" A v4 - <v0 &&
	cs get -c "$CONF" A v4 >got &&
	head -c $((16 * MIB)) got | cmp - v0 &&
	kib_below "$(rss)" $((REST + 4 * 1024)) "resident after the put"
'

test_done
