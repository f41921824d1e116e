#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# kill -9 at each step of a compaction (CUTSNAP_FAULT=compact-kill:STEP):
# the data file is whole, either the old one (generation 0) or the new one
# (generation 1), with the same state (dump --json); the agent restarts on
# it, its unacknowledged sends are delivered once and the total is
# conserved.
. "$(dirname "$0")/lib.sh"

# gen FILE: the generation of a data file, from the agent's status.
a_gen () {
	cs status -c "$CONF" --json >st.json 2>/dev/null
	json_get "[a for a in d if a[\"agent\"] == \"A\"][0][\"compaction\"][\"generation\"]" st.json
}

a_down () { ! cs get -c "$CONF" A bal >/dev/null 2>&1; }

# same_state DUMP1 DUMP2: two dump --json outputs hold the same state: the
# same keys, values, sent and applied seqs; acked may only have grown
# (ACK records are hints written with the next batch) up to sent.
same_state () {
	python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
for k in a:
    if k != "acked" and a[k] != b.get(k):
        sys.exit("%s differs: %s / %s" % (k, a[k], b.get(k)))
for p, s in a["acked"].items():
    if not s <= b["acked"].get(p, 0) <= b["sent"].get(p, 0):
        sys.exit("acked %s: %d, then %d" % (p, s, b["acked"].get(p, 0)))
' "$1" "$2"
}

checked=0

# kill_at STEP GEN: A dies at STEP of a requested compaction; afterwards
# its file has generation GEN and the state it had before.
kill_at () {
	local step=$1 want=$2
	stop_cluster || return 1
	rm -f A.data B.data A.data.compact
	CUTSNAP_FAULT=compact-kill:$step start_cluster || return 1
	set_balances A=1000 B=1000 || return 1
	# History to drop, then three sends B has not acknowledged.
	for i in $(seq 1 30); do
		cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null || return 1
	done
	wait_for 10 eval '[ "$(cs get -c "$CONF" B bal)" = 1030 ]' || return 1
	cs channel -c "$CONF" hold A B >/dev/null || return 1
	for i in 1 2 3; do
		cs transfer -c "$CONF" A:bal B:bal 10 >/dev/null || return 1
	done
	cs dump A.data --json >before.json || return 1
	pid=$(agent_pid A) || return 1
	expect_exit 1 compact -c "$CONF" A || return 1
	wait_for 10 pid_gone "$pid" || return 1
	# What is on the disk now: one whole data file with the same state.
	cs dump A.data --json >killed.json || return 1
	same_state before.json killed.json || return 1
	cs start -c "$CONF" >/dev/null || return 1
	_record_agent_pids
	[ ! -e A.data.compact ] || { say "A.data.compact left"; return 1; }
	expect_eq "$(a_gen)" "$want" "generation after kill at $step" || return 1
	cs channel -c "$CONF" release A B >/dev/null || return 1
	wait_for 10 eval '[ "$(cs get -c "$CONF" B bal)" = 1060 ]' || return 1
	expect_eq "$(cs get -c "$CONF" A bal)" 940 "A bal" || return 1
	files_settle A.data B.data || return 1
	expect_eq "$(cs get -c "$CONF" B bal)" 1060 "B bal, settled" || return 1
	checked=$((checked + 1))
}

test_expect_success 'setup: two agents' '
	make_config A B &&
	start_cluster
'

test_expect_success 'kill -9 after the base is written: the old file, whole' '
	kill_at base 0
'

test_expect_success 'kill -9 with the new file whole, before the rename: the old file' '
	kill_at tail 0
'

test_expect_success 'kill -9 right after the rename: the new file, same state' '
	kill_at rename 1
'

test_expect_success 'kill -9 after the directory fsync: the new file, same state' '
	kill_at dir 1
'

test_expect_success 'four kill points checked' '
	expect_eq "$checked" 4 "kill points checked"
'

test_done
