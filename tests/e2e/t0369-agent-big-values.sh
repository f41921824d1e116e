#!/bin/bash
# Values around the agent's large-value threshold (256 KiB: a put at or
# above it is spooled to a temporary file as it arrives, a get's reply
# sent from the data file as the socket drains) and of 16 MiB come back
# byte-identical over a Unix socket and over TCP + TLS; with 16 MiB
# values the agent's peak resident size (VmHWM) stays below 16 MiB. Before,
# a put and a get each held the whole 16 MiB frame (peak about 27 MiB).
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

MIB=1048576
T=262144
SIZES="1 $((T - 1)) $T $((T + 1)) $((16 * MIB))"
hwm () { agent_kib A VmHWM; }

# roundtrip: every size put to A under key sSIZE and got back exact;
# a key's value replaced by a second one of the same size, too.
roundtrip () {
	local n=0 s
	for s in $SIZES; do
		head -c "$s" /dev/urandom >in.$s &&
		cs put -c "$CONF" A "s$s" - <in.$s &&
		cs get -c "$CONF" A "s$s" >got &&
		expect_eq "$(stat -c %s got)" $((s + 1)) "bytes got of $s" &&
		head -c "$s" got | cmp - in.$s &&
		head -c "$s" /dev/urandom >in2.$s &&
		cs put -c "$CONF" A "s$s" - <in2.$s &&
		cs get -c "$CONF" A "s$s" | head -c "$s" | cmp - in2.$s &&
		n=$((n + 1)) || return 1
	done
	expect_eq "$n" 5 "sizes checked" &&
	expect_eq "$(bal A)" 100 "A bal"
}

test_expect_success 'setup: A and B on Unix sockets' '
	make_config A B &&
	sed -i "/^\[cluster\]/a compact_min_size = 1G" "$CONF" &&
	start_cluster &&
	set_balances A=100 B=50
'

test_expect_success 'Unix: 1 byte, 256 KiB - 1, 256 KiB, + 1 and 16 MiB put and got back exact' '
	roundtrip
'

test_expect_success 'Unix: values survive a restart exact (their records recovered)' '
	stop_cluster && start_cluster &&
	n=0 &&
	for s in $SIZES; do
		cs get -c "$CONF" A "s$s" | head -c "$s" | cmp - in2.$s &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 5 "sizes checked after the restart"
'

test_expect_success 'Unix: 8 puts and 4 gets of 16 MiB values: the agent peak stays below 16 MiB' '
	stop_cluster && start_cluster &&
	head -c $((16 * MIB)) /dev/urandom >big &&
	n=0 &&
	for i in 0 1 2 3 4 5 6 7; do
		cs put -c "$CONF" A "m$i" - <big &&
		n=$((n + 1)) || return 1
	done &&
	for i in 0 3 5 7; do
		cs get -c "$CONF" A "m$i" | head -c $((16 * MIB)) | cmp - big &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 12 "puts and gets" &&
	kib_below "$(hwm)" 16384 "peak after 8 puts and 4 gets of 16 MiB"
'

test_expect_success 'Unix: a snapshot of the values verifies' '
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster
'

test_expect_success 'setup: A and B over TCP + TLS on loopback' '
	tls_loopback_ab &&
	set_balances A=100 B=50
'

test_expect_success 'TLS: 1 byte, 256 KiB - 1, 256 KiB, + 1 and 16 MiB put and got back exact' '
	roundtrip
'

test_expect_success 'TLS: 4 puts and 4 gets of 16 MiB values, exact; the peak stays within 8 MiB of the start (a frame is 16)' '
	stop_cluster && start_cluster &&
	REST=$(hwm) && [ -n "$REST" ] &&
	n=0 &&
	for i in 0 1 2 3; do
		cs put -c "$CONF" A "m$i" - <big &&
		cs get -c "$CONF" A "m$i" | head -c $((16 * MIB)) | cmp - big &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 4 "puts and gets" &&
	kib_below "$(hwm)" $((REST + 8 * 1024)) "peak after the TLS puts and gets" &&
	stop_cluster
'

test_done
