#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# `stop` waits for every agent process to exit, by its pid, also for one
# that does not answer (stopped with SIGSTOP): it exits 0 only once that
# process is gone, or 1 naming it.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: two agents' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	PA=$(agent_pid A) && [ -n "$PA" ]
'

test_expect_success 'A paused for good: stop exits 1 naming A and its pid; A is still there' '
	kill -STOP "$PA" &&
	expect_error 1 stop -c "$CONF" --timeout 3 &&
	err_matches "agent A \(pid $PA\) did not exit within 3 s" &&
	err_matches "SIGSTOP.*kill -CONT $PA" &&
	! pid_gone "$PA"
'

test_expect_success 'once resumed, A finishes the stop it was asked for, and gracefully' '
	kill -CONT "$PA" &&
	wait_for 10 pid_gone "$PA" &&
	expect_eq "$(dump_val A.data bal)" 100 "A bal in its file"
'

# Resume the paused agent 4 s later, while stop waits for it (longer than
# the 2 s stop gives an agent to answer).
cont_later () {
	(sleep 4; kill -CONT "$1") &
	BG_PIDS="$BG_PIDS $!"
}

test_expect_success 'A paused for 4 s: stop waits for it and exits 0 once it is gone' '
	start_cluster &&
	PA=$(agent_pid A) && [ -n "$PA" ] &&
	kill -STOP "$PA" &&
	cont_later "$PA" &&
	expect_ok stop -c "$CONF" --timeout 20 &&
	pid_gone "$PA" &&
	! agent_pid A && ! agent_pid B
'

test_expect_success 'stop with nothing running exits 0' '
	expect_ok stop -c "$CONF"
'

test_done
