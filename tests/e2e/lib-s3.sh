# lib-s3.sh - the object-store tests' helpers (sourced after lib.sh).
#
# The S3 server is Ceph radosgw (tests/s3/radosgw.sh). "make test" starts
# one for the whole run and passes CUTSNAP_S3_ENV, a file that exports
# AWS_ENDPOINT_URL and the credentials (or CUTSNAP_S3_DOWN with the reason
# it did not start: the test then fails, it does not skip). A test run
# alone starts a server of its own in TEST_DIR, killed with the test; where
# radosgw is not installed, the S3 prerequisite skips it (lib.sh).
#
# Every test gets a bucket of its own (BUCKET, created here) and a cache
# directory in TEST_DIR.

_s3_dir=$_lib_dir/../s3

# One failed case (not "Bail out!", which would stop the whole suite).
_s3_fail () {
	echo "not ok 1 - $*"
	echo "1..1"
	exit 1
}

# The script declares S3 (test_require S3, before sourcing this file): the
# Makefile starts the server for the scripts that declare it.
test_required S3 ||
    _s3_fail "$TEST_NAME sources lib-s3.sh without test_require S3 at its top"

if [ -z "${CUTSNAP_S3_ENV:-}" ]; then
	if ! "$_s3_dir/radosgw.sh" start "$TEST_DIR/rgw" >"$TEST_DIR/.rgw.log" 2>&1; then
		_s3_fail "the S3 server (radosgw) did not start: $(tail -n 1 "$TEST_DIR/.rgw.log")"
	fi
	CUTSNAP_S3_ENV=$TEST_DIR/rgw/env
fi
# shellcheck disable=SC1090
. "$CUTSNAP_S3_ENV"
if [ -n "${CUTSNAP_S3_DOWN:-}" ]; then
	_s3_fail "the S3 server (radosgw) did not start: $CUTSNAP_S3_DOWN"
fi
export CUTSNAP_CACHE_DIR=$TEST_DIR/cache
# The writer lease of a killed writer lasts this long.
export CUTSNAP_S3_LEASE_SECONDS=${CUTSNAP_S3_LEASE_SECONDS:-8}

S3_EMPTY_SHA=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855

# s3req METHOD PATH [CURL ARGS...]: a signed request of our own (path
# relative to the endpoint, e.g. BUCKET/KEY); prints the body, then the
# HTTP status on a line of its own.
s3req () {
	local m=$1 p=$2
	shift 2
	curl -s -X "$m" --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
	    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
	    -H "x-amz-content-sha256: $S3_EMPTY_SHA" "$@" \
	    -w '\n%{http_code}\n' "$AWS_ENDPOINT_URL/$p"
}

# s3put PATH FILE: upload FILE's bytes as the object PATH (overwrites).
s3put () {
	local sha
	sha=$(sha256sum "$2" | cut -d' ' -f1)
	curl -s --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
	    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
	    -H "x-amz-content-sha256: $sha" -T "$2" \
	    -o /dev/null -w '%{http_code}' "$AWS_ENDPOINT_URL/$1" | grep -q '^200$'
}

s3del () { s3req DELETE "$1" | tail -n 1 | grep -q '^204$'; }

# s3keys BUCKET PREFIX: every key under PREFIX, one a line (all pages).
s3keys () {
	python3 - "$1" "$2" <<'EOF'
import os, re, subprocess, sys, urllib.parse
bucket, prefix = sys.argv[1], sys.argv[2]
tok = None
while True:
    q = "list-type=2&prefix=" + urllib.parse.quote(prefix, safe="")
    if tok:
        q = "continuation-token=" + urllib.parse.quote(tok, safe="") + "&" + q
    out = subprocess.run(["curl", "-s", "--aws-sigv4",
        "aws:amz:%s:s3" % os.environ.get("AWS_REGION", "us-east-1"),
        "--user", os.environ["AWS_ACCESS_KEY_ID"] + ":" + os.environ["AWS_SECRET_ACCESS_KEY"],
        "-H", "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "%s/%s?%s" % (os.environ["AWS_ENDPOINT_URL"], bucket, q)],
        capture_output=True, text=True, check=True).stdout
    if "<ListBucketResult" not in out:
        sys.exit("list failed: " + out[:300])
    for k in re.findall(r"<Key>([^<]*)</Key>", out):
        print(k)
    m = re.search(r"<NextContinuationToken>([^<]*)</NextContinuationToken>", out)
    if "<IsTruncated>true</IsTruncated>" not in out or not m:
        break
    tok = m.group(1)
EOF
}

# s3count BUCKET PREFIX: how many keys.
s3count () {
	local out
	out=$(s3keys "$1" "$2") || return 1
	printf '%s' "$out" | grep -c . || true
}

# s3mkbucket NAME
s3mkbucket () { s3req PUT "$1" | tail -n 1 | grep -q '^200$'; }

BUCKET=$(printf '%s' "cs-$TEST_NAME-$$" | tr 'A-Z_' 'a-z-' | cut -c1-60)
if ! s3mkbucket "$BUCKET"; then
	_s3_fail "cannot create bucket $BUCKET at $AWS_ENDPOINT_URL"
fi
REPO_URL=s3://$BUCKET/repo

# s3keys_has BUCKET KEY: the object KEY exists.
s3keys_has () { s3keys "$1" "$2" | grep -qx -- "$2"; }

# The tests' reader of a commit's manifest chain (tests/s3/mdelta_apply.c;
# the Makefile passes it, a test run by hand finds it beside the binary).
: "${CUTSNAP_MDELTA:=$(dirname "$CUTSNAP")/../build/mdelta-apply}"

# index_deltas KEY: the delta keys a manifest index object names, after
# those of the indexes before it (store/objchain.c), one per line.
index_deltas () {
	local f prev
	f=idx.$(basename "$1")
	s3req GET "$BUCKET/repo/$1" -o "$f" | tail -n 1 | grep -q "^200$" &&
	head -n 1 "$f" | grep -qx "cutsnap-index 1" || return 1
	prev=$(sed -n 's/^prev \([^ ]*\) .*/\1/p' "$f")
	if [ -n "$prev" ]; then index_deltas "$prev" || return 1; fi
	sed -n 's/^delta \([^ ]*\) .*/\1/p' "$f"
}

# newest_manifest FILE: the manifest the newest commit of repo/ in BUCKET
# names, into FILE: its base, with each of its deltas (those of its
# index first) applied in order.
newest_manifest () {
	local c k i=0 deltas=() keys=""
	c=$(s3keys "$BUCKET" repo/commits/ | grep -E '/[0-9]{20}$' | tail -n 1) &&
	s3req GET "$BUCKET/$c" -o newest.commit | tail -n 1 | grep -q "^200$" &&
	k=$(sed -n 's/^manifest //p' newest.commit) && [ -n "$k" ] &&
	s3req GET "$BUCKET/repo/$k" -o "$1" | tail -n 1 | grep -q "^200$" || return 1
	k=$(sed -n 's/^index \([^ ]*\) .*/\1/p' newest.commit)
	if [ -n "$k" ]; then keys=$(index_deltas "$k") || return 1; fi
	keys="$keys $(sed -n 's/^delta \([^ ]*\) .*/\1/p' newest.commit)"
	for k in $keys; do
		i=$((i + 1))
		s3req GET "$BUCKET/repo/$k" -o "newest.delta$i" | tail -n 1 |
		    grep -q "^200$" || return 1
		deltas+=("newest.delta$i")
	done
	"$CUTSNAP_MDELTA" "$1" "${deltas[@]}"
}

# newest_refs: the blobs the newest committed manifest of repo/ in BUCKET
# refers to (the manifest is left in newest.db).
newest_refs () {
	newest_manifest newest.db &&
	sqlite3 newest.db "select count(distinct sha256) from agent_chunks"
}

# add_data N: N values of 300 KB of random text into agents A and B.
add_data () {
	local i
	for i in $(seq 1 "$1"); do
		head -c 220000 /dev/urandom | base64 -w 0 | cs put -c "$CONF" A "v$RANDOM$i" - >/dev/null || return 1
		head -c 220000 /dev/urandom | base64 -w 0 | cs put -c "$CONF" B "v$RANDOM$i" - >/dev/null || return 1
	done
}

# keys_of FILE: a data file's keys and values (offline), as JSON.
keys_of () {
	cs dump "$1" --json | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["keys"], sort_keys=True))'
}
