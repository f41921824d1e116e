#!/bin/bash
# A prune on an object store fences off a writer whose lease lapsed
# before its commit landed. The writer checked its lease, then its commit
# PUT was slow (CUTSNAP_FAULT=s3-commit-pause holds it there with its
# renewals stopped, as retries would); meanwhile the lease lapsed, a prune
# took it and deleted the blobs no commit referred to, among them old
# ones the writer had chosen to reuse. The prune's fence commit (the
# commit it read, under the next number) makes the writer's commit fail
# instead of committing a snapshot whose blobs are gone; every snapshot
# listed afterwards verifies. Without the fence the writer reported
# success and its snapshot failed verify. A second writer on the same
# host, which gets the lapsed lease too, stops at the cache's lock with a
# message rather than rewriting the cache under the first.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CUTSNAP_S3_LEASE_SECONDS=6
HOLD=$TEST_DIR/hold
# The highest commit number in the bucket.
top_commit () { s3keys "$BUCKET" repo/commits/ | sed 's|.*/0*||' | sort -n | tail -n 1; }
nblobs () { s3keys "$BUCKET" repo/blobs/ | grep -cE '/[0-9a-f]{64}$'; }
lease_expired () {
	s3req GET "$BUCKET/repo/lease" -o lease.txt | tail -n 1 | grep -q '^200$' &&
	[ "$(sed -n 's/^expires //p' lease.txt)" -lt "$(date +%s)" ]
}

test_expect_success 'set-up: a snapshot, then forgotten: its blobs are referenced by no snapshot' '
	make_config A B && start_cluster &&
	set_balances A=100 B=50 && put_random A 6 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	expect_ok forget -r "$REPO_URL" --keep-last 0 --force &&
	[ "$(nblobs)" -gt 0 ]
'

test_expect_success 'a writer reusing those blobs pauses before its commit; its lease lapses' '
	: >"$HOLD" &&
	CUTSNAP_FAULT=s3-commit-pause:$HOLD REPO=$REPO_URL snapshot_bg &&
	wait_for 60 test -e "$HOLD.reached" &&
	wait_for 60 lease_expired
'

test_expect_success 'a second writer on this host gets the lapsed lease but not the cache: it says so and ends' '
	t0=$SECONDS &&
	expect_error 11 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "another writer on this host still uses the cache" &&
	[ $((SECONDS - t0)) -lt 20 ]
'

test_expect_success 'prune takes the lapsed lease, fences with a commit, and deletes the unreferenced blobs' '
	c0=$(top_commit) && [ -n "$c0" ] &&
	expect_ok prune -r "$REPO_URL" --grace 0 --force --json &&
	json_check "d[\"deleted\"] > 0" &&
	expect_eq "$(top_commit)" $((c0 + 1)) "the newest commit after the prune (its fence)"
'

test_expect_success 'the paused writer commits nothing and says why' '
	rm -f "$HOLD" &&
	! snapshot_wait &&
	grep -q "another writer committed" "$TEST_DIR/.snap.err" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "[s for s in d if s[\"status\"] == \"complete\"] == []"
'

test_expect_success 'the next snapshot uploads what it needs and verifies' '
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	id=$(_parse_id "$OUT") && [ -n "$id" ] &&
	expect_ok verify -r "$REPO_URL" "$id" --json &&
	json_check "d[\"ok\"] is True"
'

test_done
