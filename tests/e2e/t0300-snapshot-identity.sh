#!/bin/bash
# Snapshot identities need no clock: a coordinator whose wall clock was
# stepped back a day (the faultfs shim's FAULTFS_CLOCK_SHIFT) still has
# every agent join, and its snapshot completes with a message in flight.
# Each snapshot's identity (128 random bits) is in the manifest: ls --json
# and show --json print it, status --json shows it while it runs, and no
# two are alike, across repositories too.
. "$(dirname "$0")/lib.sh"

FAULTFS=${FAULTFS:-$_lib_dir/../../build/faultfs.so}
if [ ! -f "$FAULTFS" ]; then
	echo "Bail out! no fault shim at $FAULTFS (run make test, or set FAULTFS)"
	exit 1
fi

FIRST="" STEPPED="" LIVE_UID="" A1="" A2=""

# stepped SECONDS CMD...: CMD with the wall clock of every cutsnap it
# starts shifted by SECONDS (a sanitizer build accepts the shim loaded
# before its runtime).
stepped () {
	local shift=$1
	shift
	LD_PRELOAD=$FAULTFS FAULTFS_CLOCK_SHIFT=$shift \
	    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" "$@"
}

# The identity ls --json gives snapshot $1 of repository $2.
uid_of () {
	cs ls -r "${2:-$REPO}" --json >"$TEST_DIR/.ls" &&
	    json_get "[s['uid'] for s in d if s['id'] == $1][0]" "$TEST_DIR/.ls"
}

test_expect_success 'setup: A=100, B=50, C=0; a first snapshot on the real clock' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=50 C=0 &&
	take_snapshot --initiator A --timeout 20 &&
	FIRST=$SNAP_ID
'

test_expect_success 'the shim steps the clock back: date says a day earlier' '
	now=$(date +%s) &&
	then=$(stepped -86400 date +%s) &&
	[ $((now - then)) -ge 86000 ] && [ $((now - then)) -le 86800 ]
'

test_expect_success 'clock stepped back a day: every agent joins, status shows the identity' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	stepped -86400 snapshot_bg --initiator B --timeout 30 &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok status -c "$CONF" --json &&
	json_check "len(d[1][\"snapshots\"]) == 1 and d[1][\"snapshots\"][0][\"phase\"] == \"recording\"" &&
	LIVE_UID=$(json_get "d[1][\"snapshots\"][0][\"uid\"]") &&
	json_check "all(a[\"snapshots\"][0][\"uid\"] == \"$LIVE_UID\" for a in d)"
'

test_expect_success 'release: the stepped snapshot completes with the 10 in flight' '
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	[ "$SNAP_ID" -gt "$FIRST" ] &&
	STEPPED=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$STEPPED" &&
	expect_eq "$(msg_sum "$STEPPED")" 10 "amount in flight" &&
	expect_eq "$(snap_status "$STEPPED")" complete "status"
'

test_expect_success 'the manifest keeps the identity status showed; ls and show print it' '
	expect_eq "$(uid_of "$STEPPED")" "$LIVE_UID" "identity in ls --json" &&
	expect_ok show -r "$REPO" "$STEPPED" --json &&
	json_check "d[\"snapshot\"][\"uid\"] == \"$LIVE_UID\"" &&
	printf "%s" "$LIVE_UID" | grep -Eq "^[0-9a-f]{32}$"
'

test_expect_success 'a snapshot with the clock stepped forward, then back again: both complete' '
	expect_ok transfer -c "$CONF" B:bal C:bal 5 &&
	stepped 86400 take_snapshot --initiator C --timeout 20 &&
	A1=$SNAP_ID &&
	stepped -172800 take_snapshot --initiator A --timeout 20 &&
	A2=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$A1" &&
	expect_ok verify -r "$REPO" "$A2"
'

test_expect_success 'a second repository: its snapshot 1 has an identity of its own' '
	take_snapshot --initiator B --timeout 20 &&
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/repo2" --initiator C --timeout 20 &&
	expect_eq "$(cat "$OUT")" 1 "id in repo2" &&
	R2=$(uid_of 1 "$TEST_DIR/repo2") &&
	printf "%s" "$R2" | grep -Eq "^[0-9a-f]{32}$" &&
	[ "$R2" != "$(uid_of 1)" ]
'

test_expect_success 'every identity is 32 hex digits and none repeats' '
	expect_ok ls -r "$REPO" --json &&
	n=$(json_get "len(d)") &&
	[ "$n" = 5 ] &&
	json_check "all(len(s[\"uid\"]) == 32 and int(s[\"uid\"], 16) > 0 for s in d)" &&
	json_check "len(set(s[\"uid\"] for s in d)) == len(d)" &&
	u=$(uid_of 1 "$TEST_DIR/repo2") &&
	json_check "\"$u\" not in [s[\"uid\"] for s in d]"
'

test_expect_success 'restore the stepped snapshot: the conserved total 150' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$STEPPED" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 150 "restored total" &&
	expect_eq "$(dump_val "$TEST_DIR/B.data" bal)" 60 "B with the 10 replayed"
'

test_done
