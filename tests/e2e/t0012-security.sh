#!/bin/bash
# Sockets in a 0700 directory, mode 0600; only the agents' own uid is
# served; malformed frames close the connection and nothing else.
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
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	    timeout 10 "$CUTSNAP" put -c "$CONF" A bal 999999 >"$OUT" 2>"$ERR"
	rc=$?
	chmod 0700 "$TEST_DIR" run && chmod 0600 run/A.sock
	expect_eq "$rc" 1 "exit status of the foreign client" &&
	err_is_one_line &&
	expect_eq "$(bal A)" 100 "A bal" &&
	grep -q "refused a connection from uid 65534 (pid [0-9]*): only uid $(id -u) may connect" run/A.log
'

# send_raw SOCKET HEXBYTES: write raw bytes to a socket, read until it closes.
send_raw () {
	python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(bytes.fromhex(sys.argv[2]))
try:
    while s.recv(4096):
        pass
    print("closed")
except socket.timeout:
    print("open")
PY
}

test_expect_success 'a frame with a wrong version: connection closed, agent still serving' '
	expect_eq "$(send_raw run/A.sock 0200000063010000)" closed "connection" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a frame longer than the maximum: closed, agent still serving' '
	expect_eq "$(send_raw run/A.sock ffffffff0101)" closed "connection" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a frame with an unknown type: closed, agent still serving' '
	expect_eq "$(send_raw run/A.sock 0200000001ee)" closed "connection" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a length below 2: closed, agent still serving' '
	expect_eq "$(send_raw run/A.sock 0100000001)" closed "connection" &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a PUT whose key length overruns the frame: closed or refused, nothing stored' '
	r=$(send_raw run/A.sock 0a0000000102ffffff7f6b657900) &&
	say "connection: $r" &&
	expect_eq "$(bal A)" 100 "A bal" &&
	expect_ok status -c "$CONF"
'

test_expect_success 'a forged peer HELLO from a client: the agent is not confused' '
	r=$(send_raw run/B.sock 090000000128030000005a5a5a) &&
	say "connection: $r" &&
	expect_ok status -c "$CONF" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 51
'

test_expect_success 'a malformed frame is logged' '
	ls run/ &&
	grep -Eil "malformed|frame|version|closing|closed" run/*.log
'

test_expect_success 'restore never writes outside the data paths: a tampered data_path is ignored' '
	stop_cluster &&
	cp A.data A.saved && cp B.data B.saved &&
	sql "update agents set data_path = '\''/tmp/cutsnap-evil-$$'\''" &&
	cs restore -r "$REPO" -c "$CONF" >"$OUT" 2>"$ERR"
	[ ! -e "/tmp/cutsnap-evil-$$" ] || { rm -f "/tmp/cutsnap-evil-$$"; say "wrote outside the data paths"; false; }
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
