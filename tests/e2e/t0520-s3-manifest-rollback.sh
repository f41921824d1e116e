#!/bin/bash
# Rollback of a repository on an object store is noticed. The newest
# commit object is pointed back at an older manifest (its key, SHA-256
# and size; what someone with write access to the bucket can do): ls and
# verify still read it but warn, naming both generations; snapshot,
# forget and prune refuse (prune would delete the lost snapshots' blobs)
# and commit nothing. A user with no record of the bucket is warned by
# the commit before the newest; with the newer commits deleted instead,
# this user's record catches it. snapshot --accept-rollback continues
# with an id past every one handed out. A snapshot whose commit upload is
# refused leaves no record ahead of the bucket: no false alarm after it.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

# shellcheck disable=SC2034 # used inside the test bodies
S1='' S3='' G1='' G3=''

# snap [ARGS...]: a snapshot into the bucket that must complete (SNAP_ID).
snap () {
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" "$@" &&
	SNAP_ID=$(_parse_id "$OUT") && [ -n "$SNAP_ID" ]
}
# ckey N: the key of commit N.
ckey () { printf 'repo/commits/%020d' "$1"; }
# cget N FILE: commit N's text into FILE.
cget () { s3req GET "$BUCKET/$(ckey "$1")" -o "$2" | tail -n 1 | grep -q '^200$'; }
# cgen FILE: the generation a commit's text says.
cgen () { sed -n 's/^generation //p' "$1"; }
ncommits () { s3count "$BUCKET" repo/commits/; }

# set_policy FILE: the bucket's policy (as t0387 does).
set_policy () {
	local st
	st=$(curl -s --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
	    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
	    -H "x-amz-content-sha256: $(sha256sum "$1" | cut -d" " -f1)" -T "$1" \
	    -o policy.out -w "%{http_code}" "$AWS_ENDPOINT_URL/$BUCKET?policy=") &&
	case $st in 200|204) ;; *) say "PutBucketPolicy: HTTP $st: $(cat policy.out)"; return 1 ;; esac
}

test_expect_success 'three snapshots: each commit says its manifest generation and highest id' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 && put_random A 4 &&
	snap && S1=$SNAP_ID &&
	put_random B 4 && snap &&
	set_balances A=70 && snap && S3=$SNAP_ID &&
	expect_eq "$(ncommits)" 3 "commits" &&
	cget 1 c1 && cget 2 c2 && cget 3 c3 &&
	G1=$(cgen c1) && G3=$(cgen c3) &&
	[ -n "$G1" ] && [ "$(cgen c2)" -gt "$G1" ] && [ "$G3" -gt "$(cgen c2)" ] &&
	grep -qx "max_snapshot_id $S3" c3 &&
	[ -f "$XDG_STATE_HOME/cutsnap/repos/$(s3req GET "$BUCKET/repo/blobs/.repository-id" | head -n 1)" ]
'

test_expect_success 'the newest commit pointed at the first manifest: ls and verify warn, naming both generations' '
	s3put "$BUCKET/$(ckey 3)" c1 &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "[s[\"id\"] for s in d] == [$S1]" &&
	err_matches "manifest.db is at generation $G1 but generation $G3 was committed" &&
	err_matches "s3://$BUCKET/repo" &&
	expect_ok verify -r "$REPO_URL" "$S1" &&
	err_matches "rolled back or replaced by an older copy"
'

test_expect_success 'snapshot, forget and prune refuse (exit 2) and commit or delete nothing' '
	nblobs=$(s3count "$BUCKET" repo/blobs/) &&
	expect_error 2 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "generation $G1 but generation $G3 was committed.*--accept-rollback" &&
	expect_exit 2 forget -r "$REPO_URL" --keep-last 1 &&
	err_matches "rolled back" &&
	expect_exit 2 prune -r "$REPO_URL" --grace 0 --force &&
	err_matches "rolled back" &&
	expect_eq "$(ncommits)" 3 "commits" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$nblobs" "blobs"
'

test_expect_success 'a user with no record of the bucket: the commit before the newest says it' '
	XDG_STATE_HOME=$TEST_DIR/other expect_ok ls -r "$REPO_URL" &&
	err_matches "generation $G1 but generation $(cgen c2) was committed \(as commits/$(printf %020d 2) says" &&
	XDG_STATE_HOME=$TEST_DIR/other CUTSNAP_CACHE_DIR=$TEST_DIR/cache2 expect_exit 2 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "rolled back"
'

test_expect_success 'the newer commits deleted instead: this user'"'"'s record catches it' '
	s3put "$BUCKET/$(ckey 3)" c3 &&
	expect_ok ls -r "$REPO_URL" &&
	! grep -q "rolled back" "$ERR" &&
	s3del "$BUCKET/$(ckey 3)" && s3del "$BUCKET/$(ckey 2)" &&
	expect_exit 2 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "generation $G1 but generation $G3 was committed \(as this user.s record" &&
	expect_ok ls -r "$REPO_URL" &&
	err_matches "rolled back"
'

test_expect_success 'snapshot --accept-rollback continues past every id handed out; then no warning' '
	snap --accept-rollback &&
	{ [ "$SNAP_ID" -gt "$S3" ] || { say "id $SNAP_ID reused (last was $S3)"; false; }; } &&
	last=$SNAP_ID &&
	expect_ok ls -r "$REPO_URL" --json &&
	! grep -q "rolled back" "$ERR" &&
	json_check "[s[\"id\"] for s in d] == [$S1, $last]" &&
	snap && [ "$SNAP_ID" -gt "$last" ] &&
	! grep -q "rolled back" "$ERR"
'

test_expect_success 'a commit upload refused: the snapshot fails, this user'"'"'s record stays, and the next commands see no rollback' '
	n0=$(ncommits) &&
	rec=$XDG_STATE_HOME/cutsnap/repos/$(s3req GET "$BUCKET/repo/blobs/.repository-id" | head -n 1) &&
	rec0=$(cat "$rec") && [ -n "$rec0" ] &&
	printf "%s" "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::$BUCKET/repo/commits/*\"}]}" >policy.json &&
	set_policy policy.json &&
	set_balances B=40 &&
	expect_error 12 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "put commits/.*access denied" &&
	expect_eq "$(ncommits)" "$n0" "commits" &&
	expect_eq "$(cat "$rec")" "$rec0" "the record after the failed snapshot" &&
	st=$(s3req DELETE "$BUCKET?policy=" | tail -n 1) &&
	case $st in 200|204) ;; *) say "DeleteBucketPolicy: HTTP $st"; return 1 ;; esac &&
	expect_ok ls -r "$REPO_URL" &&
	! grep -q "rolled back" "$ERR" &&
	snap && ! grep -q "rolled back" "$ERR" &&
	cget "$(ncommits)" cn && expect_eq "$(sed -n "1p" "$rec")" "generation $(cgen cn)" "the record" &&
	expect_ok verify -r "$REPO_URL" &&
	! grep -q "rolled back" "$ERR"
'

test_expect_success 'stop' 'stop_cluster'

test_done
