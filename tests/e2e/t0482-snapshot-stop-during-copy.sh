#!/bin/bash
# SIGTERM ends a snapshot promptly even while it copies a large data file
# under --max-rate (a step the coordinator cannot interrupt): it exits 1
# with one line within a few seconds, and the snapshot it leaves is
# recorded as aborted when the repository is next opened for writing.
. "$(dirname "$0")/lib.sh"

now_ms () { echo $(($(date +%s%N) / 1000000)); }
all_reported () { grep -q "reported (2 of 2)" "$TEST_DIR/.snap.err"; }

test_expect_success 'setup: A with 600 KB of values, B' '
	make_config A B &&
	start_cluster &&
	put_random A 200
'

test_expect_success 'SIGTERM during a copy paced at 32K/s: exit 1 within 6 s, one line' '
	snapshot_bg --max-rate 32K -v &&
	wait_for 30 all_reported &&
	p=$(cutsnap_pid "$SNAP_PID") &&
	t0=$(now_ms) &&
	kill -TERM "$p" &&
	{ wait "$SNAP_PID"; rc=$?; } ;
	ms=$(($(now_ms) - t0)) &&
	say "exit $rc, $ms ms after SIGTERM" &&
	cat "$TEST_DIR/.snap.err" >&2 &&
	expect_eq "$rc" 1 "exit status" &&
	[ "$ms" -lt 6000 ] &&
	tail -n 1 "$TEST_DIR/.snap.err" | grep -q "^cutsnap: snapshot: interrupted"
'

test_expect_success 'the next snapshot completes and the interrupted one is aborted' '
	take_snapshot &&
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d] == [\"aborted\", \"complete\"]"
'

test_done
