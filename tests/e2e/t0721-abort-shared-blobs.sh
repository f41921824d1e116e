#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Dedup and concurrency meet an aborted snapshot: a blob it wrote that a
# snapshot committed meanwhile refers to is kept (that snapshot verifies),
# while the blobs only it wrote go; and while another snapshot that
# reuses its blobs is still running, an aborted one removes nothing (it
# says they are left for prune): the other commits and verifies, and
# prune then removes only what no snapshot refers to.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=65536

blobs () { find "$REPO/blobs" -type f -regextype posix-extended -regex '.*/[0-9a-f]{64}'; }
blob_count () { blobs | wc -l; }
# Blob names the manifest refers to.
referenced () { sql "select count(distinct lower(sha256)) from agent_chunks"; }
# Every blob of snapshot ID exists.
all_blobs_of () {
	local a p n=0
	for a in A B; do
		for p in $(chunk_paths "$1" "$a"); do
			[ -f "$p" ] || { say "snapshot $1: $p is missing"; return 1; }
			n=$((n + 1))
		done
	done
	at_least 40 "blobs of snapshot $1" $(seq 1 $n)
}

K=0
new_data () {
	K=$((K + 1))
	head -c $(($1 * 1024)) /dev/urandom >"rand$K" &&
	cs put -c "$CONF" A "k$K" - <"rand$K" >/dev/null
}

# paused TAG PAUSEFILE ARGS...: a background snapshot (--json) that stops
# before its commit, its blobs stored, until PAUSEFILE is removed.
paused () {
	local tag=$1 p=$2
	shift 2
	touch "$p" && rm -f "$p.reached" &&
	CUTSNAP_FAULT=coord-commit-pause:$p snapshot_bg_as "$tag" -r "$REPO" --json "$@" &&
	wait_for 60 test -e "$p.reached"
}

test_expect_success 'setup: A holds 3 MiB of random bytes, snapshot 1' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	new_data 3072 &&
	take_snapshot && expect_eq "$SNAP_ID" 1 "first id"
'

test_expect_success 'X writes its blobs and pauses; Y reuses them and commits; X is stopped: the shared blobs stay' '
	N0=$(blob_count) &&
	new_data 512 &&
	paused X "$TEST_DIR/px" --timeout 60 &&
	NEW=$(($(blob_count) - N0)) &&
	new_data 100 &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --json &&
	Y=$(json_get "d[\"id\"]") &&
	json_check "d[\"status\"] == \"complete\"" &&
	kill -TERM "$(cutsnap_pid "${SNAP_PIDS[X]}")" &&
	! snapshot_wait_as X 2>/dev/null && expect_eq "$SNAP_RC" 1 "exit of X" &&
	json_check "d[\"status\"] == \"aborted\" and d[\"removed\"][\"blobs\"] >= 1 and d[\"removed\"][\"kept\"] >= 1 and d[\"removed\"][\"blobs\"] + d[\"removed\"][\"kept\"] == $NEW" "$TEST_DIR/.snap-X.out" &&
	grep -q "kept those a committed snapshot shares" "$TEST_DIR/.snap-X.err" &&
	all_blobs_of "$Y" &&
	expect_ok verify -r "$REPO" "$Y" &&
	expect_ok verify -r "$REPO" 1 &&
	expect_eq "$(blob_count)" "$(referenced)" "blobs against blobs referenced"
'

test_expect_success 'X aborts while Y, which reuses its blobs, still runs: nothing is removed, Y commits and verifies' '
	N0=$(blob_count) &&
	new_data 512 &&
	paused X "$TEST_DIR/px" --timeout 60 &&
	NEW=$(($(blob_count) - N0)) &&
	new_data 100 &&
	paused Y "$TEST_DIR/py" --timeout 60 &&
	NY=$(blob_count) &&
	kill -TERM "$(cutsnap_pid "${SNAP_PIDS[X]}")" &&
	! snapshot_wait_as X 2>/dev/null && expect_eq "$SNAP_RC" 1 "exit of X" &&
	json_check "d[\"removed\"][\"blobs\"] == 0 and d[\"removed\"][\"left_blobs\"] == $NEW" "$TEST_DIR/.snap-X.out" &&
	grep -q "left for prune" "$TEST_DIR/.snap-X.err" &&
	expect_eq "$(blob_count)" "$NY" "blobs after X aborted" &&
	rm -f "$TEST_DIR/py" &&
	snapshot_wait_as Y &&
	Y=$(json_get "d[\"id\"]" "$TEST_DIR/.snap-Y.out") &&
	all_blobs_of "$Y" &&
	expect_ok verify -r "$REPO" "$Y" &&
	expect_ok prune -r "$REPO" --json &&
	json_check "d[\"deleted\"] >= 1" &&
	expect_eq "$(blob_count)" "$(referenced)" "blobs against blobs referenced after prune" &&
	expect_ok verify -r "$REPO" "$Y" &&
	expect_ok verify -r "$REPO" 1
'

test_done
