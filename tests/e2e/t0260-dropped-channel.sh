#!/bin/bash
# A channel dropped from the config while it holds a message: the agent
# refuses that config at start, naming the channel and the count; a
# coordinator whose config lacks the channel refuses to commit the cut;
# verify derives the same from the recorded files. Before, the cut was
# committed complete and verified while 10 of 200 were missing.
. "$(dirname "$0")/lib.sh"

# small_config: CONF without the channel A->B (channels = B>A).
small_config () { CHANNELS="B>A" make_config A B && cp "$CONF" "$SMALL"; }
full_config () { cp "$FULL" "$CONF"; }

test_expect_success 'setup: A=100, B=100, full mesh' '
	make_config A B &&
	FULL=$TEST_DIR/full.ini && SMALL=$TEST_DIR/small.ini &&
	cp "$CONF" "$FULL" &&
	start_cluster &&
	set_balances A=100 B=100
'

test_expect_success 'a message in flight on A->B, then the config drops A->B: start refuses, names the channel and the count' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	stop_cluster &&
	small_config &&
	expect_error 1 start -c "$CONF" --timeout 5 &&
	err_matches "A->B" && err_matches "1 unacknowledged message" &&
	{ cs stop -c "$CONF" >/dev/null 2>&1; true; } &&
	expect_error 2 agent -c "$CONF" --name A &&
	err_matches "^cutsnap: agent: A: channel A->B is not in config " &&
	err_matches "put the channel back in the config"
'

test_expect_success 'the channel put back, it drains; then the config without it starts' '
	{ cs stop -c "$CONF" >/dev/null 2>&1; true; } &&
	full_config &&
	start_cluster &&
	wait_bal B 110 &&
	expect_eq "$(total)" 200 "total" &&
	stop_cluster &&
	small_config &&
	start_cluster &&
	take_snapshot --initiator B &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok show -r "$REPO" "$SNAP_ID" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == 200" &&
	stop_cluster
'

# A with the full config (it may keep its message for A->B), B and the
# coordinator without A->B: a cut that would drop the message in flight.
test_expect_success 'agents with different configs: the coordinator refuses the cut that drops A->B' '
	full_config &&
	start_cluster &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	stop_cluster &&
	mkdir -p run &&
	{ "$CUTSNAP" agent -c "$FULL" --name A >>run/A.log 2>&1 & } &&
	{ "$CUTSNAP" agent -c "$SMALL" --name B >>run/B.log 2>&1 & } &&
	wait_for 10 cs status -c "$SMALL" &&
	_record_agent_pids &&
	expect_error 1 snapshot -c "$SMALL" -r "$REPO" --initiator B --timeout 20 &&
	err_matches "inconsistent" && err_matches "channel A->B" &&
	err_matches "1 message is in flight" &&
	ID=$(sql "select max(id) from snapshots") &&
	expect_eq "$(snap_status "$ID")" aborted "status of snapshot $ID" &&
	sql "select reason from snapshots where id = $ID" | grep -q "A->B"
'

test_expect_success 'verify finds the same from the recorded files (config edited in the manifest)' '
	expect_ok stop -c "$FULL" &&
	full_config &&
	start_cluster &&
	wait_bal B 120 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	snapshot_bg --initiator B --timeout 20 &&
	wait_recorded A &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(msg_count "$SNAP_ID" A B)" 1 "messages on A->B" &&
	sql "update snapshots set config = replace(config, \"[cluster]\",
	    \"[cluster]\" || char(10) || \"channels = B>A\")
	    where id = $SNAP_ID;
	    delete from messages where snapshot_id = $SNAP_ID and src = \"A\";
	    delete from channels where snapshot_id = $SNAP_ID and src = \"A\";" &&
	expect_exit 1 verify -r "$REPO" "$SNAP_ID" &&
	grep -q "^problem: snapshot $SNAP_ID: channel A->B: not a channel of the config, but 1 message is in flight on it (sent 3, applied 2)" "$OUT" || { show_out; false; }
'

# An agent dropped from the config altogether while a message to it is in
# flight: the sender refuses the config the same way.
test_expect_success 'an agent removed from the config with a message in flight to it: refused' '
	expect_ok stop -c "$CONF" &&
	mkdir -p three &&
	printf "[cluster]\nrun_dir = run\n\n[agent A]\ndata = a.data\n\n[agent C]\ndata = c.data\n" >three/ac.ini &&
	printf "[agent B]\ndata = b.data\n" | cat three/ac.ini - >three/abc.ini &&
	expect_ok start -c three/abc.ini &&
	expect_ok put -c three/abc.ini A bal 100 &&
	expect_ok channel -c three/abc.ini hold A B &&
	expect_ok transfer -c three/abc.ini A:bal B:bal 7 &&
	expect_ok transfer -c three/abc.ini A:bal B:bal 3 &&
	expect_ok stop -c three/abc.ini &&
	expect_error 2 agent -c three/ac.ini --name A &&
	err_matches "channel A->B is not in config .*ac.ini, but data file .*a.data holds 2 unacknowledged messages on it"
'

test_done
