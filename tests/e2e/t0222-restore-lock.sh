#!/bin/bash
# Restore holds the lock of every data file it writes for its whole run,
# also of one that does not exist yet (it creates it empty to lock it): an
# agent started in the middle of a restore fails on the lock instead of
# creating the file and writing to it underneath the restore.
. "$(dirname "$0")/lib.sh"

# restore_held: a restore in the background, paused (test hook) once it
# holds its locks, until the file gate is removed.
restore_held () {
	: >gate &&
	CUTSNAP_FAULT=restore-hold-while:$TEST_DIR/gate \
	    cs restore -r "$REPO" "$ID" -c "$CONF" "$@" \
	    >"$TEST_DIR/.rst.out" 2>"$TEST_DIR/.rst.err" &
	RST_PID=$!
	BG_PIDS="$BG_PIDS $RST_PID"
}

# restore_finish: open the gate; the background restore exits 0.
restore_finish () {
	rm -f gate
	wait "$RST_PID"
	RC=$?
	[ "$RC" -eq 0 ] && return 0
	say "background restore exited $RC"; cat "$TEST_DIR/.rst.err" >&2
	return 1
}

# is_locked FILE: a process holds a flock on FILE (as an agent or restore
# does), read from /proc/locks without taking the lock ourselves.
is_locked () {
	local ino
	ino=$(stat -c %i "$1" 2>/dev/null) || return 1
	awk -v ino="$ino" '$2 == "FLOCK" { n = split($6, f, ":");
	    if (f[n] == ino) found = 1 } END { exit !found }' /proc/locks
}

# agent_refused NAME: "cutsnap agent" for NAME exits at once with status 1
# and says its data file is locked (not 124: it did not run on).
agent_refused () {
	timeout -k 2 10 "$CUTSNAP" agent -c "$CONF" --name "$1" \
	    >"$OUT" 2>"$ERR"
	RC=$?
	expect_eq "$RC" 1 "exit status of agent $1" || { show_out; return 1; }
	err_matches "locked"
}

test_expect_success 'setup: A=90, B=60 in a snapshot; stop' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	wait_bal B 60 &&
	take_snapshot &&
	ID=$SNAP_ID &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	wait_bal B 65 &&
	stop_cluster
'

test_expect_success 'a missing data file is created and locked before restore writes' '
	rm B.data &&
	restore_held &&
	wait_for 15 is_locked B.data &&
	expect_eq "$(stat -c %s B.data)" 0 "size of the placeholder" &&
	agent_refused B &&
	expect_eq "$(stat -c %s B.data)" 0 "size while restore holds it" &&
	restore_finish &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B restored"
'

test_expect_success 'an existing data file: an agent started meanwhile fails the same way' '
	restore_held --agent A &&
	wait_for 15 is_locked A.data &&
	agent_refused A &&
	restore_finish &&
	expect_eq "$(dump_val A.data bal)" 90 "A restored"
'

test_expect_success 'the restored cluster starts and connects: one history' '
	start_cluster &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 61 &&
	expect_ok status -c "$CONF" &&
	expect_eq "$(total)" 150 "total"
'

test_done
