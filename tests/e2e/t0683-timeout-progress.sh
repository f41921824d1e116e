#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# snapshot --timeout bounds a stall, not the whole run: a paced copy that
# takes several times the timeout (plus the agents' grace) completes,
# since every chunk copied is progress and the coordinator tells the
# agents so; an agent stopped with SIGSTOP still aborts the snapshot
# about the timeout later, and a coordinator that sleeps through its
# timeout is still given up by the agents (t0284).
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=65536

now_ms () { echo $(($(date +%s%N) / 1000000)); }
json_py () { python3 -c 'import json,sys; d=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }
T0=0

test_expect_success 'setup: agent A holds 3 MiB of random bytes' '
	make_config A B &&
	start_cluster &&
	head -c $((3 * 1024 * 1024)) /dev/urandom >rand &&
	cs put -c "$CONF" A big - <rand >/dev/null &&
	set_balances A=100 B=50
'

test_expect_success 'a copy of 6 s at --max-rate 512K with --timeout 1 completes' '
	T0=$(now_ms) &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --timeout 1 --max-rate 512K --json &&
	ms=$(($(now_ms) - T0)) &&
	{ [ "$ms" -ge 4000 ] || { say "the copy took only $ms ms: not longer than timeout and grace"; false; }; } &&
	expect_eq "$(json_py "d[\"status\"]" "$OUT")" complete "snapshot --json" &&
	expect_eq "$(snap_status 1)" complete "manifest status" &&
	expect_ok verify -r "$REPO" 1
'

test_expect_success 'an agent stopped with SIGSTOP: the snapshot aborts after the timeout' '
	pid=$(agent_pid B) &&
	kill -STOP "$pid" &&
	T0=$(now_ms) &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --timeout 2;
	rc=$?; kill -CONT "$pid"; [ $rc = 0 ] &&
	ms=$(($(now_ms) - T0)) &&
	{ [ "$ms" -ge 1900 ] && [ "$ms" -lt 20000 ]; } ||
	    { say "aborted after $ms ms (timeout 2 s)"; false; } &&
	err_matches "B" &&
	expect_eq "$(snap_status 2)" aborted "snapshot 2"
'

test_done
