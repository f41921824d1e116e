#!/bin/bash
# Faults of one snapshot among several in flight affect only that one: a
# coordinator killed with -9, one stopped with SIGTERM and one that times
# out each leave their own snapshot aborted and forgotten by the agents,
# while the others keep their recordings and complete with the right cut.
. "$(dirname "$0")/lib.sh"

declare -A ID_OF UID_OF
for t in keep killed termed late; do ID_OF[$t]=0 UID_OF[$t]="" SNAP_PIDS[$t]=""; done

# start_one TAG INITIATOR TIMEOUT: start it and wait until every agent
# takes part in it; ID_OF and UID_OF from the manifest.
start_one () {
	local k
	cs status -c "$CONF" --json >"$TEST_DIR/.st" &&
	k=$(json_get "len(d[0][\"snapshots\"])" "$TEST_DIR/.st") &&
	snapshot_bg_as "$1" -r "$REPO" --initiator "$2" --timeout "$3" &&
	wait_for 20 snapshots_at_least $((k + 1)) &&
	ID_OF[$1]=$(sql "select max(id) from snapshots") &&
	UID_OF[$1]=$(sql "select uid from snapshot_uids where snapshot_id = ${ID_OF[$1]}") &&
	[ ${#UID_OF[$1]} -eq 32 ]
}

# The identities of the snapshots agent number $1 (0-based) takes part in.
agent_uids () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st" &&
	    json_get "sorted(s[\"uid\"] for s in d[$1][\"snapshots\"])" "$TEST_DIR/.st"
}

# Every agent takes part in exactly the snapshots TAGS...
agents_in () {
	local t want
	want=$(for t in "$@"; do echo "${UID_OF[$t]}"; done | sort |
	    python3 -c 'import json, sys; print(json.dumps([l.strip() for l in sys.stdin if l.strip()], separators=(",", ":")))') &&
	[ "$(agent_uids 0)" = "$want" ] && [ "$(agent_uids 1)" = "$want" ] &&
	    [ "$(agent_uids 2)" = "$want" ]
}

test_expect_success 'setup: A=100, B=50, C=0; A->B held with 10 on it; three snapshots' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=50 C=0 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	start_one keep B 60 &&
	start_one killed C 60 &&
	start_one termed A 60 &&
	agents_in keep killed termed
'

test_expect_success 'kill -9 of one coordinator: only its snapshot is forgotten' '
	kill -KILL "$(cutsnap_pid "${SNAP_PIDS[killed]}")" &&
	wait_for 10 agents_in keep termed &&
	kill -0 "${SNAP_PIDS[keep]}" && kill -0 "${SNAP_PIDS[termed]}"
'

test_expect_success 'SIGTERM to another: aborted with its reason, the rest untouched' '
	kill -TERM "$(cutsnap_pid "${SNAP_PIDS[termed]}")" &&
	wait "${SNAP_PIDS[termed]}"; rc=$?
	expect_eq "$rc" 1 "exit status of the interrupted one" &&
	expect_eq "$(snap_status "${ID_OF[termed]}")" aborted "its status" &&
	wait_for 10 agents_in keep &&
	kill -0 "${SNAP_PIDS[keep]}"
'

test_expect_success 'a fourth that times out is aborted on its own' '
	start_one late C 2 &&
	agents_in keep late &&
	wait "${SNAP_PIDS[late]}"; rc=$?
	expect_eq "$rc" 1 "exit status of the timed-out one" &&
	expect_eq "$(snap_status "${ID_OF[late]}")" aborted "its status" &&
	sql "select reason from snapshots where id = ${ID_OF[late]}" | grep -q "timed out" &&
	wait_for 10 agents_in keep &&
	kill -0 "${SNAP_PIDS[keep]}"
'

test_expect_success 'release: the one left completes with the 10 in flight' '
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait_as keep &&
	expect_eq "$SNAP_ID" "${ID_OF[keep]}" "its id" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(msg_sum "$SNAP_ID")" 10 "amount in flight" &&
	expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "total"
'

test_expect_success 'the killed one is listed aborted, never complete; nothing runs' '
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d] == [\"complete\", \"aborted\", \"aborted\", \"aborted\"]" &&
	json_check "[s[\"id\"] for s in d if s[\"status\"] == \"complete\"] == [${ID_OF[keep]}]" &&
	expect_exit 1 verify -r "$REPO" "${ID_OF[killed]}" &&
	wait_for 10 agents_idle
'

test_expect_success 'restore the one that completed: 150' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "${ID_OF[keep]}" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 150 "restored total"
'

test_done
