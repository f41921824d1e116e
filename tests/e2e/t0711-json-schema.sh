#!/bin/bash
# Every --json document says which version of its format it is: an object
# opens with "schema" (the number `cutsnap --version --json` prints), an
# array output stays an array of that version, and a failure under --json
# is an error document with the same member, also when the command fails
# before it wrote anything.
. "$(dirname "$0")/lib.sh"

R="$TEST_DIR/repo"
CHECKED=0

# first_is_schema FILE: FILE holds one object whose first member is
# "schema" with the version's number.
first_is_schema () {
	json_check "(isinstance(d, dict) and list(d)[0] == \"schema\" and
	    d[\"schema\"] == $SCHEMA)" "$1"
}

# object_doc ARGS...: the command succeeds and prints a versioned object.
object_doc () {
	expect_ok "$@" &&
	first_is_schema "$OUT" &&
	CHECKED=$((CHECKED + 1))
}

# array_doc ARGS...: the command succeeds and prints an array.
array_doc () {
	expect_ok "$@" &&
	json_check "isinstance(d, list)" "$OUT" &&
	CHECKED=$((CHECKED + 1))
}

# error_doc STATUS ARGS...: the command fails with STATUS and prints one
# versioned error document.
error_doc () {
	local want=$1
	shift
	expect_exit "$want" "$@" &&
	first_is_schema "$OUT" &&
	json_check "(d[\"error\"][\"exit\"] == $want and
	    len(d[\"error\"][\"message\"]) > 0)" "$OUT" &&
	CHECKED=$((CHECKED + 1))
}

test_expect_success 'version --json: the versions, the JSON schema first' '
	expect_ok --version --json &&
	json_check "(list(d) == [\"schema\", \"version\", \"protocol\",
	    \"manifest\"] and d[\"schema\"] >= 1)" "$OUT" &&
	SCHEMA=$(json_get "d[\"schema\"]" "$OUT") &&
	VERSION=$(json_get "d[\"version\"]" "$OUT") &&
	expect_ok --version &&
	grep -q "^cutsnap $VERSION (" "$OUT"
'

test_expect_success 'setup: two agents, a repository with one snapshot' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	object_doc init -r "$R" --json &&
	object_doc snapshot -c "$CONF" -r "$R" --json
'

test_expect_success 'every object output opens with the schema' '
	object_doc check -c "$CONF" -r "$R" --json &&
	object_doc dump "$TEST_DIR/A.data" --json &&
	object_doc show -r "$R" --json &&
	object_doc verify -r "$R" --json &&
	object_doc verify -r "$R" --all --json &&
	object_doc restore -r "$R" --target "$TEST_DIR/out" --json &&
	object_doc forget -r "$R" --keep-last 5 --dry-run --json &&
	object_doc prune -r "$R" --dry-run --json &&
	object_doc deadletter -c "$CONF" list --json &&
	object_doc inbox -c "$CONF" A --json &&
	object_doc load -c "$CONF" --seconds 1 --json
'

test_expect_success 'the array outputs stay arrays' '
	array_doc status -c "$CONF" --json &&
	array_doc ls -r "$R" --json &&
	array_doc compact -c "$CONF" --json
'

test_expect_success 'a failure under --json is a versioned error document' '
	error_doc 10 ls -r "$TEST_DIR/none" --json &&
	error_doc 2 ls -r "$R" --no-such-option --json &&
	error_doc 2 verify -r "$R" 999 --json
'

test_expect_success 'a command that fails before its output still says why in JSON' '
	R2="$TEST_DIR/empty" &&
	expect_ok init -r "$R2" &&
	error_doc 1 verify -r "$R2" --json &&
	json_check "\"no complete snapshot\" in d[\"error\"][\"message\"]" "$OUT"
'

test_expect_success 'every document was checked' '
	echo "# $CHECKED documents checked" &&
	test "$CHECKED" -eq 20
'

test_done
