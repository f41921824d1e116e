#!/bin/bash
# A snapshot into an object store uploads its blobs while its copy runs
# (each chunk object goes from memory to the bucket): a copy stopped
# midway has sent some of its blobs already, yet nothing is committed
# (exit 1, never listed), prune deletes exactly those orphans, and the
# next snapshot commits from the same cache and restores into an empty
# directory with the live data files' keys and values.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

# Many small chunks; one upload at a time, so that the copy, held back
# by the upload queue, is still running when the uploads have begun.
# more_blobs: the bucket holds a blob snapshot 1 did not upload.
more_blobs () { [ "$(s3count "$BUCKET" repo/blobs/)" -gt "$NB0" ]; }
export CUTSNAP_CHUNK_SIZE=4096

# shellcheck disable=SC2034 # used inside the test bodies
NB0='' NC0='' ORPH='' REF=''

test_expect_success 'a committed snapshot to start from' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	add_data 1 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	NB0=$(s3count "$BUCKET" repo/blobs/) &&
	NC0=$(s3count "$BUCKET" repo/commits/) &&
	expect_eq "$NC0" 1 "commits"
'

test_expect_success 'a copy stopped midway (SIGTERM): blobs were uploaded during it, exit 1, nothing committed' '
	add_data 4 &&
	{ CUTSNAP_S3_PARALLEL=1 timeout -k 5 300 "$CUTSNAP" snapshot -c "$CONF" \
	    -r "$REPO_URL" >"$OUT" 2>"$ERR" & } &&
	spid=$! &&
	wait_for 60 more_blobs &&
	kill -TERM "$(cutsnap_pid "$spid")" &&
	{ wait "$spid"; rc=$?; } &&
	expect_eq "$rc" 1 "exit status" &&
	err_matches "interrupted" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC0" "commits" &&
	expect_eq "$(s3count "$BUCKET" repo/manifests/)" "$NC0" "manifests" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $NC0 and all(s[\"status\"] == \"complete\" for s in d)" &&
	REF=$(newest_refs) &&
	ORPH=$(( $(s3count "$BUCKET" repo/blobs/) - 1 - REF )) &&
	say "referenced $REF, uploaded before the copy failed $ORPH" &&
	[ "$ORPH" -gt 0 ]
'

test_expect_success 'prune --grace 0 deletes exactly the orphans; the listed snapshot verifies' '
	wait_for 60 cs prune -r "$REPO_URL" --dry-run &&
	expect_ok prune -r "$REPO_URL" --grace 0 --force --json &&
	json_check "d[\"deleted\"] == $ORPH" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$NB0" "blobs left" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_expect_success 'the next snapshot commits every new blob and restores the live data from the bucket alone' '
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	S2=$(_parse_id "$OUT") && [ -n "$S2" ] &&
	err_matches "s3: uploaded [1-9][0-9]* blobs" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$((NC0 + 1))" "commits" &&
	expect_eq "$(( $(s3count "$BUCKET" repo/blobs/) - 1 - $(newest_refs) ))" 0 "unreferenced blobs" &&
	mkdir fresh &&
	sed "s#^run_dir = .*#run_dir = run#" "$CONF" >fresh/cluster.ini &&
	(
		cd fresh &&
		CUTSNAP_CACHE_DIR=$TEST_DIR/nocache cs restore -c cluster.ini -r "$REPO_URL" "$S2"
	) >"$OUT" 2>"$ERR" &&
	n=0 &&
	for a in A B; do
		keys_of "$TEST_DIR/$a.data" >live.$a &&
		keys_of "fresh/$a.data" >fresh.$a &&
		cmp live.$a fresh.$a &&
		n=$((n + $(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))))" live.$a))) || return 1
	done &&
	say "keys compared: $n" &&
	[ "$n" -ge 12 ]
'

test_done
