#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A receiver acknowledges what it applied a little later (one ACK for
# many batches), never not at all: an idle channel still ends with the
# sender's history dropped. While ACKs are owed the sender keeps the
# messages; a new connection's WELCOME acknowledges what was applied, and
# only the rest is written again: each message is applied exactly once.
. "$(dirname "$0")/lib.sh"

chan () { out_field A B "$1"; }
drained () { channel_drained A B; }

# start_b [ENV...]: agent B alone, in a background job.
start_b () {
	env "$@" "$CUTSNAP" agent -c "$CONF" --name B 2>>"$TEST_DIR/B.err" &
	BG_PIDS="$BG_PIDS $!"
	AGENT_PIDS="$AGENT_PIDS $!"
	wait_for 10 eval "[ \"\$(chan up)\" = true ]"
}

stop_b () {
	local p
	p=$(agent_pid B) && kill -TERM "$p" && wait_for 10 pid_gone "$p"
}

transfers () {
	local i
	for i in $(seq 1 "$1"); do
		expect_ok transfer -c "$CONF" A:bal B:bal 1 || return 1
	done
}

test_expect_success 'setup: one channel A>B' '
	CHANNELS="A>B" make_config A B &&
	start_cluster &&
	set_balances A=100 B=0
'

test_expect_success 'idle after 5 transfers: acknowledged, the history dropped' '
	transfers 5 &&
	wait_for 10 drained &&
	expect_eq "$(chan acked)" 5 "acked" &&
	expect_eq "$(chan unacked)" 0 "unacked"
'

test_expect_success 'ACKs withheld: B applies 5 more, A keeps all 5' '
	stop_b &&
	start_b CUTSNAP_FAULT=withhold-acks &&
	transfers 5 &&
	wait_bal B 10 &&
	expect_eq "$(chan sent)" 10 "sent" &&
	expect_eq "$(chan acked)" 5 "acked" &&
	expect_eq "$(chan unacked)" 5 "unacked (kept for a resend)"
'

test_expect_success 'held, 2 more queued; B restarted: its WELCOME acks 10, 2 to write' '
	expect_ok channel -c "$CONF" hold A B &&
	transfers 2 &&
	expect_eq "$(chan queued)" 2 "queued" &&
	stop_b &&
	start_b &&
	expect_eq "$(chan acked)" 10 "acked by the WELCOME" &&
	expect_eq "$(chan unacked)" 0 "unacked" &&
	expect_eq "$(chan queued)" 2 "queued to write" &&
	grep -q "channel A>B up (peer applied 10, 2 queued)" run/A.log
'

test_expect_success 'released: the 2 arrive, each message applied once' '
	expect_ok channel -c "$CONF" release A B &&
	wait_for 10 drained &&
	expect_eq "$(bal B)" 12 "B" &&
	expect_eq "$(bal A)" 88 "A" &&
	expect_eq "$(chan acked)" 12 "acked"
'

test_expect_success 'stopped: no error in the logs' '
	stop_cluster &&
	! grep -Eq "error|exiting" run/A.log run/B.log
'

test_done
