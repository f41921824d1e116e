#!/bin/bash
# A writer's cache over an object store holds no blob, and its loss
# costs no re-upload. A snapshot streams its chunk objects to the bucket
# from memory, so the cache keeps only the manifest, whatever forget,
# prune and newer snapshots do; a writer whose cache is new (another
# host, another spelling of the endpoint) learns which blobs the bucket
# has from one listing and uploads only the new ones. Before, the cache
# kept every blob ever written (940 MB of cache for a 403 MB bucket) and
# a new cache PUT every blob again, each answered 412.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CUTSNAP_CHUNK_SIZE=65536
PLOG=$TEST_DIR/proxy.log

# cache_blobs: how many blobs the cache holds.
cache_blobs () {
	find "$CUTSNAP_CACHE_DIR" -path '*/blobs/??/*' -type f |
	    grep -cE '/[0-9a-f]{64}$' || true
}
# newest_snap_refs: the distinct blobs the newest complete snapshot of
# the newest committed manifest refers to.
newest_snap_refs () {
	newest_refs >/dev/null &&
	sqlite3 newest.db "select count(distinct sha256) from agent_chunks
	    where snapshot_id = (select max(id) from snapshots
	    where status = 'complete')"
}
# put_keys FROM TO: values of 150 KB of random text under k FROM..TO in A.
put_keys () {
	local i
	for i in $(seq "$1" "$2"); do
		head -c 110000 /dev/urandom | base64 -w 0 |
		    cs put -c "$CONF" A "k$i" - >/dev/null || return 1
	done
}
# proxy_count METHOD REGEX [STATUS]: requests the proxy logged.
proxy_count () {
	python3 - "$PLOG" "$@" <<'EOF'
import json, re, sys
log, method, rx = sys.argv[1:4]
status = int(sys.argv[4]) if len(sys.argv) > 4 else None
n = 0
for line in open(log):
    r = json.loads(line)
    if r["method"] == method and re.search(rx, r["path"]) and \
            (status is None or r["status"] == status):
        n += 1
print(n)
EOF
}

test_expect_success 'setup: snapshot 1 of A with 12 values; the cache holds none of its blobs' '
	make_config A B && start_cluster &&
	set_balances A=100 B=50 &&
	put_keys 1 12 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	S1=$(_parse_id "$OUT") &&
	N1=$(newest_snap_refs) && [ "$N1" -ge 20 ] &&
	expect_eq "$(cache_blobs)" 0 "blobs in the cache after snapshot 1" &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/ | tr -d " ")" "$((N1 + 1))" \
	    "objects under blobs/ (the blobs and .repository-id)"
'

test_expect_success 'after A is compacted, the next snapshot still leaves no blob in the cache' '
	for i in $(seq 1 12); do cs del -c "$CONF" A "k$i" || return 1; done &&
	put_keys 13 14 &&
	expect_ok compact -c "$CONF" A &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	S2=$(_parse_id "$OUT") && [ "$S2" -gt "$S1" ] &&
	N2=$(newest_snap_refs) && [ "$N2" -lt "$N1" ] &&
	err_matches "s3: uploaded [1-9][0-9]* blobs .*, 0 cached blobs collected" &&
	expect_eq "$(cache_blobs)" 0 "blobs in the cache after snapshot 2" &&
	[ "$(s3count "$BUCKET" repo/blobs/)" -gt "$N2" ]
'

test_expect_success 'forget and prune: the bucket drops the old blobs, the cache still holds none' '
	expect_ok forget -r "$REPO_URL" --keep-last 1 &&
	# --force: most of the bucket'"'"'s blobs go (A was compacted).
	expect_ok prune -r "$REPO_URL" --grace 0 --force &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/ | tr -d " ")" "$((N2 + 1))" \
	    "objects under blobs/ (the blobs and .repository-id)" &&
	expect_eq "$(cache_blobs)" 0 "blobs in the cache" &&
	expect_ok verify -r "$REPO_URL"
'

test_expect_success 'a new cache directory: one listing, only the new blobs are uploaded, none twice' '
	python3 "$_lib_dir/../s3/faultproxy.py" "$AWS_ENDPOINT_URL" \
	    "$TEST_DIR/proxy.port" "$TEST_DIR/rules.json" "$PLOG" \
	    2>"$TEST_DIR/proxy.err" &
	BG_PIDS="$BG_PIDS $!" &&
	wait_for 30 test -s "$TEST_DIR/proxy.port" &&
	put_keys 15 15 &&
	(export CUTSNAP_CACHE_DIR=$TEST_DIR/cache2 \
	    AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$TEST_DIR/proxy.port") &&
	 expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v) &&
	NEW=$(sed -n "s/^s3: uploaded \([0-9]*\) blobs.*/\1/p" "$ERR") &&
	N3=$(newest_snap_refs) &&
	puts=$(proxy_count PUT "/repo/blobs/[0-9a-f]{2}/") &&
	refused=$(proxy_count PUT "/repo/blobs/" 412) &&
	lists=$(proxy_count GET "[?&]prefix=repo(%2F|/)blobs") &&
	say "snapshot names $N3 blobs; $NEW uploaded in $puts PUTs, $refused refused; $lists listings" &&
	[ "$NEW" -gt 0 ] && [ "$NEW" -lt "$N3" ] &&
	expect_eq "$puts" "$NEW" "blob PUTs" &&
	expect_eq "$refused" 0 "blob PUTs answered 412" &&
	[ "$lists" -ge 1 ] &&
	expect_ok verify -r "$REPO_URL"
'

test_done
