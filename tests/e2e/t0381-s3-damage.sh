#!/bin/bash
# Objects changed or deleted in the bucket: verify (from no local state)
# reports each one, restore refuses and writes nothing, whether the
# changed object is a blob or a manifest.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CUTSNAP_CHUNK_SIZE=65536

# shellcheck disable=SC2034 # used inside the test bodies
KEY='' NAME='' MKEY=''

# hashes of the files in directory $1 (name and sha256), sorted
tree_sums () { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

test_expect_success 'a snapshot into the bucket that verifies' '
	make_config A B &&
	start_cluster &&
	set_balances A=300 B=200 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 30 &&
	head -c 200000 /dev/urandom | base64 -w 0 | cs put -c "$CONF" A blob - &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	stop_cluster &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]" &&
	KEY=$(s3keys "$BUCKET" repo/blobs/ | grep -E "/[0-9a-f]{64}$" | head -n 1) &&
	[ -n "$KEY" ] &&
	NAME=${KEY##*/} &&
	s3req GET "$BUCKET/$KEY" -o good.obj | tail -n 1 | grep -q "^200$" &&
	[ -s good.obj ]
'

test_expect_success 'a blob overwritten in the bucket: verify reports it, exit 1' '
	head -c "$(stat -c %s good.obj)" /dev/urandom >bad.obj &&
	s3put "$BUCKET/$KEY" bad.obj &&
	mkdir -p v1 && cd v1 &&
	expect_exit 1 verify -r "$REPO_URL" --json &&
	cd "$TEST_DIR" &&
	json_check "not d[\"ok\"] and any(\"${NAME:0:12}\" in p for p in d[\"problems\"])"
'

test_expect_success 'restore refuses it and writes nothing, into an empty directory or over files' '
	mkdir r1 && cp "$CONF" r1/cluster.ini &&
	(cd r1 && cs restore -c cluster.ini -r "$REPO_URL") >"$OUT" 2>"$ERR"
	rc=$? &&
	expect_eq "$rc" 1 "restore exit status" &&
	err_is_one_line &&
	expect_eq "$(ls r1)" cluster.ini "files in the empty directory" &&
	before=$(tree_sums "$TEST_DIR" | grep -E "\./[AB]\.data$") &&
	[ -n "$before" ] &&
	expect_exit 1 restore -c "$CONF" -r "$REPO_URL" &&
	err_is_one_line &&
	expect_eq "$(tree_sums "$TEST_DIR" | grep -E "\./[AB]\.data$")" "$before" "data files after the refused restore"
'

test_expect_success 'the good bytes put back: verify passes again' '
	s3put "$BUCKET/$KEY" good.obj &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_expect_success 'a blob deleted from the bucket: verify reports it, restore refuses' '
	s3del "$BUCKET/$KEY" &&
	expect_exit 1 verify -r "$REPO_URL" --json &&
	json_check "not d[\"ok\"] and any(\"${NAME:0:12}\" in p for p in d[\"problems\"])" &&
	mkdir r2 && cp "$CONF" r2/cluster.ini &&
	(cd r2 && cs restore -c cluster.ini -r "$REPO_URL") >"$OUT" 2>"$ERR"
	rc=$? &&
	expect_eq "$rc" 1 "restore exit status" &&
	err_is_one_line &&
	expect_eq "$(ls r2)" cluster.ini "files in the empty directory"
'

test_expect_success 'the next snapshot uploads the deleted blob again from the live file; the old snapshot verifies' '
	rm -rf "$CUTSNAP_CACHE_DIR" &&
	start_cluster &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	s3req GET "$BUCKET/$KEY" -o again.obj | tail -n 1 | grep -q "^200$" &&
	cmp again.obj good.obj &&
	expect_ok verify -r "$REPO_URL" 1 --json &&
	json_check "d[\"ok\"] and d[\"snapshot\"] == 1" &&
	stop_cluster
'

test_expect_success 'a manifest object changed in the bucket: every reader refuses it' '
	# The newest piece the newest commit names: its delta, or its
	# whole manifest.
	c=$(s3keys "$BUCKET" repo/commits/ | tail -n 1) &&
	s3req GET "$BUCKET/$c" -o newest.commit | tail -n 1 | grep -q "^200$" &&
	MKEY=repo/$({ sed -n "s/^manifest //p" newest.commit; sed -n "s/^delta \([^ ]*\) .*/\1/p" newest.commit; } | tail -n 1) &&
	[ "$MKEY" != repo/ ] &&
	s3req GET "$BUCKET/$MKEY" -o man.db | tail -n 1 | grep -q "^200$" &&
	cp man.db man2.db && printf x >>man2.db &&
	! cmp -s man.db man2.db &&
	s3put "$BUCKET/$MKEY" man2.db &&
	expect_error 1 ls -r "$REPO_URL" &&
	err_matches "does not match its commit .*changed in the bucket" &&
	expect_error 1 verify -r "$REPO_URL" &&
	mkdir r3 && cp "$CONF" r3/cluster.ini &&
	(cd r3 && cs restore -c cluster.ini -r "$REPO_URL") >"$OUT" 2>"$ERR"
	rc=$? &&
	expect_eq "$rc" 1 "restore exit status" &&
	err_matches "changed in the bucket" &&
	expect_eq "$(ls r3)" cluster.ini "files in the empty directory" &&
	s3put "$BUCKET/$MKEY" man.db &&
	expect_ok verify -r "$REPO_URL"
'

test_expect_success 'a missing manifest object: readers warn naming it and read the commit before' '
	s3del "$BUCKET/$MKEY" &&
	expect_ok ls -r "$REPO_URL" &&
	err_matches "names ${MKEY#repo/}, which the bucket does not have" &&
	s3put "$BUCKET/$MKEY" man.db &&
	expect_ok ls -r "$REPO_URL"
'

test_done
