#!/bin/bash
# An object store that misbehaves, through a fault-injecting proxy in
# front of the real radosgw (tests/s3/faultproxy.py): a burst of 503
# SlowDown is ridden out; a conditional PUT whose answer was lost after
# the server stored it (commit, lease) is recognised as this writer's own
# on its retry's 412, not as another writer's; a server that never
# recovers fails the command within the retry budget, naming the key and
# the attempts; a stalled answer and a truncated body are retried; after
# any failure nothing is committed and the next command succeeds;
# prefixes with "." or empty segments are refused.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

RULES=$TEST_DIR/rules.json
PLOG=$TEST_DIR/proxy.log
python3 "$_lib_dir/../s3/faultproxy.py" "$AWS_ENDPOINT_URL" \
    "$TEST_DIR/proxy.port" "$RULES" "$PLOG" 2>"$TEST_DIR/proxy.err" &
BG_PIDS="$BG_PIDS $!"
wait_for 30 test -s "$TEST_DIR/proxy.port" || {
	echo "Bail out! the fault proxy did not start: $(cat "$TEST_DIR/proxy.err")"
	exit 1
}
export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$TEST_DIR/proxy.port")
# The retry budget of a request: long enough for the bursts below, short
# enough that a server that never recovers is reported within a case.
export CUTSNAP_S3_RETRY_SECONDS=40

rules () { printf '%s\n' "$1" >"$RULES"; : >"$PLOG"; }
# fired ACTION: how many requests the proxy answered with ACTION.
fired () { grep -c "\"action\": \"$1" "$PLOG" 2>/dev/null || true; }
ncommits () { s3count "$BUCKET" repo/commits/; }
complete_ids () {
	cs ls -r "$REPO_URL" --json >ls.json &&
	python3 -c 'import json; print(" ".join(str(s["id"]) for s in json.load(open("ls.json")) if s["status"] == "complete"))'
}
snap () {
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" "$@" &&
	SNAP_ID=$(_parse_id "$OUT") && [ -n "$SNAP_ID" ]
}

test_expect_success 'set-up: a cluster and a first snapshot through the proxy' '
	rules "[]" &&
	make_config A B && start_cluster &&
	set_balances A=100 B=50 && put_random A 4 &&
	snap && [ "$(complete_ids)" = "$SNAP_ID" ] &&
	[ "$(grep -c . "$PLOG")" -gt 5 ]
'

# (The lease must outlast the burst: a writer whose lease expired while
# its renewals failed must not commit, and does not.)
test_expect_success 'an 8 s burst of 503 SlowDown on every request: the snapshot rides it out' '
	put_random B 8 &&
	rules "[{\"key\": \"\", \"action\": \"503\", \"count\": -1, \"for_seconds\": 8}]" &&
	CUTSNAP_S3_LEASE_SECONDS=60 CS_TIMEOUT=120 snap &&
	n=$(fired 503) && say "503 answers: $n" && [ "$n" -ge 3 ] &&
	rules "[]" && expect_ok verify -r "$REPO_URL" "$SNAP_ID"
'

test_expect_success 'a commit stored but its answer lost: the retry sees its own object, not another writer' '
	before=$(ncommits) && put_random A 4 &&
	rules "[{\"method\": \"PUT\", \"key\": \"/commits/\", \"action\": \"forward_reset\"}]" &&
	snap && expect_eq "$(fired forward_reset)" 1 "commit PUTs whose answer was lost" &&
	expect_eq "$(ncommits)" $((before + 1)) "commits" &&
	case " $(complete_ids) " in *" $SNAP_ID "*) ;; *) false ;; esac &&
	rules "[]" && snap
'

test_expect_success 'a lease taken but its answer lost: the writer does not lock itself out' '
	rules "[{\"method\": \"PUT\", \"key\": \"/lease\$\", \"action\": \"forward_reset\"}]" &&
	snap && expect_eq "$(fired forward_reset)" 1 "lease PUTs whose answer was lost" &&
	rules "[]" && snap
'

test_expect_success 'a stalled answer is given up after CUTSNAP_S3_STALL_SECONDS and asked again' '
	rules "[{\"method\": \"GET\", \"key\": \"list-type=2\", \"action\": \"stall:20\"}]" &&
	CUTSNAP_S3_STALL_SECONDS=2 expect_ok ls -r "$REPO_URL" --json &&
	expect_eq "$(fired stall)" 1 "stalled answers" &&
	json_check "len(d) >= 4"
'

test_expect_success 'truncated bodies are detected and fetched again: verify finds every blob intact' '
	rules "[{\"method\": \"GET\", \"key\": \"/blobs/\", \"action\": \"truncate\", \"count\": 2}]" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"] is True and d[\"problems\"] == []" &&
	expect_eq "$(fired truncate)" 2 "truncated answers"
'

test_expect_success 'a server that never recovers: the command fails in its budget, naming the key and the attempts' '
	rules "[{\"key\": \"\", \"action\": \"503\", \"count\": -1}]" &&
	t0=$SECONDS &&
	CUTSNAP_S3_RETRY_SECONDS=5 expect_error 1 ls -r "$REPO_URL" &&
	[ $((SECONDS - t0)) -lt 30 ] &&
	err_matches "commits/|manifests/|repository-id|HTTP 503" &&
	err_matches "after [0-9]+ tries in [0-9.]+ s" &&
	[ "$(fired 503)" -ge 2 ]
'

test_expect_success 'a snapshot whose commit cannot be stored commits nothing; the next one succeeds' '
	rules "[]" && before=$(ncommits) && ids=$(complete_ids) &&
	put_random A 4 &&
	rules "[{\"method\": \"PUT\", \"key\": \"/commits/\", \"action\": \"503\", \"count\": -1}]" &&
	CUTSNAP_S3_RETRY_SECONDS=3 expect_exit 1 snapshot -c "$CONF" -r "$REPO_URL" &&
	[ "$(fired 503)" -ge 2 ] &&
	expect_eq "$(ncommits)" "$before" "commits after the failed snapshot" &&
	expect_eq "$(complete_ids)" "$ids" "complete snapshots" &&
	rules "[]" && snap && expect_ok verify -r "$REPO_URL" "$SNAP_ID"
'

test_expect_success 'prefixes with "." or empty segments are refused before any request' '
	rules "[]" &&
	for u in "s3://$BUCKET/./x" "s3://$BUCKET//x" "s3://$BUCKET/a/./b" "s3://$BUCKET/a/.."; do
		expect_error 2 ls -r "$u" && err_matches "prefix must be segments" || return 1
	done &&
	expect_eq "$(grep -c . "$PLOG")" 0 "requests sent for refused URLs"
'

test_done
