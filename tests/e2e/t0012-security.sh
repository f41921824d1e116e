#!/bin/bash
# Sockets in a 0700 directory, mode 0600; only the agents' own uid is
# served; malformed frames close the connection and nothing else, each
# with its own warning in the agent's log.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: two agents' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50
'

test_expect_success 'run_dir has mode 0700' '
	expect_eq "$(stat -c %a run)" 700 "mode of run_dir"
'

test_expect_success 'every socket has mode 0600 and is a socket' '
	for n in A B; do
		[ -S run/$n.sock ] || { say "run/$n.sock is not a socket"; ls -la run; return 1; }
		expect_eq "$(stat -c %a run/$n.sock)" 600 "mode of $n.sock" || return 1
	done
'

test_expect_success 'data files are not readable by others (mode 0600)' '
	for n in A B; do
		expect_eq "$(stat -c %a $n.data)" 600 "mode of $n.data" || return 1
	done
'

test_expect_success 'the repository is created private to its owner' '
	take_snapshot &&
	m=$(stat -c %a "$REPO") &&
	say "repository mode $m" &&
	case $m in 700|750) ;; *) say "repository mode $m"; false ;; esac
'

test_expect_success 'a run_dir made with mode 0755 beforehand: the agent still keeps it private' '
	stop_cluster &&
	rm -rf run && mkdir -m 0755 run &&
	start_cluster &&
	m=$(stat -c %a run) &&
	{ [ "$m" = 700 ] ||
	  { say "run_dir left at $m with sockets:"; ls -la run; false; }; } &&
	for n in A B; do
		expect_eq "$(stat -c %a run/$n.sock)" 600 "mode of $n.sock" || return 1
	done
'

test_expect_success NOBODY 'a client of another uid is refused even with the socket opened up' '
	chmod 0755 "$TEST_DIR" run && chmod 0666 run/A.sock &&
	chmod 0644 cluster.ini &&
	# The client prints its pid first (the shell execs it), so that
	# the refusal logged can be matched to this client.
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	    timeout 10 sh -c '\''echo "$$"; exec "$0" "$@"'\'' \
	    "$CUTSNAP" put -c "$CONF" A bal 999999 >"$OUT" 2>"$ERR"
	rc=$?
	chmod 0700 "$TEST_DIR" run && chmod 0600 run/A.sock
	expect_eq "$rc" 1 "exit status of the foreign client" &&
	err_is_one_line &&
	expect_eq "$(bal A)" 100 "A bal" &&
	pid=$(head -n 1 "$OUT") && [ -n "$pid" ] &&
	expect_eq "$(grep -c "refused a connection from uid 65534" run/A.log)" 1 "refusals logged" &&
	grep -qF "warn: refused a connection from uid 65534 (pid $pid): only uid $(id -u) may connect" run/A.log
'

# send_raw SOCKET HEXBYTES: write raw bytes to a socket, read until it
# closes ("closed") or 2 s pass ("open"); what it answered, in hex, in
# raw.reply.
send_raw () {
	python3 - "$1" "$2" "$TEST_DIR/raw.reply" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(bytes.fromhex(sys.argv[2]))
got = b""
state = "closed"
try:
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
except socket.timeout:
    state = "open"
open(sys.argv[3], "w").write(got.hex() + "\n")
print(state)
PY
}

# log_mark NAME: remember how long agent NAME's log is; logged_since NAME
# LINE: the log has LINE (fixed text, after the timestamp) past the mark,
# and no other warning or error there: one complaint, about this peer.
log_mark () { MARK=$(wc -l <"run/$1.log"); }
_logged_since () {
	tail -n +$((MARK + 1)) "run/$1.log" | grep -E " (warn|error): " >new.log &&
	[ "$(wc -l <new.log)" = 1 ] && grep -qF -- "$2" new.log
}
logged_since () {
	wait_for 10 _logged_since "$1" "$2" && return 0
	say "run/$1.log past line $MARK, expected only: $2"
	tail -n +$((MARK + 1)) "run/$1.log" >&2
	return 1
}

# The frames below are in the protocol the agent speaks (WV, the 5th
# byte; the 6th, the type), so each reaches the check it is about.
WV=$(wire_version)
WVX=$(printf %02x "$WV")

test_expect_success 'a frame with a wrong version: refused as such, closed, agent still serving' '
	A_PID=$(agent_pid A) && log_mark A &&
	expect_eq "$(send_raw run/A.sock 0200000063010000)" closed "connection" &&
	logged_since A "client fd " &&
	logged_since A "refused: protocol version mismatch: agent A speaks protocol $WV, this client 99" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a frame longer than the maximum: closed, logged, agent still serving' '
	log_mark A &&
	expect_eq "$(send_raw run/A.sock ffffffff${WVX}01)" closed "connection" &&
	logged_since A ": malformed frame: length 4294967295 exceeds 16781312; closing it" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a frame with an unknown type: closed, logged, agent still serving' '
	log_mark A &&
	expect_eq "$(send_raw run/A.sock 02000000${WVX}ee)" closed "connection" &&
	logged_since A ": unexpected frame type 238; closing it" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a length below 2: closed, logged, agent still serving' '
	log_mark A &&
	expect_eq "$(send_raw run/A.sock 0100000002)" closed "connection" &&
	logged_since A ": malformed frame: length 1 too short; closing it" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a PUT whose key length overruns the frame: refused with a bad-request reply, nothing stored' '
	expect_eq "$(send_raw run/A.sock 0a000000${WVX}02ffffff7f6b657900)" open "connection" &&
	# REPLY (type 30), code 2 (bad request), the message as a string.
	expect_eq "$(cat raw.reply)" \
	    "1c000000${WVX}1e0215000000$(printf "malformed put request" | od -An -tx1 | tr -d " \n")" \
	    "reply" &&
	expect_eq "$(bal A)" 100 "A bal" &&
	expect_error 1 get -c "$CONF" A key && err_matches "key .key. not found on A" &&
	expect_ok status -c "$CONF"
'

test_expect_success 'a forged peer HELLO from a client: refused for the channel it names, the agent not confused' '
	log_mark B &&
	expect_eq "$(send_raw run/B.sock 09000000${WVX}28030000005a5a5a)" closed "connection" &&
	logged_since B "HELLO from ZZZ: no channel ZZZ>B in the config; closing it" &&
	expect_ok status -c "$CONF" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 51
'

test_expect_success 'through all of it agent A stayed the same process' '
	expect_eq "$(agent_pid A)" "$A_PID" "agent A pid"
'

test_expect_success 'restore never writes outside the data paths: a tampered data_path fails verification, nothing restored' '
	stop_cluster &&
	cp A.data A.saved && cp B.data B.saved &&
	sql "update agents set data_path = '\''/tmp/cutsnap-evil-$$'\''" &&
	expect_error 1 restore -r "$REPO" -c "$CONF"; rc=$?
	{ [ ! -e "/tmp/cutsnap-evil-$$" ] ||
	  { rm -f "/tmp/cutsnap-evil-$$"; say "wrote outside the data paths"; false; }; } &&
	[ $rc = 0 ] && err_matches "failed verification; nothing was restored" &&
	cmp A.data A.saved && cmp B.data B.saved
'

test_expect_success 'restore over a data path that is a symlink: the link is replaced, its target untouched' '
	echo "precious, not ours" >"$TEST_DIR/outside.txt" &&
	cp "$TEST_DIR/outside.txt" outside.saved &&
	rm -f A.data && ln -s "$TEST_DIR/outside.txt" A.data &&
	cs restore -r "$REPO" -c "$CONF" >"$OUT" 2>"$ERR"; rc=$?
	cmp "$TEST_DIR/outside.txt" outside.saved || { say "restore wrote through the symlink"; return 1; }
	say "restore exit $rc"; show_out
	case $rc in
	0) [ ! -L A.data ] && [ "$(dump_val A.data bal)" = 100 ] ;;
	1 | 2) err_is_one_line ;;
	*) false ;;
	esac
'

test_expect_success 'an agent does not follow a symlinked data file to write to its target' '
	cp B.data "$TEST_DIR/outside.data" && cp B.data outside.data.saved &&
	rm -f A.data && ln -s "$TEST_DIR/outside.data" A.data &&
	cs start -c "$CONF" >"$OUT" 2>"$ERR"; rc=$?
	say "start exit $rc"; show_out
	cs put -c "$CONF" A sneaky 1 >/dev/null 2>&1
	cmp "$TEST_DIR/outside.data" outside.data.saved ||
	    { say "the agent wrote through the symlink"; return 1; }
'

test_done
