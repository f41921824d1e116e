#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Transactions (W_REQ_TXN) against a real agent: puts, adds and deletes
# applied together; a failed condition, a malformed op, a send above the cap
# or a bad add changes nothing and says why; a request id answers a retry
# without applying it again; key versions (W_REQ_GETV) count writes and
# survive a restart, a compaction and a restore; a client that
# disconnects mid-transaction leaves nothing; kill -9 under a stream of
# transactions leaves each one whole or absent.
. "$(dirname "$0")/lib.sh"

# The wire version byte the helper writes: the one this build speaks.
CS_WIRE=$(cs --version | sed -n 's/.*wire protocol \([0-9]*\).*/\1/p')
export CS_WIRE

# tx NAME CMD ARGS...: the helper against agent NAME, its JSON in $OUT.
tx () {
	local a=$1
	shift
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/$a.sock" "$@" >"$OUT" 2>"$ERR"
}

# version_is NAME KEY N [VALUE]: getv of KEY on NAME gives version N (0:
# absent) and, when given, VALUE.
version_is () {
	tx "$1" getv "$2" || return 1
	if [ "$3" = 0 ]; then
		json_check "d == {\"code\": 3}"
	else
		json_check "d[\"code\"] == 0 and d[\"version\"] == $3" &&
		{ [ $# -lt 4 ] || json_check "d[\"value\"] == \"$4\""; }
	fi
}

# ge A B WHAT: A >= B (integers), else say so.
ge () {
	[ "$1" -ge "$2" ] && return 0
	say "$3: $1 < $2"
	return 1
}

# size_of NAME: the size of NAME.data (unchanged when nothing was written).
size_of () { stat -c %s "$1.data"; }

test_expect_success 'setup: agents A and B' '
	[ -n "$CS_WIRE" ] &&
	make_config A B &&
	start_cluster &&
	expect_ok put -c "$CONF" A gone old
'

test_expect_success 'put, add twice and del in one transaction: replies the adds in order' '
	tx A txn put a x add n 5 add n 2 del gone &&
	json_check "d == {\"code\": 0, \"adds\": [5, 7]}" &&
	expect_eq "$(cs get -c "$CONF" A a)" x "a" &&
	expect_eq "$(cs get -c "$CONF" A n)" 7 "n" &&
	expect_exit 1 get -c "$CONF" A gone && grep -q "not found" "$ERR" &&
	version_is A a 1 x && version_is A n 2 7 && version_is A gone 0
'

test_expect_success 'a failed condition changes nothing and names its op' '
	s=$(size_of A) &&
	tx A txn put a y add n 1 eq a nope &&
	json_check "d[\"code\"] == 4 and d[\"op\"] == 2" &&
	json_check "\"A:a holds another value\" in d[\"reason\"]" &&
	tx A txn absent a put a z &&
	json_check "d[\"code\"] == 4 and d[\"op\"] == 0 and \"is present\" in d[\"reason\"]" &&
	tx A txn ver n 1 add n 1 &&
	json_check "d[\"code\"] == 4 and \"is at version 2, not 1\" in d[\"reason\"]" &&
	version_is A a 1 x && version_is A n 2 7 &&
	expect_eq "$(size_of A)" "$s" "A.data size"
'

test_expect_success 'conditions that hold: the writes apply' '
	tx A txn eq a x absent gone ver n 2 ver missing 0 put a y add n 1 &&
	json_check "d == {\"code\": 0, \"adds\": [8]}" &&
	version_is A a 2 y && version_is A n 3 8
'

test_expect_success 'an add sees the writes before it in the same transaction' '
	tx A txn put c 10 add c 5 del c add c 3 &&
	json_check "d == {\"code\": 0, \"adds\": [15, 3]}" &&
	version_is A c 1 3
'

test_expect_success 'malformed, refused and failing ops change nothing, one line each' '
	s=$(size_of A) &&
	tx A txn put a q kind 99 &&
	json_check "d[\"code\"] == 2 and \"op 1: unknown kind 99\" in d[\"message\"]" &&
	tx A txn put a q sendn B 16777217 &&
	json_check "d[\"code\"] == 2 and \"op 1: send payload is 16777217 bytes, at most 16777216\" in d[\"message\"]" &&
	tx A txn put a q add a 1 &&
	json_check "d[\"code\"] == 1 and \"op 1: A:a\" in d[\"message\"] and \"not an integer\" in d[\"message\"]" &&
	tx A txn put a q add n 9223372036854775807 &&
	json_check "d[\"code\"] == 1 and \"overflow\" in d[\"message\"]" &&
	json_check "\"\\n\" not in d[\"message\"]" &&
	version_is A a 2 y && version_is A n 3 8 &&
	expect_eq "$(size_of A)" "$s" "A.data size"
'

test_expect_success 'a request id: the retry gets the first reply, applied once; another request with it is refused' '
	id=0123456789abcdef0123456789abcdef &&
	tx A txn --id $id add n 10 put r 1 &&
	json_check "d == {\"code\": 0, \"adds\": [18]}" &&
	tx A txn --id $id add n 10 put r 1 &&
	json_check "d == {\"code\": 0, \"adds\": [18]}" &&
	version_is A n 4 18 &&
	tx A txn --id $id add n 11 &&
	json_check "d[\"code\"] == 2 and \"already used\" in d[\"message\"]" &&
	tx A txn --id fedcba9876543210fedcba9876543210 add x 1 add y 1 add z 1 &&
	json_check "d[\"code\"] == 2 and \"at most 2 adds\" in d[\"message\"]" &&
	version_is A x 0
'

test_expect_success 'versions and the request id survive a restart and a compaction' '
	stop_cluster && start_cluster &&
	version_is A a 2 y && version_is A n 4 18 && version_is A c 1 3 &&
	expect_ok compact -c "$CONF" --json &&
	version_is A a 2 y && version_is A n 4 18 &&
	expect_ok dump A.data --json &&
	json_check "d[\"versions\"][\"a\"] == 2 and d[\"versions\"][\"n\"] == 4 and d[\"keys\"][\"n\"] == \"18\"" &&
	stop_cluster && start_cluster &&
	version_is A a 2 y && version_is A n 4 18 &&
	tx A txn --id 0123456789abcdef0123456789abcdef add n 10 put r 1 &&
	json_check "d == {\"code\": 0, \"adds\": [18]}" &&
	version_is A n 4 18
'

test_expect_success 'versions come back with a restore' '
	take_snapshot &&
	tx A txn put a later add n 1 &&
	version_is A a 3 later &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	version_is A a 2 y && version_is A n 4 18
'

test_expect_success 'a client that disconnects mid-transaction leaves nothing' '
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/A.sock" partial "$TEST_DIR/.half" &
	P=$! && BG_PIDS="$BG_PIDS $P" &&
	wait_for 20 test -e "$TEST_DIR/.half" &&
	kill -KILL $P && wait_for 10 pid_gone $P &&
	version_is A half 0 && version_is A other 0 &&
	tx A txn put half 1 && version_is A half 1 1
'

test_expect_success 'kill -9 under a stream of transactions: each whole or absent' '
	expect_ok put -c "$CONF" B from 0 &&
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/B.sock" loop 100000 >loop.json &
	L=$! && BG_PIDS="$BG_PIDS $L" &&
	wait_for 30 eval "[ \$(cs get -c \"\$CONF\" B to 2>/dev/null || echo 0) -ge 200 ]" &&
	pid=$(agent_pid B) && kill -KILL "$pid" &&
	wait_for 10 pid_gone "$pid" && wait_for 30 pid_gone "$L" &&
	start_cluster &&
	from=$(cs get -c "$CONF" B from) && to=$(cs get -c "$CONF" B to) &&
	done=$(json_get "d[\"done\"]" loop.json) &&
	say "acknowledged $done, applied $to" &&
	expect_eq "$((from + to))" 0 "from + to" &&
	ge "$to" "$done" "applied vs acknowledged" &&
	ge "$done" 200 "acknowledged" &&
	version_is B to "$to"
'

test_expect_success 'stop' '
	stop_cluster
'

test_done
