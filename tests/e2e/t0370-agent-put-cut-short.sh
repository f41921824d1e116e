#!/bin/bash
# A put of a large value is spooled to a temporary file as its bytes
# arrive, not buffered: a client that sends half of a 16 MiB value and
# stalls does not stall other clients (their puts, gets and transfers
# complete meanwhile), over a Unix socket and over TCP + TLS; killed, it
# leaves nothing (no record, no file, the key not found, a snapshot
# verifies); the half value is not held in memory. An agent killed (SIGKILL) during large puts recovers with the
# money conserved and no partial value; a large put torn at the file's
# end (a crash in its append) is cut by the recovery.
. "$(dirname "$0")/lib.sh"

# The version byte put_partial.py writes.
CS_WIRE=$(wire_version)
export CS_WIRE

. "$_lib_dir/lib-tls.sh"

MIB=1048576
# hangs: a guard against an agent that never answers, not a timing check.
tcs () { timeout 300 "$CUTSNAP" "$@"; }

# stall_put KEY ARGS...: put_partial.py (ARGS: how to connect) sends the
# head of a put of KEY with a 16 MiB value and 8 MiB of it, then stalls;
# STALL its pid, once the 8 MiB are sent.
stall_put () {
	local key=$1
	shift
	rm -f stalled
	python3 "$_lib_dir/put_partial.py" "$@" "$key" $((16 * MIB)) \
	    $((8 * MIB)) stalled &
	STALL=$!
	BG_PIDS="$BG_PIDS $STALL"
	wait_for 60 test -e stalled
}

# others: while a put is stalled, another client's 16 MiB put and get, a
# small put and get and transfers both ways complete, exact.
others () {
	local n=0 i
	tcs put -c "$CONF" A other - <big &&
	tcs get -c "$CONF" A other | head -c $((16 * MIB)) | cmp - big &&
	tcs get -c "$CONF" A keep | head -c $((16 * MIB)) | cmp - keep &&
	tcs put -c "$CONF" A small hello &&
	expect_eq "$(tcs get -c "$CONF" A small)" hello "small" || return 1
	for i in 1 2 3 4; do
		tcs transfer -c "$CONF" A:bal B:bal 5 >/dev/null &&
		tcs transfer -c "$CONF" B:bal A:bal 3 >/dev/null &&
		n=$((n + 1)) || return 1
	done
	expect_eq "$n" 4 "transfer pairs"
}

# cut_short KEY: kill the stalled client; nothing of its put stays.
cut_short () {
	files_settle A.data &&
	size=$(stat -c %s A.data) &&
	kill -KILL "$STALL" && wait "$STALL" 2>/dev/null
	expect_error 1 get -c "$CONF" A "$1" &&
	err_matches "not found" &&
	files_settle A.data &&
	expect_eq "$(stat -c %s A.data)" "$size" "A.data size after the cut" &&
	expect_eq "$(find . -maxdepth 1 -name ".put-*" | wc -l)" 0 "spool files left" &&
	tcs get -c "$CONF" A keep | head -c $((16 * MIB)) | cmp - keep &&
	wait_for 20 total_is 150 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
}

test_expect_success 'setup: A and B on Unix sockets, a 16 MiB value kept' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	head -c $((16 * MIB)) /dev/urandom >big &&
	head -c $((16 * MIB)) /dev/urandom >keep &&
	cs put -c "$CONF" A keep - <keep
'

test_expect_success 'Unix: a put stalled halfway is not in memory and does not block other clients' '
	before=$(agent_kib A VmRSS) &&
	stall_put half unix "$TEST_DIR/run/A.sock" &&
	kib_below "$(agent_kib A VmRSS)" $((before + 4 * 1024)) "resident with 8 MiB of a put in" &&
	others &&
	kill -0 "$STALL"
'

test_expect_success 'Unix: the stalled client killed leaves nothing; a snapshot verifies' '
	cut_short half
'

test_expect_success 'SIGKILL of the agent during large puts and transfers: recovered, conserved, no partial value' '
	stall_put cut unix "$TEST_DIR/run/A.sock" || return 1
	( for i in 1 2 3 4 5 6 7 8; do
		tcs put -c "$CONF" A "p$i" - <big >/dev/null 2>&1 &&
		echo "$i" >>puts.ok
	done ) &
	LOOP=$!
	BG_PIDS="$BG_PIDS $LOOP"
	( while [ ! -e tr.stop ]; do
		tcs transfer -c "$CONF" A:bal B:bal 2 >/dev/null 2>&1 &&
		echo t >>tr.ok
		tcs transfer -c "$CONF" B:bal A:bal 1 >/dev/null 2>&1
	done ) &
	TR=$!
	BG_PIDS="$BG_PIDS $TR"
	wait_for 60 test -s puts.ok &&
	pid=$(agent_pid A) && [ -n "$pid" ] &&
	kill -KILL "$pid" && wait_for 10 pid_gone "$pid" &&
	{ wait "$LOOP" || :; } &&
	kill -0 "$STALL" && kill -KILL "$STALL" &&
	{ wait "$STALL" 2>/dev/null || :; } &&
	start_cluster &&
	touch tr.stop && wait "$TR" && test -s tr.ok &&
	expect_error 1 get -c "$CONF" A cut && err_matches "not found" &&
	n=0 && ok=0 &&
	for i in 1 2 3 4 5 6 7 8; do
		if grep -qx "$i" puts.ok; then
			tcs get -c "$CONF" A "p$i" >got &&
			head -c $((16 * MIB)) got | cmp - big &&
			ok=$((ok + 1)) || return 1
		elif tcs get -c "$CONF" A "p$i" >got 2>/dev/null; then
			head -c $((16 * MIB)) got | cmp - big || return 1
		fi
		n=$((n + 1))
	done &&
	expect_eq "$n" 8 "keys checked" && [ "$ok" -ge 1 ] &&
	tcs get -c "$CONF" A keep | head -c $((16 * MIB)) | cmp - keep &&
	wait_for 20 total_is 150 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'a large put torn at the end of the file is cut on start' '
	tcs put -c "$CONF" A torn - <big &&
	stop_cluster &&
	size=$(stat -c %s A.data) &&
	truncate -s $((size - MIB)) A.data &&
	start_cluster &&
	log_has A "recovery: cut $((16 * MIB + 4 + 4 + 1 + 4 + 4 + 4 - MIB)) torn bytes" &&
	expect_error 1 get -c "$CONF" A torn && err_matches "not found" &&
	expect_eq "$(stat -c %s A.data)" $((size - 16 * MIB - 21)) "A.data size after the cut" &&
	tcs get -c "$CONF" A keep | head -c $((16 * MIB)) | cmp - keep &&
	total_is 150 &&
	stop_cluster
'

test_expect_success 'setup: A and B over TCP + TLS on loopback, a 16 MiB value kept' '
	tls_loopback_ab &&
	set_balances A=100 B=50 &&
	REPO=$TEST_DIR/repo-tls &&
	cs put -c "$CONF" A keep - <keep
'

test_expect_success 'TLS: a put stalled halfway is not in memory and does not block other clients' '
	before=$(agent_kib A VmRSS) &&
	stall_put half tls "127.0.0.1:$PA" "$TEST_DIR/tls" &&
	kib_below "$(agent_kib A VmRSS)" $((before + 4 * 1024)) "resident with 8 MiB of a put in" &&
	others &&
	kill -0 "$STALL"
'

test_expect_success 'TLS: the stalled client killed leaves nothing; a snapshot verifies' '
	cut_short half &&
	stop_cluster
'

test_done
