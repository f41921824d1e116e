#!/bin/bash
# Restore is idempotent and exactly-once: twice gives identical files,
# a restore killed half-way and run again gives the same result, and a
# restore is refused while agents run.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: the seed snapshot (A=90, B=50, 10 in flight on A->B)' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	snapshot_in_flight 10 &&
	ID=$SNAP_ID &&
	expect_eq "$(msg_count "$ID" A B)" 1 "messages on A->B" &&
	wait_bal B 60
'

test_expect_success 'move money after the snapshot, then stop' '
	expect_ok transfer -c "$CONF" A:bal B:bal 25 &&
	wait_bal B 85 &&
	stop_cluster &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 65/85 "A/B"
'

test_expect_success 'restore: A=90, B=60' '
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B" &&
	cp A.data A.first && cp B.data B.first
'

test_expect_success 'restore again: byte-identical files, same totals' '
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	cmp A.data A.first &&
	cmp B.data B.first &&
	expect_eq "$(dump_total bal)" 150 "total"
'

# A restore killed with -9 while writing leaves its temp file behind, and
# pids wrap: temp names must not depend on the pid, and the next restore
# (which holds the data file's lock) removes what a killed one left.
test_expect_success 'temp files left by killed restores (every pid name, a link) do not block the next restore, which removes them' '
	max=$(cat /proc/sys/kernel/pid_max) &&
	[ "$max" -le 65536 ] || max=65536 &&
	python3 -c "import sys
for i in range(1, int(sys.argv[1]) + 1):
    open(\"A.data.tmp.%d\" % i, \"w\").close()" "$max" &&
	echo outside >victim &&
	ln -s "$TEST_DIR/victim" B.data.tmp.Zz9Zz9 &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	cmp A.data A.first &&
	cmp B.data B.first &&
	expect_eq "$(cat victim)" outside "the file a planted link names" &&
	expect_eq "$(ls -a | grep -c "\.tmp\.")" 0 "temp files left"
'

test_expect_success 'restore leaves no temporary files beside the data files' '
	ls -a >listing &&
	! grep -Ei "tmp" listing || { cat listing; return 1; }
'

test_expect_success 'restore while the agents run: exit 1, one line, files unchanged' '
	start_cluster &&
	files_settle A.data B.data &&
	cp A.data A.live && cp B.data B.live &&
	expect_error 1 restore -r "$REPO" "$ID" -c "$CONF" &&
	err_matches "running|stop" &&
	cmp A.data A.live &&
	cmp B.data B.live &&
	expect_eq "$(bal A)/$(bal B)" 90/60 "live A/B"
'

test_expect_success 'restore while only one agent runs: refused, files unchanged' '
	pid=$(agent_pid A) && [ -n "$pid" ] &&
	kill -TERM $pid &&
	wait_for 10 pid_gone $pid &&
	cp A.data A.live && cp B.data B.live &&
	expect_error 1 restore -r "$REPO" "$ID" -c "$CONF" &&
	cmp A.data A.live &&
	cmp B.data B.live
'

test_expect_success 'change the files again, stop' '
	start_cluster &&
	expect_ok transfer -c "$CONF" B:bal A:bal 7 &&
	wait_bal A 97 &&
	stop_cluster &&
	! cmp -s A.data A.first && ! cmp -s B.data B.first
'

test_expect_success 'restore killed after the first file (CUTSNAP_FAULT): exit 99, one file done' '
	CUTSNAP_FAULT=restore-after-file:1 cs restore -r "$REPO" "$ID" -c "$CONF" \
	    >"$OUT" 2>"$ERR"
	RC=$?
	expect_eq "$RC" 99 "exit status of the interrupted restore" || { show_out; return 1; }
	done=0
	cmp -s A.data A.first && done=$((done + 1))
	cmp -s B.data B.first && done=$((done + 1))
	expect_eq "$done" 1 "files restored when the restore died"
'

test_expect_success 'restore again after the crash: both files restored, the 10 applied once' '
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	cmp A.data A.first &&
	cmp B.data B.first &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B"
'

test_expect_success 'killed after the first file twice in a row, then completed: same files' '
	CUTSNAP_FAULT=restore-after-file:1 cs restore -r "$REPO" "$ID" -c "$CONF" \
	    >/dev/null 2>&1
	CUTSNAP_FAULT=restore-after-file:1 cs restore -r "$REPO" "$ID" -c "$CONF" \
	    >/dev/null 2>&1
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	cmp A.data A.first &&
	cmp B.data B.first
'

test_expect_success 'agents on the restored files: the 10 is not delivered again' '
	start_cluster &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 61 &&
	expect_eq "$(bal A)" 89 "A" &&
	expect_eq "$(total)" 150 "total" &&
	stop_cluster
'

test_done
