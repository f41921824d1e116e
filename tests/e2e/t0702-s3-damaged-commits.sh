#!/bin/bash
# Damaged commit objects do not stop a repository on an object store. A
# stray key under commits/ that is not a commit number (here one past
# 2^64) is ignored with a warning; a newest commit whose manifest (its
# newest piece: the delta it added) was deleted, or whose text is not a
# commit, is passed over with a warning
# for the newest whole one, which readers read; a writer refuses it as a
# rollback, and snapshot --accept-rollback commits past every number
# listed. ls, show, verify and restore --commit N read an older commit.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

ckey () { printf 'repo/commits/%020d' "$1"; }
ncommits () { s3count "$BUCKET" repo/commits/; }
snap () {
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" "$@" &&
	SNAP_ID=$(_parse_id "$OUT") && [ -n "$SNAP_ID" ]
}
ids () {
	cs ls -r "$REPO_URL" --json >ls.json 2>ls.err &&
	python3 -c 'import json; print(" ".join(str(s["id"]) for s in json.load(open("ls.json"))))'
}
S1='' S2=''

test_expect_success 'set-up: two snapshots, two commits' '
	make_config A B && start_cluster &&
	set_balances A=100 B=50 && snap && S1=$SNAP_ID &&
	put_random A 4 && snap && S2=$SNAP_ID &&
	expect_eq "$(ncommits)" 2 "commits"
'

test_expect_success 'a stray commits/99999999999999999999 is ignored with a warning by readers and writers' '
	printf "junk\n" >junk && s3put "$BUCKET/repo/commits/99999999999999999999" junk &&
	expect_ok ls -r "$REPO_URL" &&
	err_matches "ignoring commits/99999999999999999999: not a commit" &&
	expect_eq "$(ids)" "$S1 $S2" "snapshots listed" &&
	put_random B 4 && snap && [ "$SNAP_ID" -gt "$S2" ] &&
	err_matches "ignoring commits/99999999999999999999" &&
	s3keys "$BUCKET" repo/commits/ | grep -qx "$(ckey 3)" &&
	s3del "$BUCKET/repo/commits/99999999999999999999"
'

test_expect_success 'the newest commit'"'"'s manifest deleted: readers read the commit before it, with a warning' '
	s3req GET "$BUCKET/$(ckey 3)" -o c3 | tail -n 1 | grep -q "^200$" &&
	m3=$({ sed -n "s/^manifest //p" c3; sed -n "s/^delta \([^ ]*\) .*/\1/p" c3; } | tail -n 1) &&
	[ -n "$m3" ] &&
	s3del "$BUCKET/repo/$m3" &&
	expect_ok ls -r "$REPO_URL" --json &&
	err_matches "commit 0*3 names $m3, which the bucket does not have" &&
	json_check "[s[\"id\"] for s in d] == [$S1, $S2]" &&
	expect_ok verify -r "$REPO_URL" "$S2"
'

test_expect_success 'a writer refuses it as a rollback; --accept-rollback commits past every number listed' '
	n0=$(ncommits) &&
	expect_exit 2 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "rolled back|--accept-rollback" &&
	expect_eq "$(ncommits)" "$n0" "commits after the refusal" &&
	snap --accept-rollback && last=$SNAP_ID &&
	s3keys "$BUCKET" repo/commits/ | grep -qx "$(ckey 4)" &&
	expect_ok ls -r "$REPO_URL" --json &&
	! grep -q "does not have" "$ERR" &&
	json_check "$last in [s[\"id\"] for s in d]"
'

test_expect_success 'a newest commit that is not a commit'"'"'s text: passed over with a warning' '
	printf "not a commit\n" >bad && s3put "$BUCKET/$(ckey 9)" bad &&
	expect_ok ls -r "$REPO_URL" --json &&
	err_matches "commit 0*9 is malformed; using the commit before it" &&
	json_check "len(d) >= 3"
'

test_expect_success 'ls --commit N reads an older commit; a missing or damaged one is an error; writers refuse it' '
	expect_ok ls -r "$REPO_URL" --commit 1 --json &&
	json_check "[s[\"id\"] for s in d] == [$S1]" &&
	! grep -q "rolled back" "$ERR" &&
	expect_ok verify -r "$REPO_URL" --commit 2 "$S2" &&
	expect_error 1 ls -r "$REPO_URL" --commit 77 &&
	err_matches "there is no commit 77" &&
	expect_exit 1 ls -r "$REPO_URL" --commit 3 &&
	err_matches "commit 3 cannot be read" &&
	expect_error 2 snapshot -c "$CONF" -r "$REPO_URL" --commit 2 &&
	err_matches "--commit is for commands that read" &&
	expect_error 2 ls -r "$REPO_URL" --commit x1 &&
	err_matches "not a commit number"
'

test_done
