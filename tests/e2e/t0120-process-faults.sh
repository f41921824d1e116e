#!/bin/bash
# Process faults during a snapshot: an agent killed before or after it
# recorded and while the coordinator copies its recorded state; the
# coordinator killed while it copies; a hung coordinator; an agent that
# restarted mid-snapshot. Each such snapshot ends aborted (never complete),
# the agents drop its partial state, and the cluster carries on with
# nothing lost or applied twice. A channel broken mid-snapshot loses
# nothing either: its markers are written again and the snapshot completes.
. "$(dirname "$0")/lib.sh"

# The cutsnap process of the background snapshot (a kill -9 must hit the
# coordinator itself, not timeout).
snap_child () { cutsnap_pid "$SNAP_PID"; }

agent_in () { agent_phase_is "$@"; }	# agent_in NAME PHASE-REGEX

# listed ID STATUS: ls --json lists snapshot ID with STATUS.
listed () {
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d if s[\"id\"] == $1] == [\"$2\"]"
}

all_reported () {
	local n
	for n in $AGENTS; do agent_in "$n" reported || return 1; done
}

last_id () { sql "select max(id) from snapshots"; }
reason_of () { sql "select reason from snapshots where id = $1"; }

# The snapshot in the background is over: exit status 1, recorded as
# aborted, the reason matching $1.
expect_aborted () {
	local rc id
	wait "$SNAP_PID"; rc=$?
	id=$(last_id)
	expect_eq "$rc" 1 "snapshot exit status" &&
	expect_eq "$(snap_status "$id")" aborted "status of snapshot $id" &&
	{ reason_of "$id" | grep -Eq -- "$1" ||
	    { say "reason: $(reason_of "$id")"; false; }; }
}

# Every agent is back, idle, and the money is all there.
recovered () {
	start_cluster &&
	wait_for 15 total_is 3000 &&
	wait_for 15 agents_idle
}

test_expect_success 'setup: A, B, C with 1000 each; a first snapshot' '
	make_config A B C &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	take_snapshot &&
	FIRST=$SNAP_ID
'

test_expect_success 'agent killed before it recorded: aborted, cluster recovers' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok channel -c "$CONF" hold C B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	snapshot_bg --initiator A --timeout 20 &&
	wait_recorded A &&
	agent_in B joined &&
	kill -KILL "$(agent_pid B)" &&
	expect_aborted "lost agent B|agent B" &&
	expect_ok channel -c "$CONF" release A B &&
	expect_ok channel -c "$CONF" release C B &&
	recovered &&
	expect_eq "$(bal B)" 1010 "B after the restart (the 10 arrived once)"
'

test_expect_success 'agent killed after it recorded, before it reported: aborted' '
	expect_ok channel -c "$CONF" hold C B &&
	snapshot_bg --initiator A --timeout 20 &&
	wait_for 10 agent_in B recording &&
	kill -KILL "$(agent_pid B)" &&
	expect_aborted "lost agent B|agent B" &&
	expect_ok channel -c "$CONF" release C B &&
	recovered
'

test_expect_success 'agent killed while the coordinator copies its state: aborted' '
	export CUTSNAP_FAULT=coord-copy-delay:15000 &&
	snapshot_bg --initiator B --timeout 45 &&
	unset CUTSNAP_FAULT &&
	wait_for 10 all_reported &&
	snapshot_running &&
	kill -KILL "$(agent_pid C)" &&
	expect_aborted "lost agent C while its recorded state was being copied" &&
	listed "$(last_id)" aborted &&
	recovered
'

test_expect_success 'coordinator killed while it copies: ls shows it stale, the next writer aborts it' '
	export CUTSNAP_FAULT=coord-copy-delay:15000 &&
	snapshot_bg --initiator C --timeout 45 &&
	unset CUTSNAP_FAULT &&
	wait_for 10 all_reported &&
	id=$(last_id) && child=$(snap_child) && [ -n "$child" ] &&
	kill -KILL "$child" &&
	{ wait "$SNAP_PID"; true; } &&
	expect_eq "$(snap_status "$id")" running "row before anyone looked" &&
	expect_ok ls -r "$REPO" --json &&
	json_check "[(s[\"status\"], s[\"stale\"]) for s in d if s[\"id\"] == $id] == [(\"running\", True)]" &&
	expect_eq "$(snap_status "$id")" running "row after ls (a reader)" &&
	expect_ok prune -r "$REPO" --dry-run &&
	listed "$id" aborted &&
	{ reason_of "$id" | grep -q "coordinator exited" ||
	    { say "reason: $(reason_of "$id")"; false; }; } &&
	wait_for 10 agents_idle &&
	expect_ok verify -r "$REPO" "$FIRST"
'

test_expect_success 'coordinator killed while agents record: aborted, next snapshot fine' '
	expect_ok channel -c "$CONF" hold B C &&
	expect_ok transfer -c "$CONF" B:bal C:bal 7 &&
	snapshot_bg --initiator A --timeout 20 &&
	wait_for 10 agent_in C recording &&
	id=$(last_id) && kill -KILL "$(snap_child)" &&
	{ wait "$SNAP_PID"; true; } &&
	expect_ok verify -r "$REPO" "$FIRST" &&
	expect_eq "$(snap_status "$id")" running "status after verify (a reader)" &&
	expect_ok forget -r "$REPO" --keep-within 1h --dry-run &&
	expect_eq "$(snap_status "$id")" aborted "status after forget (a writer)" &&
	wait_for 10 agents_idle &&
	expect_ok channel -c "$CONF" release B C &&
	take_snapshot --initiator B &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	wait_for 10 total_is 3000
'

test_expect_success 'a hung coordinator: a second snapshot completes beside its snapshot' '
	expect_ok channel -c "$CONF" hold A B &&
	snapshot_bg --initiator A --timeout 2 &&
	wait_recorded A &&
	HUNG=$SNAP_PID && HUNG_ID=$(last_id) &&
	kill -STOP "$(snap_child)" &&
	expect_ok channel -c "$CONF" release A B &&
	take_snapshot --initiator B --timeout 10 &&
	[ "$SNAP_ID" -gt "$HUNG_ID" ] &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'the agents forget the hung one on their own after its timeout' '
	wait_for 15 agents_idle &&
	take_snapshot --initiator B --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'woken up, the hung coordinator gives up: aborted' '
	SNAP_PID=$HUNG &&
	kill -CONT "$(snap_child)" &&
	wait "$SNAP_PID"; rc=$?
	expect_eq "$rc" 1 "exit status of the hung snapshot" &&
	expect_eq "$(snap_status "$HUNG_ID")" aborted "its status"
'

test_expect_success 'an agent restarted mid-snapshot forwards its markers, stays free' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok channel -c "$CONF" hold C B &&
	snapshot_bg --initiator A --timeout 20 &&
	wait_recorded A &&
	OLD=$(last_id) &&
	kill -KILL "$(agent_pid B)" &&
	expect_aborted "agent B" &&
	start_cluster &&
	expect_ok channel -c "$CONF" release A B &&
	expect_ok channel -c "$CONF" release C B &&
	wait_for 10 agents_idle &&
	take_snapshot --initiator A --timeout 10 &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	wait_for 10 total_is 3000
'

test_expect_success 'a channel broken mid-snapshot: its marker is written again, complete' '
	stop_cluster &&
	export CUTSNAP_FAULT=break-channel-at-marker &&
	start_cluster &&
	unset CUTSNAP_FAULT &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok transfer -c "$CONF" B:bal C:bal 6 &&
	snapshot_bg --initiator A --timeout 20 &&
	snapshot_wait &&
	expect_eq "$(snap_status "$SNAP_ID")" complete "status of the snapshot" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	wait_for 15 agents_idle &&
	wait_for 15 total_is 3000 &&
	take_snapshot --initiator C &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'no snapshot is listed running; every complete one verifies' '
	expect_eq "$(sql "select count(*) from snapshots where status = '\''running'\''")" 0 running &&
	n=0 &&
	for id in $(sql "select id from snapshots where status = '\''complete'\''"); do
		expect_ok verify -r "$REPO" "$id" || return 1
		n=$((n + 1))
	done &&
	[ "$n" -ge 5 ] || { say "only $n complete snapshots verified"; false; }
'

test_done
