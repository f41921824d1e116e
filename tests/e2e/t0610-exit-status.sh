#!/bin/bash
# Exit statuses by kind of failure, each against a real repository and
# cluster: 2 bad usage, 10 no repository, 11 locked (by a live exclusive
# lock, for readers, writers and snapshot), 12 wrong password; with
# --json each failure is also one JSON object on stdout naming its code,
# message and exit status, while the one-line error stays on stderr.
. "$(dirname "$0")/lib.sh"

# json_error CODE EXIT: stdout is exactly one JSON object (schema 1), the error of
# kind CODE with exit EXIT and the same message as the stderr line.
json_error () {
	python3 - "$OUT" "$ERR" "$1" "$2" <<'PY'
import json, sys
out = open(sys.argv[1]).read()
lines = out.splitlines()
assert len(lines) == 1, "stdout has %d lines: %r" % (len(lines), out)
d = json.loads(lines[0])
assert list(d) == ["schema", "error"] and d["schema"] == 1, d
e = d["error"]
assert e["code"] == sys.argv[3], e
assert e["exit"] == int(sys.argv[4]), e
err = open(sys.argv[2]).read().strip()
assert e["message"] and e["message"] in err, (e, err)
PY
}

test_expect_success 'setup: a cluster, a plain repository with a snapshot, an encrypted one' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot &&
	printf "%s\n" "right horse" >pw &&
	printf "%s\n" "wrong horse" >bad &&
	expect_ok init -r enc --encrypt --password-file pw &&
	expect_ok snapshot -c "$CONF" -r enc --password-file pw -q
'

test_expect_success 'usage errors: exit 2, and with --json an error object of code usage' '
	n=0 &&
	for c in "ls --json --frobnicate -r $REPO" "verify --json -r $REPO 1 2" \
	    "forget --json -r $REPO --keep-last x" "status --json"; do
		expect_error 2 $c && json_error usage 2 || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 4 "commands checked" &&
	expect_error 2 ls -r "$REPO" --bogus &&
	[ ! -s "$OUT" ]
'

test_expect_success 'a missing repository: exit 10 for readers and writers, code no-repository' '
	n=0 &&
	for c in ls show verify prune forget; do
		extra= &&
		[ $c = forget ] && extra="--keep-last 1"
		expect_error 10 $c --json -r "$TEST_DIR/none" $extra &&
		err_matches "repository .*/none does not exist" &&
		json_error no-repository 10 || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 5 "commands checked" &&
	expect_error 10 ls -r "$TEST_DIR/none" &&
	[ ! -s "$OUT" ]
'

test_expect_success 'a wrong password: exit 12, code auth; the right one works' '
	expect_error 12 verify -r enc --password-file bad &&
	err_matches "wrong password" &&
	expect_error 12 verify -r enc --password-file bad --json &&
	json_error auth 12 &&
	expect_error 12 snapshot -c "$CONF" -r enc --password-file bad -q &&
	expect_ok verify -r enc --password-file pw
'

test_expect_success 'a live exclusive lock: exit 11 for ls, verify, restore, forget, prune and snapshot' '
	hold_exclusive &&
	n=0 &&
	for c in "ls -r $REPO" "verify -r $REPO" "restore -r $REPO -c $CONF" \
	    "forget -r $REPO --keep-last 1" "prune -r $REPO" \
	    "snapshot -c $CONF -r $REPO -q"; do
		expect_error 11 $c &&
		err_matches "locked exclusively by host=elsewhere pid=$LOCKER" || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 6 "commands checked" &&
	expect_error 11 ls --json -r "$REPO" &&
	json_error locked 11 &&
	kill "$LOCKER" && wait "$LOCKER" 2>/dev/null
	expect_ok ls -r "$REPO"
'

test_done
