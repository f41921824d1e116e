#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# verify --all verifies every complete snapshot, oldest first, one verdict
# each (one entry of "snapshots" with --json), and exits 1 naming how many
# failed when one does; an aborted snapshot is not checked; --all with an
# ID is a usage error.
. "$(dirname "$0")/lib.sh"

# jq_py EXPR FILE: the Python expression EXPR over the JSON in FILE (d).
jq_py () { python3 -c 'import json,sys; d=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }

test_expect_success 'setup: three complete snapshots and an aborted one' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 && take_snapshot &&
	set_balances A=90 B=60 && take_snapshot &&
	set_balances A=80 B=70 && take_snapshot &&
	expect_eq "$SNAP_ID" 3 "third snapshot id" &&
	cs channel -c "$CONF" hold A B &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --initiator A --timeout 1 &&
	cs channel -c "$CONF" release A B &&
	expect_eq "$(snap_status 4)" aborted "snapshot 4"
'

test_expect_success 'verify --all --json: every complete snapshot, ok' '
	expect_ok verify -r "$REPO" --all --json &&
	expect_eq "$(jq_py "[s[\"snapshot\"] for s in d[\"snapshots\"]]" "$OUT")" "[1, 2, 3]" "snapshots checked" &&
	expect_eq "$(jq_py "[s[\"ok\"] for s in d[\"snapshots\"]]" "$OUT")" "[True, True, True]" "verdicts" &&
	expect_eq "$(jq_py "(d[\"ok\"], d[\"checked\"], d[\"failed\"])" "$OUT")" "(True, 3, 0)" "summary"
'

test_expect_success 'verify --all as text: one ok line per snapshot' '
	expect_ok verify -r "$REPO" --all &&
	expect_eq "$(grep -c "^snapshot [123]: ok" "$OUT")" 3 "ok lines" &&
	[ ! -s "$ERR" ]
'

test_expect_success 'a tampered snapshot fails, the others still pass, exit 1' '
	sql "update snapshots set initiator = '\''B'\'' where id = 2" &&
	expect_exit 1 verify -r "$REPO" --all --json &&
	expect_eq "$(jq_py "[(s[\"snapshot\"], s[\"ok\"]) for s in d[\"snapshots\"]]" "$OUT")" \
	    "[(1, True), (2, False), (3, True)]" "verdicts" &&
	expect_eq "$(jq_py "(d[\"ok\"], d[\"checked\"], d[\"failed\"])" "$OUT")" "(False, 3, 1)" "summary" &&
	expect_eq "$(jq_py "len(d[\"snapshots\"][1][\"problems\"]) > 0" "$OUT")" True "problems named" &&
	grep -q "1 of 3 snapshots failed" "$ERR" &&
	expect_exit 1 verify -r "$REPO" --all &&
	grep -q "^snapshot 1: ok" "$OUT" && grep -q "^snapshot 3: ok" "$OUT" &&
	grep -q "^problem: " "$OUT" &&
	grep -q "snapshot 2: [0-9]* problem" "$ERR" &&
	grep -q "1 of 3 snapshots failed" "$ERR"
'

test_expect_success 'verify --all with an ID, or of a repository without a complete snapshot' '
	expect_error 2 verify -r "$REPO" --all 2 &&
	err_matches "give no ID" &&
	expect_ok init -r "$TEST_DIR/empty" &&
	expect_error 1 verify -r "$TEST_DIR/empty" --all &&
	err_matches "no complete snapshot"
'

test_done
