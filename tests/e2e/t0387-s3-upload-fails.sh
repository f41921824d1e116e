#!/bin/bash
# A snapshot into an object store whose blob uploads are refused while it
# runs (a bucket policy denying them): the refusal stops the local copy
# early, the snapshot fails with exit 1 and the server's reason, and
# nothing is committed. Once uploads are allowed again the next snapshot
# commits everything; one killed with -9 while its copy and its uploads
# run is never listed, its orphans are pruned, and the last snapshot
# restores the live data from the bucket alone.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CUTSNAP_CHUNK_SIZE=4096

# shellcheck disable=SC2034 # used inside the test bodies
NC0='' NB0='' C0='' C1='' ORPH='' S3=''

# cache_blobs: how many blobs the writer's cache holds.
cache_blobs () {
	find "$CUTSNAP_CACHE_DIR" -path '*/blobs/??/*' -type f -regextype egrep \
	    -regex '.*/[0-9a-f]{64}' | wc -l
}

# set_policy FILE: the bucket's policy (PutBucketPolicy answers 204;
# "policy=", as curl's signing spells the empty parameter).
set_policy () {
	local st
	st=$(curl -s --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
	    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
	    -H "x-amz-content-sha256: $(sha256sum "$1" | cut -d" " -f1)" -T "$1" \
	    -o policy.out -w "%{http_code}" "$AWS_ENDPOINT_URL/$BUCKET?policy=") &&
	case $st in 200|204) ;; *) say "PutBucketPolicy: HTTP $st: $(cat policy.out)"; return 1 ;; esac
}

# kill_once_uploading: a snapshot (one upload at a time) killed with -9
# once the first of its blobs is in the bucket: its copy, held back by
# the upload queue, is still running then.
kill_once_uploading () {
	local pid cp n=0
	CUTSNAP_S3_PARALLEL=1 cs snapshot -c "$CONF" -r "$REPO_URL" >k.out 2>k.err &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	while [ "$(s3count "$BUCKET" repo/blobs/)" -le "$NB0" ]; do
		kill -0 "$pid" 2>/dev/null || { say "the snapshot ended before uploading"; return 1; }
		n=$((n + 1))
		[ $n -le 600 ] || { say "no upload seen"; return 1; }
		sleep 0.05
	done
	cp=$(cutsnap_pid "$pid") || return 1
	kill -KILL "$cp"
	wait "$pid" 2>/dev/null
	return 0
}

test_expect_success 'a committed snapshot to start from' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	add_data 1 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	NC0=$(s3count "$BUCKET" repo/commits/) &&
	expect_eq "$NC0" 1 "commits"
'

test_expect_success 'blob uploads refused mid-snapshot: exit 1 with the reason, the copy stopped, nothing committed' '
	printf "%s" "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::$BUCKET/repo/blobs/*\"}]}" >policy.json &&
	set_policy policy.json &&
	add_data 4 &&
	NB0=$(s3count "$BUCKET" repo/blobs/) &&
	C0=$(cache_blobs) &&
	cs snapshot -c "$CONF" -r "$REPO_URL" >"$OUT" 2>"$ERR"
	rc=$? && C1=$(cache_blobs) &&
	expect_eq "$rc" 1 "exit status" &&
	err_is_one_line &&
	err_matches "put blobs/.*access denied" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC0" "commits" &&
	expect_eq "$(s3count "$BUCKET" repo/manifests/)" "$NC0" "manifests" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$NB0" "blobs" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $NC0"
'

test_expect_success 'uploads allowed again: the next snapshot commits; the failed one had copied fewer blobs than it needed' '
	st=$(s3req DELETE "$BUCKET?policy=" | tail -n 1) &&
	case $st in 200|204) ;; *) say "DeleteBucketPolicy: HTTP $st"; return 1 ;; esac &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	NEW=$(sed -n "s/^s3: uploaded \([0-9]*\) blobs.*/\1/p" "$ERR") &&
	say "new blobs $NEW; the failed snapshot left $((C1 - C0)) in the cache" &&
	[ "$NEW" -gt 100 ] &&
	[ $((C1 - C0)) -lt "$NEW" ] &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$((NC0 + 1))" "commits"
'

test_expect_success 'a snapshot killed with -9 while it copies and uploads: never listed, its orphans pruned' '
	NC0=$(s3count "$BUCKET" repo/commits/) &&
	NB0=$(s3count "$BUCKET" repo/blobs/) &&
	add_data 4 &&
	kill_once_uploading &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC0" "commits" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $NC0 and all(s[\"status\"] == \"complete\" for s in d)" &&
	ORPH=$(( $(s3count "$BUCKET" repo/blobs/) - 1 - $(newest_refs) )) &&
	say "orphans $ORPH" &&
	[ "$ORPH" -gt 0 ] &&
	wait_for 60 cs prune -r "$REPO_URL" --dry-run &&
	expect_ok prune -r "$REPO_URL" --grace 0 --force --json &&
	json_check "d[\"deleted\"] == $ORPH" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$NB0" "blobs left"
'

test_expect_success 'the next snapshot commits and restores the live data from the bucket alone' '
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	S3=$(_parse_id "$OUT") && [ -n "$S3" ] &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"] and d[\"snapshot\"] == $S3" &&
	mkdir fresh &&
	sed "s#^run_dir = .*#run_dir = run#" "$CONF" >fresh/cluster.ini &&
	(
		cd fresh &&
		CUTSNAP_CACHE_DIR=$TEST_DIR/nocache cs restore -c cluster.ini -r "$REPO_URL" "$S3"
	) >"$OUT" 2>"$ERR" &&
	n=0 &&
	for a in A B; do
		keys_of "$TEST_DIR/$a.data" >live.$a &&
		keys_of "fresh/$a.data" >fresh.$a &&
		cmp live.$a fresh.$a &&
		n=$((n + $(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))))" live.$a))) || return 1
	done &&
	say "keys compared: $n" &&
	[ "$n" -ge 20 ]
'

test_done
