#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A snapshot that aborts removes the blobs it wrote that nothing refers
# to: after a timeout (the agents gave up while it was paused before its
# commit), a SIGTERM before its commit, a SIGTERM in the middle of its
# copy and a failed write, the repository holds exactly the blobs and
# bytes it held before, no temp file, and the snapshot says (--json
# "removed") how many blobs and bytes it removed. After kill -9 nothing
# can clean up: prune removes those blobs and temp files.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=65536
FAULTFS=${FAULTFS:-$_lib_dir/../../build/faultfs.so}
PAUSE=$TEST_DIR/pause

# The blob files of the repository (64 hex digits under blobs/xx/), their
# count and their bytes.
blobs () { find "$REPO/blobs" -type f -regextype posix-extended -regex '.*/[0-9a-f]{64}'; }
blob_count () { blobs | wc -l; }
blob_bytes () { blobs | xargs -r stat -c %s | awk '{ s += $1 } END { print s + 0 }'; }
temps () { find "$REPO/blobs" -name '.tmp.*' | wc -l; }
has_temps () { [ "$(temps)" -gt 0 ]; }

# remember: the repository's blobs now, to be found again after an abort.
remember () { N0=$(blob_count); B0=$(blob_bytes); }
back_to_before () {
	expect_eq "$(blob_count)" "$N0" "blobs after the abort" &&
	expect_eq "$(blob_bytes)" "$B0" "blob bytes after the abort" &&
	expect_eq "$(temps)" 0 "temp files after the abort"
}

# new_data KIB: that many random KiB more in agent A, so the next
# snapshot has new chunks to copy.
K=0
new_data () {
	K=$((K + 1))
	head -c $(($1 * 1024)) /dev/urandom >"rand$K" &&
	cs put -c "$CONF" A "k$K" - <"rand$K" >/dev/null
}

# paused_snapshot ARGS...: a background snapshot (--json) that stops
# before its commit, its blobs stored (CUTSNAP_FAULT coord-commit-pause);
# NEW is how many blobs it wrote, NEWB their bytes.
paused_snapshot () {
	touch "$PAUSE" && rm -f "$PAUSE.reached" &&
	CUTSNAP_FAULT=coord-commit-pause:$PAUSE snapshot_bg --json "$@" &&
	wait_for 60 test -e "$PAUSE.reached" &&
	NEW=$(($(blob_count) - N0)) && NEWB=$(($(blob_bytes) - B0)) &&
	{ [ "$NEW" -gt 0 ] || { say "the paused snapshot wrote no blob"; false; }; }
}

# The background snapshot failed (exit 1) with its JSON on stdout.
snapshot_failed () {
	! snapshot_wait 2>/dev/null && expect_eq "$SNAP_RC" 1 "exit status" &&
	json_check 'd["status"] == "aborted"' "$TEST_DIR/.snap.out"
}

removed_is () {
	json_check "d['removed']['blobs'] == $1 and d['removed']['bytes'] == $2 \
	    and d['removed']['left_blobs'] == 0" "$TEST_DIR/.snap.out"
}

test_expect_success 'setup: A holds 3 MiB of random bytes, snapshot 1' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	new_data 3072 &&
	take_snapshot && expect_eq "$SNAP_ID" 1 "first id" &&
	at_least 40 "blobs of snapshot 1" $(blobs)
'

test_expect_success 'timeout: the agents give up a paused snapshot; its blobs go' '
	remember && new_data 512 &&
	paused_snapshot --timeout 1 &&
	wait_for 60 agents_idle &&
	rm -f "$PAUSE" &&
	snapshot_failed &&
	grep -q "gave up the snapshot" "$TEST_DIR/.snap.err" &&
	grep -q "removed the $NEW blobs ($NEWB bytes) it wrote" "$TEST_DIR/.snap.err" &&
	removed_is "$NEW" "$NEWB" &&
	back_to_before &&
	expect_eq "$(snap_status "$SNAP_ID")" aborted "manifest status" &&
	expect_ok verify -r "$REPO" 1
'

test_expect_success 'SIGTERM before the commit: its blobs go' '
	remember && new_data 512 &&
	paused_snapshot --timeout 60 &&
	kill -TERM "$(cutsnap_pid "$SNAP_PID")" &&
	snapshot_failed &&
	grep -q "interrupted" "$TEST_DIR/.snap.err" &&
	removed_is "$NEW" "$NEWB" &&
	back_to_before &&
	expect_eq "$(snap_status "$SNAP_ID")" aborted "manifest status" &&
	expect_ok verify -r "$REPO" 1
'

test_expect_success 'SIGTERM in the middle of a paced copy: it stops at once, no temp file stays' '
	remember && new_data 2048 &&
	snapshot_bg --json --max-rate 256K &&
	wait_for 60 has_temps &&
	T0=$SECONDS &&
	kill -TERM "$(cutsnap_pid "$SNAP_PID")" &&
	snapshot_failed &&
	{ [ $((SECONDS - T0)) -le 3 ] || { say "took $((SECONDS - T0)) s to stop"; false; }; } &&
	grep -q "interrupted" "$TEST_DIR/.snap.err" &&
	removed_is 0 0 &&
	back_to_before &&
	expect_eq "$(snap_status "$SNAP_ID")" aborted "manifest status"
'

test_expect_success 'a failed rename: the blobs renamed before it go, said after the id' '
	remember && new_data 512 &&
	timeout -k 5 60 env FAULTFS_OP=rename FAULTFS_N=3 LD_PRELOAD="$FAULTFS" \
	    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
	    "$CUTSNAP" snapshot -c "$CONF" -r "$REPO" --json >"$OUT" 2>"$ERR";
	expect_eq "$?" 1 "exit status" &&
	err_is_one_line && err_matches "rename" &&
	json_check "d[\"status\"] == \"aborted\" and d[\"removed\"][\"blobs\"] >= 1" &&
	err_matches "^cutsnap: snapshot: snapshot [0-9]+ aborted: .*rename.*; removed the [0-9]+ blobs" &&
	back_to_before &&
	expect_ok verify -r "$REPO" 1
'

test_expect_success 'kill -9 mid-copy and before the commit: prune removes what they left' '
	take_snapshot && GOOD=$SNAP_ID &&
	remember && new_data 1024 &&
	snapshot_bg --max-rate 256K &&
	wait_for 60 has_temps &&
	kill -KILL "$(cutsnap_pid "$SNAP_PID")" &&
	! snapshot_wait 2>/dev/null &&
	TMPS=$(temps) &&
	paused_snapshot --timeout 60 &&
	kill -KILL "$(cutsnap_pid "$SNAP_PID")" &&
	! snapshot_wait 2>/dev/null &&
	expect_eq "$(blob_count)" $((N0 + NEW)) "blobs left by kill -9" &&
	expect_ok prune -r "$REPO" --json &&
	json_check "d[\"deleted\"] == $NEW and d[\"bytes\"] == $NEWB and d[\"temps\"] == $TMPS and d[\"temps\"] >= 1" &&
	back_to_before &&
	expect_ok verify -r "$REPO" 1 &&
	expect_ok verify -r "$REPO" "$GOOD" &&
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d].count(\"complete\") == 2 and \"running\" not in [s[\"status\"] for s in d]"
'

test_done
