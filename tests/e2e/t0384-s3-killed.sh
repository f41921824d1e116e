#!/bin/bash
# A snapshot into an object store killed with -9 while it uploads its
# blobs: it is never listed (no commit names it), its lease keeps other
# writers out until it expires, a later writer does not publish it from
# the cache it left, and prune deletes its orphan blobs once they are
# older than the grace period, leaving every listed snapshot whole.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

# Many small chunks: the upload takes a while, one object at a time.
export CUTSNAP_CHUNK_SIZE=4096

# shellcheck disable=SC2034 # used inside the test bodies
NB0='' NC0='' ORPH='' REF=''

# kill_mid_upload: start a snapshot, stop it once some of its blobs are in
# the bucket but before its commit, then kill it with -9. Fails (so the
# caller tries again with more data) when the snapshot committed first.
kill_mid_upload () {
	local pid cp n
	CUTSNAP_S3_PARALLEL=1 cs snapshot -c "$CONF" -r "$REPO_URL" >k.out 2>k.err &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	n=0
	while :; do
		[ "$(s3count "$BUCKET" repo/blobs/)" -gt "$NB0" ] && break
		kill -0 "$pid" 2>/dev/null || { say "the snapshot ended before uploading"; return 1; }
		n=$((n + 1))
		[ $n -gt 600 ] && { say "no upload seen"; return 1; }
		sleep 0.05
	done
	cp=$(cutsnap_pid "$pid") || return 1
	kill -STOP "$cp"
	if [ "$(s3count "$BUCKET" repo/commits/)" != "$NC0" ]; then
		kill -CONT "$cp"; wait "$pid"
		say "the snapshot committed before it could be stopped"
		return 1
	fi
	kill -KILL "$cp"
	wait "$pid" 2>/dev/null
	return 0
}

test_expect_success 'a committed snapshot to start from' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	NB0=$(s3count "$BUCKET" repo/blobs/) &&
	NC0=$(s3count "$BUCKET" repo/commits/) &&
	expect_eq "$NC0" 1 "commits"
'

test_expect_success 'a snapshot killed with -9 while it uploads: never listed' '
	ok=0 &&
	for try in 1 2 3; do
		add_data $((try * 6)) || return 1
		if kill_mid_upload; then ok=1; break; fi
		NB0=$(s3count "$BUCKET" repo/blobs/) && NC0=$(s3count "$BUCKET" repo/commits/)
	done &&
	expect_eq "$ok" 1 "caught a snapshot mid-upload" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC0" "commits" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $NC0 and all(s[\"status\"] == \"complete\" for s in d)" &&
	REF=$(newest_refs) &&
	ORPH=$(( $(s3count "$BUCKET" repo/blobs/) - 1 - REF )) &&
	say "referenced $REF, orphans $ORPH" &&
	[ "$ORPH" -gt 0 ]
'

test_expect_success 'its lease keeps writers out until it expires; a later snapshot does not publish it' '
	expect_error 11 prune -r "$REPO_URL" &&
	err_matches "another writer holds" &&
	wait_for 60 cs prune -r "$REPO_URL" --dry-run &&
	expect_ok prune -r "$REPO_URL" --json &&
	json_check "d[\"deleted\"] == 0" &&
	expect_eq "$(( $(s3count "$BUCKET" repo/blobs/) - 1 - $(newest_refs) ))" "$ORPH" "orphans kept within the grace period"
'

test_expect_success 'prune --grace 0 deletes exactly the orphans; every listed snapshot verifies' '
	expect_ok prune -r "$REPO_URL" --grace 0 --force --json &&
	json_check "d[\"deleted\"] == $ORPH" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$((REF + 1))" "blobs left (with the identity)" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_expect_success 'the next snapshot from the same cache commits and verifies' '
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((NC0 + 1)) and all(s[\"status\"] == \"complete\" for s in d)" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]" &&
	expect_eq "$(( $(s3count "$BUCKET" repo/blobs/) - 1 - $(newest_refs) ))" 0 "unreferenced blobs"
'

test_done
