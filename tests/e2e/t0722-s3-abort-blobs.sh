#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# An aborted snapshot into an object store: its chunk objects went
# straight to the bucket (the local cache never holds a blob), nothing of
# it is committed, and the objects it had already uploaded are orphans
# that prune deletes once past its grace period (--grace 0 here), leaving
# the committed snapshot whole.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CUTSNAP_CHUNK_SIZE=65536
PAUSE=$TEST_DIR/pause

# The blob files of the local cache (64 hex digits under blobs/xx/).
cache_blobs () { find "$CUTSNAP_CACHE_DIR" -path '*/blobs/*' -type f -regextype posix-extended -regex '.*/[0-9a-f]{64}' | wc -l; }

test_expect_success 'setup: a committed snapshot of 1 MiB of random bytes' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	head -c 1048576 /dev/urandom | cs put -c "$CONF" A big - >/dev/null &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	NB0=$(s3count "$BUCKET" repo/blobs/) && NC0=$(s3count "$BUCKET" repo/commits/) &&
	expect_eq "$(cache_blobs)" 0 "blobs in the cache" &&
	at_least 16 "blobs in the bucket" $(seq 1 "$NB0")
'

test_expect_success 'SIGTERM before the commit: nothing in the cache, nothing committed' '
	head -c 524288 /dev/urandom | cs put -c "$CONF" A more - >/dev/null &&
	touch "$PAUSE" &&
	CUTSNAP_FAULT=coord-commit-pause:$PAUSE snapshot_bg_as x -r "$REPO_URL" --json --timeout 60 &&
	wait_for 60 test -e "$PAUSE.reached" &&
	expect_eq "$(cache_blobs)" 0 "blobs in the cache at the pause" &&
	kill -TERM "$(cutsnap_pid "${SNAP_PIDS[x]}")" &&
	! snapshot_wait_as x 2>/dev/null && expect_eq "$SNAP_RC" 1 "exit status" &&
	json_check "d[\"status\"] == \"aborted\"" "$TEST_DIR/.snap-x.out" &&
	expect_eq "$(cache_blobs)" 0 "blobs in the cache" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC0" "commits"
'

test_expect_success 'prune --grace 0 deletes the objects it had uploaded; snapshot 1 verifies' '
	ORPH=$(( $(s3count "$BUCKET" repo/blobs/) - NB0 )) &&
	{ [ "$ORPH" -gt 0 ] || { say "no object was uploaded before the abort"; false; }; } &&
	expect_ok prune -r "$REPO_URL" --grace 0 --json &&
	json_check "d[\"deleted\"] == $ORPH" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$NB0" "blobs in the bucket" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_done
