#!/bin/bash
# The agent under systemd, with systemd's side played by the test: a real
# notify socket (NOTIFY_SOCKET) gets READY=1 once the agent accepts
# connections, WATCHDOG=1 at half of WATCHDOG_USEC from the event loop,
# STOPPING=1 on SIGTERM; with JOURNAL_STREAM naming its stderr the log
# lines carry "<N>" priorities and no timestamp; SIGHUP reopens --log FILE.
. "$(dirname "$0")/lib.sh"

NOTES=$TEST_DIR/notify.out
TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

# notes STATE: how many times STATE arrived on the notify socket.
notes () { grep -c " $1\$" "$NOTES" 2>/dev/null || true; }
notes_at_least () { [ "$(notes "$2")" -ge "$1" ]; }

# run_agent NAME ARGS...: agent NAME in the background (pid in APID).
run_agent () {
	local n=$1
	shift
	"$CUTSNAP" agent -c "$CONF" --name "$n" "$@" &
	APID=$!
}

test_expect_success 'setup: one agent, a notify socket listened to' '
	make_config A && mkdir -p run || return 1
	python3 "$_lib_dir/notify_listen.py" "$TEST_DIR/notify.sock" "$NOTES" &
	BG_PIDS="$BG_PIDS $!"

	wait_for 20 test -S "$TEST_DIR/notify.sock"
'

test_expect_success 'READY=1 once, when the agent already answers' '
	NOTIFY_SOCKET=$TEST_DIR/notify.sock WATCHDOG_USEC=400000 \
	    run_agent A --log "$TEST_DIR/run/A.log" &&
	wait_for 30 notes_at_least 1 READY=1 &&
	# No retry: a client connecting right after READY=1 is served.
	cs status -c "$CONF" --json >status.json &&
	json_check "d[0][\"agent\"] == \"A\" and d[0][\"up\"]" status.json &&
	expect_eq "$(notes READY=1)" 1
'

test_expect_success 'WATCHDOG=1 from the loop every WATCHDOG_USEC/2' '
	wait_for 30 notes_at_least 6 WATCHDOG=1 &&
	grep -q "info: systemd watchdog: every 200 ms" run/A.log &&
	# Never faster than the interval: 5 gaps of at least 200 ms (10 ms
	# for the clock), and none ever sent before READY=1.
	awk "/ WATCHDOG=1\$/ { t[n++] = \$1 } END { if (n < 6) exit 1;
	    if (t[5] - t[0] < 5 * 190) exit 1 }" "$NOTES" &&
	first=$(grep -n . "$NOTES" | grep -m1 -E " (READY|WATCHDOG)=1\$") &&
	case $first in *READY=1) ;; *) say "first: $first"; false ;; esac
'

test_expect_success 'SIGHUP reopens the log file: new lines in a new file' '
	mv run/A.log run/A.log.1 &&
	kill -HUP "$APID" &&
	wait_for 30 grep -q "got SIGHUP, log file reopened" run/A.log &&
	! grep -q "reopened" run/A.log.1 &&
	grep -q "agent A starting" run/A.log.1 &&
	! grep -q "agent A starting" run/A.log &&
	cs put -c "$CONF" A k v &&
	agent_alive "$APID"
'

test_expect_success 'STOPPING=1 on SIGTERM, then a clean exit (status 0)' '
	kill -TERM "$APID" &&
	wait_for 30 notes_at_least 1 STOPPING=1 &&
	{ wait "$APID"; rc=$?; } &&
	expect_eq "$rc" 0 &&
	grep -q "agent A stopped" run/A.log &&
	expect_eq "$(notes READY=1)" 1
'

test_expect_success 'no NOTIFY_SOCKET: no notification, SIGHUP without --log is harmless' '
	: >"$NOTES" &&
	run_agent A 2>run/A.err &&
	wait_for 30 cs status -c "$CONF" &&
	kill -HUP "$APID" &&
	wait_for 30 grep -q "got SIGHUP: no log file to reopen" run/A.err &&
	cs status -c "$CONF" &&
	kill -TERM "$APID" && { wait "$APID"; rc=$?; } && expect_eq "$rc" 0 &&
	expect_eq "$(wc -l <"$NOTES")" 0
'

test_expect_success 'JOURNAL_STREAM naming stderr: "<N>NAME LEVEL: ..." lines, no timestamps' '
	: >run/A.journal &&
	js=$(stat -c "%d:%i" run/A.journal) &&
	JOURNAL_STREAM=$js run_agent A 2>>run/A.journal &&
	wait_for 30 cs status -c "$CONF" &&
	kill -TERM "$APID" && wait "$APID" &&
	grep -q "^<6>A info: agent A starting" run/A.journal &&
	grep -q "^<6>A info: agent A stopped" run/A.journal &&
	n=$(grep -c . run/A.journal) && [ "$n" -ge 3 ] &&
	! grep -Ev "^<[3467]>A (error|warn|info|debug): ." run/A.journal &&
	! grep -Eq "$TS" run/A.journal
'

test_expect_success 'JOURNAL_STREAM naming another stream, or with --log: the usual lines' '
	: >run/B.err &&
	JOURNAL_STREAM=1:1 run_agent A 2>run/B.err &&
	wait_for 30 cs status -c "$CONF" &&
	kill -TERM "$APID" && wait "$APID" &&
	grep -Eq "^$TS A info: agent A starting" run/B.err &&
	: >run/C.journal &&
	js=$(stat -c "%d:%i" run/C.journal) &&
	JOURNAL_STREAM=$js run_agent A --log "$TEST_DIR/run/C.log" 2>>run/C.journal &&
	wait_for 30 cs status -c "$CONF" &&
	kill -TERM "$APID" && wait "$APID" &&
	grep -Eq "^$TS A info: agent A starting" run/C.log &&
	! grep -q "^<" run/C.log
'

test_expect_success 'a --log FILE that cannot be opened: one line, exit 2' '
	expect_exit 2 agent -c "$CONF" --name A --log "$TEST_DIR/no/such/dir/A.log" &&
	err_is_one_line &&
	err_matches "log file .*no/such/dir/A.log"
'

test_done
