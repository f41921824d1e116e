#!/bin/bash
# status: each agent's pid, file, records, channels (sent, applied, acked,
# queued, held) and the snapshot in progress with its phase, as text and
# as JSON parsed back.
. "$(dirname "$0")/lib.sh"

# The JSON checks, outside the test bodies so that they can quote freely.
idle_json_ok () {
	json_check '[a["agent"] for a in d] == ["A", "B"]' &&
	json_check "d[0]['pid'] == $(agent_pid A) and d[1]['pid'] == $(agent_pid B)" &&
	json_check "d[0]['size'] == $(stat -c %s A.data)" &&
	json_check "d[0]['data'] == '$TEST_DIR/A.data'" &&
	json_check 'd[0]["records"] == 2 and d[0]["uptime_s"] >= 0' &&
	json_check 'd[0]["writes"] == 2 and d[0]["syncs"] >= 1' &&
	json_check 'd[0]["held"] == ["B"] and d[1]["held"] == []' &&
	json_check '[{k: v for k, v in o.items() if k != "stalled_ms"}
	    for o in d[0]["out"]] == [{"dst": "B", "sent": 1, "acked": 0,
	    "queued": 1, "unacked": 0, "up": True, "held": True,
	    "diverged": False}]' &&
	json_check '(d[0]["out"][0]["stalled_ms"] >= 0 and
	    d[1]["out"][0]["stalled_ms"] == 0)' &&
	json_check 'd[1]["in"] == [{"src": "A", "applied": 0, "queued": 0,
	    "up": True, "diverged": False}]' &&
	json_check 'd[0]["snapshot"] is None and d[1]["snapshot"] is None'
}

# While A->B is held, A records at once and waits for B's marker on B->A;
# B has joined but has no marker yet.
in_progress_json_ok () {
	json_check 'd[0]["snapshot"]["id"] > 0' &&
	json_check 'd[0]["snapshot"]["phase"] == "recording"' &&
	json_check 'd[1]["snapshot"] == {"id": d[0]["snapshot"]["id"],
	    "phase": "joined"}' &&
	json_check 'd[0]["out"][0]["queued"] == 2'
}

drained () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st" &&
	json_check '(d[0]["out"][0]["acked"] == 1 and d[0]["snapshot"] is None
	    and d[1]["snapshot"] is None)' "$TEST_DIR/.st"
}

test_expect_success 'setup: A=100, B=50, A->B held with a transfer of 10 on it' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10
'

test_expect_success 'status text: a summary line per agent, a line per channel' '
	expect_ok status -c "$CONF" &&
	grep -Eq "^A +up +pid=$(agent_pid A) +uptime=[0-9]+s +size=[0-9]+ +records=2 +syncs=[0-9]+ +writes=2 +snapshot=none$" "$OUT" &&
	grep -Eq "^ +A->B +sent=1 +acked=0 +queued=1 +unacked=0 +up +held$" "$OUT" &&
	grep -Eq "^ +B->A +applied=0 +queued=0 +up$" "$OUT" &&
	grep -Eq "^B +up +pid=$(agent_pid B) .* records=1 .* snapshot=none$" "$OUT" &&
	grep -Eq "^ +A->B +applied=0 +queued=0 +up$" "$OUT"
'

test_expect_success 'status --json: the same numbers, parsed back' '
	expect_ok status -c "$CONF" --json &&
	idle_json_ok
'

test_expect_success 'status shows the snapshot in progress and each agent'"'"'s phase' '
	snapshot_bg --initiator A --timeout 60 &&
	wait_for 20 agent_phase_is A recording &&
	expect_ok status -c "$CONF" --json &&
	in_progress_json_ok
'

test_expect_success 'after release: the snapshot completes, the channel drains' '
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	wait_for 20 drained &&
	expect_ok status -c "$CONF" --json &&
	json_check "d[1][\"in\"][0][\"applied\"] == 1 and d[0][\"held\"] == []"
'

test_expect_success 'an agent down: exit 1, up false with the reason, the other still shown' '
	pid=$(agent_pid B) && kill -TERM "$pid" &&
	wait_for 10 eval "! kill -0 $pid" &&
	expect_exit 1 status -c "$CONF" --json &&
	json_check "d[1][\"up\"] is False and \"not running\" in d[1][\"error\"]" &&
	json_check "d[0][\"up\"] is True" &&
	expect_exit 1 status -c "$CONF" &&
	grep -Eq "^B +down +\(agent B is not running" "$OUT"
'

test_done
