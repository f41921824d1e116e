#!/bin/bash
# A command that cannot reach an agent over TCP says why: "timed out
# connecting to agent B at ADDR" when the host does not answer (here a
# listener whose accept queue is full, so its SYNs are dropped), and "is
# not running" only when the connection is refused.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

cat >full.py <<'PY'
import socket, sys, time
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(0)
port = ls.getsockname()[1]
held = []
# Fill the accept queue: the next SYN is dropped, unanswered.
for _ in range(4):
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex(("127.0.0.1", port))
    held.append(c)
time.sleep(0.5)
print(port, flush=True)
time.sleep(3600)
PY

test_expect_success 'setup: B lives at a host that never answers, A is stopped' '
	{ python3 full.py >full.out 2>full.err & } &&
	BG_PIDS="$BG_PIDS $!" &&
	wait_for 10 grep -q "^[0-9]" full.out &&
	PB=$(head -n 1 full.out) &&
	read -r PA < <(free_ports 1) &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF"
'

test_expect_success 'a connect that times out is reported as such, not as "not running"' '
	expect_error 1 get -c "$CONF" B bal &&
	err_matches "^cutsnap: get: timed out connecting to agent B at 127[.]0[.]0[.]1:$PB" &&
	! grep -q "not running" "$ERR"
'

test_expect_success 'a refused connect is "not running"' '
	expect_error 1 get -c "$CONF" A bal &&
	err_matches "^cutsnap: get: agent A is not running \(connect 127[.]0[.]0[.]1:$PA: Connection refused\)"
'

test_done
