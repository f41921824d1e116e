#!/bin/bash
# An object-store repository's usage errors carry their kind: a bad
# CUTSNAP_S3_LEASE_SECONDS exits 2 with the JSON error code "usage" before
# any request, while the bounds themselves are accepted (the command then
# gets as far as the bucket, here an endpoint where nothing listens, a
# failure of kind "failed", exit 1). No S3 server is needed.
. "$(dirname "$0")/lib.sh"

# An endpoint on loopback where nothing listens: a port just freed.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
export CUTSNAP_CACHE_DIR=$TEST_DIR/cache
# shellcheck disable=SC2034 # used inside the test bodies
REPO_URL=s3://bucket/t0740

test_expect_success 'a lease time out of bounds or no number is a usage error, exit 2' '
	n=0 &&
	for v in abc 5 3601 6x; do
		CUTSNAP_S3_LEASE_SECONDS=$v expect_error 2 forget -r "$REPO_URL" --keep-last 1 &&
		err_matches "CUTSNAP_S3_LEASE_SECONDS must be 6 to 3600" &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 4 "values checked"
'

test_expect_success 'under --json its code is "usage" and its exit 2' '
	CUTSNAP_S3_LEASE_SECONDS=0 expect_exit 2 forget -r "$REPO_URL" --keep-last 1 --json &&
	expect_eq "$(json_get "d[\"error\"][\"code\"]")" usage "error code" &&
	expect_eq "$(json_get "d[\"error\"][\"exit\"]")" 2 "error exit"
'

test_expect_success 'the bounds are accepted: the command reaches the bucket and fails there, exit 1' '
	n=0 &&
	for v in 6 3600; do
		CUTSNAP_S3_LEASE_SECONDS=$v expect_exit 1 forget -r "$REPO_URL" --keep-last 1 --json &&
		expect_eq "$(json_get "d[\"error\"][\"code\"]")" failed "error code" &&
		json_get "d[\"error\"][\"message\"]" | grep -q "127.0.0.1:$port" &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 2 "bounds checked"
'

test_done
