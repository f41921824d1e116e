#!/bin/bash
# The documents' commands: every command shown in a ```console block of
# the README and the guides runs (tests/doctest.py), in order, each
# document in its own home directory, and prints what the document says
# it prints ("..." standing for pids, times and hashes). A drifted size,
# id or message fails here instead of misleading a reader.
. "$(dirname "$0")/lib.sh"

root=$(cd "$_lib_dir/../.." && pwd)
doc_path_setup

# Every document with a console block is checked; the list is read from
# the tree so that a new guide cannot be left out.
# A document marked "doctest-requires: S3" runs against an object store,
# in t0704.
docs=$(cd "$root" && grep -l '^```console' README.md docs/*.md 2>/dev/null |
    xargs grep -L 'doctest-requires: S3')

doc_cases $docs

test_expect_success 'README.md and docs/tutorial.md were among them' '
	echo "$docs" | grep -qx README.md &&
	echo "$docs" | grep -qx docs/tutorial.md &&
	[ "$DOC_CASES" -ge 2 ]
'

test_done
