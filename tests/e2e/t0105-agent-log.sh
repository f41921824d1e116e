#!/bin/bash
# The agent log (run_dir/NAME.log): timestamped lines with a level, and the
# events an operator looks for: start, recovery, peer up/down, snapshot
# joined/recording/recorded/reported/committed, errors; --log-level.
. "$(dirname "$0")/lib.sh"

TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

# has_line NAME LEVEL REGEX: the agent's log has such an event line.
has_line () {
	grep -Eq "^$TS $1 $2: $3" "run/$1.log" || {
		say "no '$2: $3' line in run/$1.log:"; sed 's/^/    /' "run/$1.log" >&2
		return 1
	}
}

test_expect_success 'setup: two agents, a transfer, a snapshot from B with A->B held' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	snapshot_in_flight 10
'

test_expect_success 'every line is "TIMESTAMP NAME LEVEL: message"' '
	for n in A B; do
		[ -s "run/$n.log" ] &&
		! grep -Ev "^$TS $n (error|warn|info|debug): ." "run/$n.log" || return 1
	done
'

test_expect_success 'start and recovery are logged' '
	has_line A info "agent A starting \(pid $(agent_pid A)\), data $TEST_DIR/A.data" &&
	has_line A info "recovery: $TEST_DIR/A.data intact, state rebuilt from 0 records" &&
	has_line A info "agent A listening on "
'

test_expect_success 'channels up, and the snapshot events at both agents' '
	has_line A info "channel A>B up" &&
	has_line B info "channel A>B up" &&
	has_line B info "snapshot $SNAP_ID \([0-9a-f]{8}\): joined" &&
	has_line B info "snapshot $SNAP_ID \([0-9a-f]{8}\): recording at [0-9]+ bytes" &&
	has_line B info "snapshot $SNAP_ID \([0-9a-f]{8}\): recorded" &&
	has_line B info "snapshot $SNAP_ID \([0-9a-f]{8}\): reported \([0-9]+ bytes" &&
	has_line B info "snapshot $SNAP_ID \([0-9a-f]{8}\): committed" &&
	has_line A info "snapshot $SNAP_ID \([0-9a-f]{8}\): reported" &&
	has_line A info "channel A>B held" &&
	has_line A info "channel A>B released"
'

test_expect_success 'a peer going down is logged by the other agent' '
	pid=$(agent_pid B) && kill -TERM "$pid" &&
	wait_for 10 eval "! kill -0 $pid" &&
	has_line B info "got SIGTERM, shutting down" &&
	has_line B info "agent B stopped" &&
	wait_for 10 has_line A info "channel A>B down"
'

test_expect_success 'a torn tail: restart logs the recovery as a warning' '
	printf "torn" >>B.data &&
	start_cluster &&
	has_line B warn "recovery: cut 4 torn bytes from the end of $TEST_DIR/B.data"
'

test_expect_success 'an error is logged: a malformed frame from a client' '
	python3 -c "
import socket, struct
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(\"run/A.sock\")
s.sendall(struct.pack(\"<IBB\", 2, 99, 1))
s.recv(100)
" 2>/dev/null;
	wait_for 10 eval "grep -Eq \"^$TS A (warn|error): .*(malformed|version|unexpected)\" run/A.log"
'

test_expect_success '--log-level debug adds debug lines; warn hides info' '
	stop_cluster &&
	: >run/A.log && : >run/B.log &&
	expect_ok start -c "$CONF" --log-level debug &&
	expect_ok put -c "$CONF" A k v &&
	expect_ok status -c "$CONF" &&
	wait_for 10 eval "grep -Eq \"^$TS A debug: \" run/A.log" &&
	stop_cluster &&
	: >run/A.log &&
	expect_ok start -c "$CONF" --log-level warn &&
	expect_ok put -c "$CONF" A k w &&
	stop_cluster &&
	! grep -Eq " A (info|debug): " run/A.log &&
	expect_error 2 start -c "$CONF" --log-level loud
'

test_done
