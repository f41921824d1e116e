#!/bin/bash
# The documents' commands that need an object store (a document marked
# "doctest-requires: S3"; t0700 runs the others): each runs against
# radosgw, in the bucket the document names, and prints what the
# document says it prints.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

root=$(cd "$_lib_dir/../.." && pwd)
doc_path_setup
docs=$(cd "$root" && grep -l 'doctest-requires: S3' README.md docs/*.md)

test_expect_success 'the buckets the documents name exist' '
	buckets=$(cd "$root" && grep -h "^\$ .*s3://" $docs |
	    grep -o "s3://[a-z0-9][a-z0-9.-]*/" | sort -u |
	    sed "s|s3://||; s|/\$||") &&
	[ -n "$buckets" ] &&
	for b in $buckets; do
		s3req PUT "$b" >"$TEST_DIR/.mk" &&
		tail -n 1 "$TEST_DIR/.mk" | grep -qx 200 || return 1
	done
'

doc_cases $docs

test_expect_success 'docs/object-storage.md was among them' '
	echo "$docs" | grep -qx docs/object-storage.md &&
	[ "$DOC_CASES" -ge 1 ]
'

test_done
