#!/bin/bash
# --retry-lock DURATION: a command that meets a locked repository waits
# for the lock instead of failing, and runs once it is released; when the
# lock outlasts DURATION it exits 11 after about that long. A bad
# DURATION is a usage error.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: a snapshot in REPO' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot
'

test_expect_success 'ls and prune wait for a lock that is released, then succeed' '
	hold_exclusive || return 1
	# Both start while the lock is held (the "&" ends each list).
	"$CUTSNAP" ls --json -r "$REPO" --retry-lock 60s >ls.out 2>ls.err &
	LS=$!
	"$CUTSNAP" prune -r "$REPO" --retry-lock=1m >prune.out 2>prune.err &
	PRUNE=$!
	BG_PIDS="$BG_PIDS $LS $PRUNE"
	# The lock is live (a command without the option fails at once)
	# and both are still waiting for it.
	expect_error 11 ls -r "$REPO" &&
	kill -0 "$LS" && kill -0 "$PRUNE" &&
	kill "$LOCKER" && { wait "$LOCKER" 2>/dev/null; true; } &&
	wait_for 30 pid_gone "$LS" &&
	wait_for 30 pid_gone "$PRUNE" &&
	wait "$LS" && wait "$PRUNE" &&
	json_check "len(d) == 1 and d[0][\"status\"] == \"complete\"" ls.out &&
	grep -q "^pruned 0 blobs" prune.out
'

test_expect_success 'a lock that outlasts DURATION: exit 11 after about DURATION' '
	hold_exclusive &&
	start=$(date +%s%N) &&
	expect_error 11 verify -r "$REPO" --retry-lock 2s &&
	err_matches "locked exclusively by host=elsewhere pid=$LOCKER" &&
	ms=$((($(date +%s%N) - start) / 1000000)) &&
	{ [ "$ms" -ge 1900 ] || { say "gave up after ${ms} ms"; false; }; } &&
	expect_error 11 snapshot -c "$CONF" -r "$REPO" -q --retry-lock 1s &&
	kill "$LOCKER" && { wait "$LOCKER" 2>/dev/null; true; }
'

test_expect_success 'a bad DURATION or none: exit 2' '
	expect_error 2 ls -r "$REPO" --retry-lock 5x &&
	err_matches "invalid DURATION" &&
	expect_error 2 ls -r "$REPO" --retry-lock &&
	err_matches "retry-lock needs DURATION"
'

test_done
