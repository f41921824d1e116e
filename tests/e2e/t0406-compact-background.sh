#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Compaction is background work: the rewrite thread (named cs-compact)
# runs under SCHED_IDLE at nice 19 with best-effort I/O at its lowest
# level, while the agent's loop keeps its normal policy; a compaction
# started once a sustained load runs still ends, on each agent, before
# the load does, and the load's total is conserved, with no failed
# request; the agents' state survives a restart and a snapshot taken
# after it verifies and restores to the same total.
. "$(dirname "$0")/lib.sh"

# comp NAME KEY: a field of NAME's compaction object in status --json.
comp () {
	cs status -c "$CONF" --json >cs.json 2>/dev/null || return 1
	json_get "[a for a in d if a[\"agent\"] == \"$1\"][0][\"compaction\"][\"$2\"]" cs.json
}

# stat_field PID TID N: field N of /proc/PID/task/TID/stat (1-based, as
# proc(5) numbers them; the name in parentheses counts as field 2).
stat_field () {
	local s
	s=$(cat "/proc/$1/task/$2/stat") || return 1
	echo "${s##*) }" | awk -v n="$3" '{ print $(n - 2) }'
}

# other_tasks PID: the thread ids of PID but its main thread.
other_tasks () {
	local t
	for t in /proc/"$1"/task/*; do
		t=${t##*/}
		[ "$t" != "$1" ] && echo "$t"
	done
}

history () {
	local i
	for i in $(seq 1 "$1"); do
		cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null &&
		cs put -c "$CONF" A note "$(head -c 3000 /dev/zero | tr '\0' x)$i" >/dev/null &&
		cs put -c "$CONF" B note "n$i" >/dev/null || return 1
	done
}

test_expect_success 'setup: three agents whose rewrite thread lasts 3 s' '
	make_config A B C &&
	CUTSNAP_FAULT=compact-slow:3000 start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	history 30
'

test_expect_success 'the rewrite thread runs at SCHED_IDLE, nice 19, I/O best-effort 7' '
	PID=$(agent_pid A) &&
	[ -n "$PID" ] || return 1
	cs compact -c "$CONF" A >comp.out 2>comp.err &
	COMP=$!
	BG_PIDS="$BG_PIDS $COMP"
	wait_for 10 eval "[ \"\$(comp A running)\" = true ]" &&
	wait_for 10 eval "[ -n \"\$(other_tasks $PID)\" ]" || return 1
	n=0
	for t in $(other_tasks "$PID"); do
		expect_eq "$(cat "/proc/$PID/task/$t/comm")" cs-compact "thread name" &&
		expect_eq "$(stat_field "$PID" "$t" 41)" 5 "policy (SCHED_IDLE)" &&
		expect_eq "$(stat_field "$PID" "$t" 19)" 19 "nice" &&
		expect_eq "$(ionice -p "$t")" "best-effort: prio 7" "I/O class" || return 1
		n=$((n + 1))
	done
	expect_eq "$n" 1 "threads checked" &&
	expect_eq "$(stat_field "$PID" "$PID" 41)" 0 "the loop policy (SCHED_OTHER)" &&
	expect_eq "$(stat_field "$PID" "$PID" 19)" 0 "the loop nice" &&
	wait "$COMP" &&
	expect_eq "$(comp A generation)" 1 "A generation after" &&
	wait_for 10 total_is 3000
'

test_expect_success 'setup: the same agents, the rewrite thread lasting 1 s' '
	stop_cluster &&
	CUTSNAP_FAULT=compact-slow:1000 start_cluster &&
	history 30 &&
	wait_for 10 total_is 3000
'

test_expect_success 'a compaction under sustained load ends, the total is conserved' '
	n=0
	for a in A B C; do
		eval "GEN_$a=\$(comp $a generation)" || return 1
	done
	SIZE0=$(stat -c %s A.data) || return 1
	cs load -c "$CONF" -s 5 --clients 8 --json >load.json 2>load.err &
	LOAD=$!
	BG_PIDS="$BG_PIDS $LOAD"
	wait_for 10 eval "[ \$(stat -c %s A.data) -gt $((SIZE0 + 65536)) ]" &&
	kill -0 "$LOAD" || return 1
	expect_ok compact -c "$CONF" A B C --json &&
	cp "$OUT" comp.json &&
	wait "$LOAD" || { cat load.err >&2; return 1; }
	expect_eq "$(json_get "d[\"conserved\"]" load.json)" true "load conserved" &&
	expect_eq "$(json_get "d[\"failures\"]" load.json)" 0 "load failures" &&
	XFERS=$(json_get "d[\"transfers\"]" load.json) &&
	[ "$XFERS" -gt 0 ] || { say "load made $XFERS transfers"; return 1; }
	for a in A B C; do
		eval "gen=\$GEN_$a" &&
		expect_eq "$(json_get "[x[\"ok\"] for x in d if x[\"agent\"] == \"$a\"][0]" comp.json)" true "$a compaction ok" &&
		expect_eq "$(json_get "[x[\"generation\"] for x in d if x[\"agent\"] == \"$a\"][0]" comp.json)" $((gen + 1)) "$a generation" &&
		expect_eq "$(comp $a generation)" $((gen + 1)) "$a generation in status" &&
		n=$((n + 1)) || return 1
	done
	expect_eq "$n" 3 "agents checked"
'

test_expect_success 'the state survives a restart; a snapshot restores it' '
	T=$(total) &&
	stop_cluster &&
	start_cluster &&
	expect_eq "$(total)" "$T" "total after restart" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	rm -f A.data B.data C.data &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	expect_eq "$(dump_total bal)" "$T" "restored total"
'

test_done
