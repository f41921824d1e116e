#!/bin/bash
# A repository on an object store (-r s3://BUCKET/PREFIX, Ceph radosgw):
# the seed and a transfer snapshot into the bucket and restore from it in
# an empty directory with no local state; an incremental snapshot uploads
# only its new chunks; verify reads the bucket alone; ls, show and forget
# work there; a path that looks like a URL of another kind is refused.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

# Many chunks per file.
export CUTSNAP_CHUNK_SIZE=65536

# shellcheck disable=SC2034 # used inside the test bodies
S1='' S2='' NB1='' NEW=''

# blobs_of ID: the distinct blobs snapshot ID names, read from the
# bucket's manifest through "show --json" would need the contents; the
# cache's manifest is the same one (checked against the commit).
blobs_of () {
	sqlite3 "$(ls -d "$CUTSNAP_CACHE_DIR"/s3-*)/manifest.db" \
	    "select count(distinct sha256) from agent_chunks where snapshot_id = $1"
}

test_expect_success 'a URL that is not s3:// and a bad bucket name are refused, exit 2' '
	make_config A B &&
	expect_error 2 ls -r "https://example.com/x" &&
	err_matches "only s3:// object stores" &&
	expect_error 2 ls -r "s3://Bad_Bucket/x" &&
	err_matches "bucket name" &&
	expect_error 2 ls -r "s3://$BUCKET/a/../b" &&
	err_matches "prefix" &&
	[ ! -e "s3:" ] && [ ! -e https: ]
'

test_expect_success 'an empty prefix is no repository: ls fails with exit 2' '
	expect_error 2 ls -r "$REPO_URL" &&
	err_matches "no repository there"
'

test_expect_success 'seed and transfer, then a snapshot into the bucket' '
	start_cluster &&
	set_balances A=1000 B=500 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 250 &&
	head -c 300000 /dev/urandom | base64 -w 0 | cs put -c "$CONF" A blob - &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	S1=$(_parse_id "$OUT") && [ -n "$S1" ] &&
	err_matches "s3: uploaded [0-9]+ blobs" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 1 "commit objects" &&
	expect_eq "$(s3count "$BUCKET" repo/manifests/)" 1 "manifest objects" &&
	NB1=$(s3count "$BUCKET" repo/blobs/) &&
	say "blobs after the first snapshot: $NB1" &&
	[ "$NB1" -gt 4 ] &&
	expect_eq "$((NB1 - 1))" "$(blobs_of "$S1")" "blobs in the bucket (less the identity)"
'

test_expect_success 'ls and verify from an empty directory read the bucket alone' '
	mkdir empty1 && cd empty1 &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/nocache expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 1 and d[0][\"id\"] == $S1 and d[0][\"status\"] == \"complete\" and d[0][\"stored_bytes\"] > 0" &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/nocache expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"] and d[\"snapshot\"] == $S1 and d[\"agents\"] == 2" &&
	[ ! -e "$TEST_DIR/nocache" ] &&
	expect_eq "$(ls -A)" "" "files left in the working directory" &&
	cd "$TEST_DIR"
'

test_expect_success 'restore into an empty directory with no local state gives the seeded balances' '
	mkdir fresh &&
	sed "s#^run_dir = .*#run_dir = run#" "$CONF" >fresh/cluster.ini &&
	(
		cd fresh &&
		CUTSNAP_CACHE_DIR=$TEST_DIR/nocache2 cs restore -c cluster.ini -r "$REPO_URL" "$S1"
	) >"$OUT" 2>"$ERR" &&
	[ ! -e "$TEST_DIR/nocache2" ] &&
	cs start -c fresh/cluster.ini >/dev/null &&
	expect_eq "$(cs get -c fresh/cluster.ini A bal)" 750 "A restored" &&
	expect_eq "$(cs get -c fresh/cluster.ini B bal)" 750 "B restored" &&
	cs get -c fresh/cluster.ini A blob >fresh.blob &&
	cs get -c "$CONF" A blob >live.blob &&
	cmp fresh.blob live.blob &&
	cs stop -c fresh/cluster.ini >/dev/null
'

test_expect_success 'an incremental snapshot uploads only its new chunks' '
	expect_ok transfer -c "$CONF" B:bal A:bal 100 &&
	head -c 200000 /dev/urandom | base64 -w 0 | cs put -c "$CONF" B blob2 - &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	S2=$(_parse_id "$OUT") && [ "$S2" -gt "$S1" ] &&
	NEW=$(sed -n "s/^s3: uploaded \([0-9]*\) blobs.*/\1/p" "$ERR") &&
	[ -n "$NEW" ] &&
	after=$(s3count "$BUCKET" repo/blobs/) &&
	all=$(blobs_of "$S2") &&
	say "snapshot $S2 names $all blobs; $NEW uploaded; bucket $NB1 -> $after" &&
	expect_eq "$after" "$((NB1 + NEW))" "blobs in the bucket" &&
	[ "$NEW" -gt 0 ] &&
	[ "$NEW" -lt "$all" ] &&
	err_matches "s3: uploaded $NEW blobs \([0-9]+ bytes\), [1-9][0-9]* already there, commit 2"
'

test_expect_success 'both snapshots listed, the newer one verifies and restores from the bucket' '
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "[s[\"id\"] for s in d] == [$S1, $S2] and all(s[\"status\"] == \"complete\" for s in d)" &&
	expect_ok verify -r "$REPO_URL" "$S2" --json &&
	json_check "d[\"ok\"] and d[\"snapshot\"] == $S2" &&
	expect_ok show -r "$REPO_URL" "$S2" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == 1500"
'

test_expect_success 'forget --prune in the bucket, even abbreviated: exit 2, nothing forgotten' '
	expect_error 2 forget -r "$REPO_URL" --keep-last 1 --prune &&
	err_matches "forget --prune needs a directory repository" &&
	expect_error 2 forget -r "$REPO_URL" --keep-last 1 --pru &&
	err_matches "forget --prune needs a directory repository" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "[s[\"id\"] for s in d] == [$S1, $S2]"
'

test_expect_success 'forget in the bucket: the older snapshot is gone for every reader' '
	expect_ok forget -r "$REPO_URL" --keep-last 1 &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 3 "commit objects" &&
	rm -rf "$CUTSNAP_CACHE_DIR" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "[s[\"id\"] for s in d] == [$S2]"
'

test_done
