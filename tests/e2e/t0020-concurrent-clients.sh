#!/bin/bash
# Many clients at once (group commit): no overdraft, no lost update, every
# acknowledged change is there.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A=100, B=0, C=0' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=0 C=0
'

test_expect_success '30 concurrent transfers of 10 from A: exactly 10 succeed, A never below 0' '
	pids=""
	for i in $(seq 1 30); do
		if [ $((i % 2)) = 0 ]; then d=B; else d=C; fi
		( cs transfer -c "$CONF" A:bal $d:bal 10 >/dev/null 2>&1; echo $? >rc.$i ) &
		pids="$pids $!"
	done
	for p in $pids; do wait $p; done
	ok=$(cat rc.* | grep -cx 0) && bad=$(cat rc.* | grep -cx 1) &&
	expect_eq "$ok/$bad" "10/20" "succeeded/refused" &&
	expect_eq "$(bal A)" 0 "A" &&
	wait_for 10 total_is 100 &&
	expect_eq "$(( $(bal B) + $(bal C) ))" 100 "B + C"
'

test_expect_success '40 concurrent adds of 1 to one key: 40' '
	pids=""
	for i in $(seq 1 40); do
		cs add -c "$CONF" B hits 1 >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait $p || return 1; done
	expect_ok get -c "$CONF" B hits &&
	expect_eq "$(cat "$OUT")" 40 "hits"
'

test_expect_success 'every add answered a distinct value 1..40' '
	rm -f add.out &&
	pids=""
	for i in $(seq 1 40); do
		cs add -c "$CONF" C n 1 >>add.out 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait $p || return 1; done
	expect_eq "$(sort -n add.out | uniq | tr "\n" " ")" "$(seq 1 40 | tr "\n" " ")" "answers"
'

test_expect_success 'after kill -9 every acknowledged add is still there' '
	p=$(agent_pid C) && kill -KILL $p &&
	wait_for 10 pid_gone $p &&
	start_cluster &&
	expect_ok get -c "$CONF" C n &&
	expect_eq "$(cat "$OUT")" 40 "C n after kill -9" &&
	expect_ok get -c "$CONF" B hits &&
	expect_eq "$(cat "$OUT")" 40 "B hits"
'

test_expect_success 'concurrent snapshots and transfers in both directions: totals hold' '
	set_balances A=500 B=500 C=500 &&
	pids=""
	for i in $(seq 1 20); do
		cs transfer -c "$CONF" A:bal B:bal 7 >/dev/null 2>&1 &
		pids="$pids $!"
		cs transfer -c "$CONF" B:bal A:bal 5 >/dev/null 2>&1 &
		pids="$pids $!"
		cs transfer -c "$CONF" C:bal A:bal 3 >/dev/null 2>&1 &
		pids="$pids $!"
	done
	take_snapshot --initiator C || return 1
	for p in $pids; do wait $p; done
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	wait_for 10 total_is 1500 &&
	expect_eq "$(bal A)/$(bal B)/$(bal C)" "$((500 - 140 + 100 + 60))/$((500 + 140 - 100))/$((500 - 60))" "A/B/C"
'

test_done
