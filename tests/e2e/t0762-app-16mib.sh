#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# An application message of the largest payload, 16 MiB, end to end: sent,
# received whole, consumed; one in the inbox and one in flight at a cut
# (whose report to the coordinator then outgrows one frame) are recorded,
# verified and restored whole, once each. 16 MiB + 1 byte is refused with
# a one-line reason naming the cap, and nothing is sent.
. "$(dirname "$0")/lib.sh"

MAX=16777216
CS_WIRE=$(cs --version --json | json_get 'd["protocol"]' /dev/stdin)
export CS_WIRE

big () { timeout 120 python3 "$_lib_dir/bigmsg.py" "$CONF" "$@" >"$OUT" 2>"$ERR"; }
# sha SEED: the SHA-256 of the MAX bytes bigmsg.py sends for SEED.
sha () {
	python3 -c 'import hashlib, random, sys
print(hashlib.sha256(random.Random(int(sys.argv[2])).randbytes(int(sys.argv[1]))).hexdigest())' "$MAX" "$1"
}
# got SEQ SEED: the message received is seq SEQ from A, whole.
got () { json_check "d[\"from\"] == \"A\" and d[\"seq\"] == $1 and d[\"len\"] == $MAX and d[\"sha256\"] == \"$(sha "$2")\""; }
sent_is () { [ "$(status_get "[o[\"sent\"] for a in d if a[\"agent\"] == \"A\" for o in a[\"out\"]][0]")" = "$1" ]; }
empty () { big recv B && json_check 'd == {}'; }

test_expect_success 'setup: A and B' '
	[ -n "$CS_WIRE" ] &&
	make_config A B &&
	expect_ok init -r "$REPO" &&
	start_cluster
'

test_expect_success 'a 16 MiB payload is sent, received whole and consumed' '
	big send A B $MAX 1 && json_check "d[\"ok\"]" &&
	big recv B consume && got 1 1 &&
	sent_is 1
'

test_expect_success '16 MiB + 1 is refused in one line naming the cap; nothing is sent' '
	big send A B $((MAX + 1)) 1 &&
	json_check "not d[\"ok\"] and d[\"error\"] == \"ValueError\" and \"at most $MAX\" in d[\"message\"]" &&
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/A.sock" txn sendn B $((MAX + 1)) >"$OUT" &&
	json_check "d[\"code\"] == 2 and d[\"message\"] == \"transaction op 0: send payload is $((MAX + 1)) bytes, at most $MAX; nothing was done\"" &&
	sent_is 1
'

test_expect_success 'a snapshot with 16 MiB in the inbox and 16 MiB in flight verifies' '
	big send A B $MAX 2 && json_check "d[\"ok\"]" &&
	big recv B && got 2 2 &&
	expect_ok channel -c "$CONF" hold A B &&
	big send A B $MAX 3 && json_check "d[\"ok\"]" &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	expect_ok show -r "$REPO" "$SNAP_ID" --json &&
	json_check "sum(len(c.get(\"messages\", [])) for c in d[\"channels\"]) == 1" &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'both consumed live, then restored: each back whole, once' '
	big recv B consume && got 2 2 &&
	big recv B consume && got 3 3 &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	big recv B consume && got 2 2 &&
	big recv B consume && got 3 3 &&
	empty &&
	stop_cluster
'

test_done
