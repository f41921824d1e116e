#!/bin/bash
# An existing data file of 0 bytes lost its content (a new file gets its
# header before the agent takes any request): the agent refuses to start
# on it (exit 2, one line naming the file and what to do) instead of
# starting afresh with every value zeroed; `start` says so; the file is
# left as it was. Restored from a snapshot (restore --agent), or removed,
# the agent starts; a data file that does not exist yet is still created.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A=100, B=50, a snapshot, the cluster stopped' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot &&
	stop_cluster
'

test_expect_success 'an emptied data file: the agent refuses to start, exit 2, naming it' '
	: >A.data &&
	expect_error 2 agent -c "$CONF" --name A &&
	err_matches "^cutsnap: agent: A: data file $TEST_DIR/A[.]data exists but is empty \(0 bytes\), so its content was lost: restore it \(cutsnap restore --agent A\) or, if agent A never ran, remove it to start afresh$" &&
	expect_eq "$(stat -c %s A.data)" 0 "A.data size"
'

test_expect_success 'start reports the refusal and fails' '
	expect_exit 1 start -c "$CONF" &&
	grep -q "A[.]data exists but is empty" "$ERR" "$OUT" &&
	expect_eq "$(stat -c %s A.data)" 0 "A.data size" &&
	expect_ok stop -c "$CONF"
'

test_expect_success 'restored with restore --agent A, the cluster starts with its total' '
	expect_ok restore -c "$CONF" -r "$REPO" --agent A &&
	start_cluster &&
	expect_eq "$(total)" 150 "total" &&
	stop_cluster
'

test_expect_success 'a data file that does not exist is created as before' '
	rm -f B.data &&
	start_cluster &&
	expect_eq "$(bal A)" 100 "A:bal" &&
	expect_exit 1 get -c "$CONF" B bal &&
	stop_cluster
'

test_done
