#!/bin/bash
# Agents on TCP + mutual TLS over loopback (no namespaces needed): cert,
# a mixed cluster (A and B on 127.0.0.1, C on its Unix socket), the seed
# transfer with a held channel, snapshot, verify, restore; every refusal
# (plaintext, another CA, an expired certificate, a CN that is not the
# agent, a silent client) leaves the balances and the agent as they were;
# an agent moved to another port by config loses nothing.
. "$(dirname "$0")/lib.sh"

# The version byte of the frames written below.
CS_WIRE=$(wire_version)
export CS_WIRE

. "$_lib_dir/lib-tls.sh"

test_expect_success 'setup: config with addr for A and B, C on a Unix socket' '
	ports=$(free_ports 3) &&
	PA=$(echo "$ports" | sed -n 1p) && PB=$(echo "$ports" | sed -n 2p) &&
	PB2=$(echo "$ports" | sed -n 3p) &&
	[ -n "$PA" ] && [ -n "$PB" ] && [ -n "$PB2" ] &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB C
'

test_expect_success 'an addr without tls_dir, a bad addr, a shared addr: exit 2, one line' '
	sed "/^tls_dir/d" "$CONF" >nodir.ini &&
	expect_exit 2 status -c nodir.ini && err_is_one_line &&
	err_matches "has an addr but \[cluster\] has no tls_dir" &&
	sed "s/^addr = 127.0.0.1:$PA/addr = 127.0.0.1:99999/" "$CONF" >bad.ini &&
	expect_exit 2 status -c bad.ini && err_is_one_line &&
	err_matches "bad addr" &&
	sed "s/^addr = 127.0.0.1:$PA/addr = 127.0.0.1:$PB/" "$CONF" >dup.ini &&
	expect_exit 2 status -c dup.ini && err_is_one_line &&
	err_matches "share the addr" &&
	expect_exit 2 cert -c nodir.ini && err_is_one_line &&
	err_matches "no tls_dir"
'

test_expect_success 'start before cert: exit 2 naming the missing files and the cert command' '
	expect_exit 2 agent -c "$CONF" --name A && err_is_one_line &&
	err_matches "TLS files for A missing.*cutsnap cert -c"
'

test_expect_success 'cert creates the CA and five certificates, keys mode 0600' '
	expect_ok cert -c "$CONF" &&
	expect_eq "$(grep -c "^created " "$OUT")" 5 "created lines" &&
	for f in ca client A B C; do
		[ -s "tls/$f.crt" ] && [ -s "tls/$f.key" ] &&
		expect_eq "$(stat -c %a "tls/$f.key")" 600 "$f.key mode" || return 1
	done &&
	expect_eq "$(ls tls | wc -l)" 10 "files in tls"
'

test_expect_success 'certificates: CN = name, SAN with the addr host, signed by ca.crt, EC P-256' '
	n=0 &&
	for f in client A B C; do
		openssl verify -CAfile tls/ca.crt "tls/$f.crt" >/dev/null &&
		openssl x509 -in "tls/$f.crt" -noout -subject | grep -q "CN = $f\$" &&
		openssl pkey -in "tls/$f.key" -noout -text | grep -q "P-256" &&
		n=$((n + 1)) || { say "bad certificate $f"; return 1; }
	done &&
	expect_eq "$n" 4 "certificates checked" &&
	openssl x509 -in tls/A.crt -noout -ext subjectAltName | grep -q "IP Address:127.0.0.1"
'

test_expect_success 'cert again creates nothing and changes no file' '
	sum1=$(cat tls/* | sha256sum) &&
	expect_ok cert -c "$CONF" &&
	grep -q "^nothing to create" "$OUT" &&
	expect_eq "$(grep -c "^created " "$OUT")" 0 "created lines" &&
	expect_eq "$(cat tls/* | sha256sum)" "$sum1" "tls files"
'

test_expect_success 'a missing certificate alone is made again, signed by the same CA' '
	rm tls/C.crt tls/C.key &&
	expect_ok cert -c "$CONF" &&
	expect_eq "$(grep -c "^created " "$OUT")" 1 "created lines" &&
	grep -q "C.crt" "$OUT" &&
	openssl verify -CAfile tls/ca.crt tls/C.crt >/dev/null
'

test_expect_success 'start: A and B listen with TLS, C on its socket; A=100 B=50 C=0' '
	start_cluster &&
	log_has A "listening on 127.0.0.1:$PA \(TCP, mutual TLS 1.3\)" &&
	log_has B "listening on 127.0.0.1:$PB \(TCP, mutual TLS 1.3\)" &&
	log_has C "listening on .*/run/C.sock" &&
	set_balances A=100 B=50 C=0 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'every channel comes up, TLS and mixed alike: 12 ends' '
	wait_for 10 channels_up 12
'

test_expect_success 'hold A->B; transfer 10; snapshot from B waits; release: it completes' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_ok transfer -c "$CONF" B:bal C:bal 5 &&
	expect_eq "$(bal A)" 90 "A bal" &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	wait_bal B 55 &&
	expect_eq "$(total)" 150 "live total"
'

test_expect_success 'the snapshot holds the in-flight 10 and verifies' '
	expect_eq "$(sql "select count(*) from messages where snapshot_id = $SNAP_ID")" 1 "recorded messages" &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

# The agent answers, and nothing changed.
unharmed () {
	expect_eq "$(bal A)" 90 "A bal" && expect_eq "$(total)" 150 "total"
}

test_expect_success 'a plaintext client is refused with one log line; A unharmed' '
	before=$(log_count A "refused a connection") &&
	exec 7<>/dev/tcp/127.0.0.1/$PA &&
	printf "junk that is not TLS\n" >&7 &&
	timeout 10 cat <&7 >/dev/null; exec 7<&- &&
	wait_for 10 log_has A "refused a connection from 127.0.0.1:[0-9]+: not a TLS client \(plaintext\?\)" &&
	expect_eq "$(log_count A "refused a connection")" $((before + 1)) "refusals logged" &&
	unharmed
'

test_expect_success 'a client certificate from another CA is refused; A unharmed' '
	mkdir -p other && sed "s/^tls_dir = tls/tls_dir = othertls/" "$CONF" >other/o.ini &&
	sed -i "s|^run_dir = run|run_dir = $TEST_DIR/run|" other/o.ini &&
	expect_ok cert -c other/o.ini &&
	timeout 10 openssl s_client -quiet -connect 127.0.0.1:$PA \
	    -cert other/othertls/client.crt -key other/othertls/client.key \
	    -CAfile tls/ca.crt </dev/null >/dev/null 2>&1;
	wait_for 10 log_has A "refused a connection from .*: certificate refused: unable to get local issuer certificate" &&
	expect_exit 1 get -c other/o.ini A bal && err_is_one_line &&
	err_matches "certificate refused" &&
	unharmed
'

test_expect_success 'an expired client certificate of the right CA is refused; A unharmed' '
	mkdir -p -m 700 exp/tls && cp tls/ca.crt tls/ca.key exp/tls/ &&
	sed "s|^run_dir = run|run_dir = $TEST_DIR/run|" "$CONF" >exp/e.ini &&
	CUTSNAP_TEST_CERT_DAYS=-2 cs cert -c exp/e.ini >/dev/null &&
	! openssl x509 -in exp/tls/client.crt -noout -checkend 0 >/dev/null &&
	expect_exit 1 get -c exp/e.ini A bal &&
	wait_for 10 log_has A "refused a connection from .*: certificate refused: certificate has expired" &&
	unharmed
'

test_expect_success 'an agent certificate may not send client requests' '
	mkdir -p -m 700 asagent/tls && cp tls/ca.crt asagent/tls/ &&
	cp tls/B.crt asagent/tls/client.crt && cp tls/B.key asagent/tls/client.key &&
	sed "s|^run_dir = run|run_dir = $TEST_DIR/run|" "$CONF" >asagent/a.ini &&
	expect_exit 1 get -c asagent/a.ini A bal &&
	wait_for 10 log_has A "refused .*: certificate .B. may not send client requests" &&
	unharmed
'

test_expect_success 'the command refuses an agent whose certificate is another agent'\''s' '
	awk -v pa=$PA -v pb=$PB "/^\[agent A\]/{s=\"A\"} /^\[agent B\]/{s=\"B\"} /^addr/{ if (s==\"A\") \$0=\"addr = 127.0.0.1:\" pb; else if (s==\"B\") \$0=\"addr = 127.0.0.1:\" pa } {print}" "$CONF" >swap.ini &&
	expect_exit 1 get -c swap.ini A bal && err_is_one_line &&
	err_matches "certificate is for .B., not agent A" &&
	unharmed
'

test_expect_success 'an agent with another agent'\''s certificate refuses to start; a HELLO sent with one is refused' '
	pid=$(agent_pid C) && kill -TERM "$pid" && wait_for 10 pid_gone "$pid" &&
	mkdir -p -m 700 badtls && cp tls/ca.crt badtls/ &&
	cp tls/B.crt badtls/C.crt && cp tls/B.key badtls/C.key &&
	sed "s/^tls_dir = tls/tls_dir = badtls/" "$CONF" >imp.ini &&
	expect_error 2 agent -c imp.ini --name C &&
	err_matches "certificate .*badtls/C[.]crt is for .B., not agent C" &&
	python3 - "$PA" badtls <<-"PY" &&
	import os, socket, ssl, struct, sys
	ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
	ctx.check_hostname = False
	ctx.load_verify_locations(sys.argv[2] + "/ca.crt")
	ctx.load_cert_chain(sys.argv[2] + "/C.crt", sys.argv[2] + "/C.key")
	s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10))
	s.sendall(struct.pack("<IBB", 7, int(os.environ["CS_WIRE"]), 40) + struct.pack("<I", 1) + b"C")
	try:
	    while s.recv(4096):
	        pass
	except OSError:
	    pass
	PY
	wait_for 15 log_has A "refused a HELLO as C from the certificate of B" &&
	expect_ok start -c "$CONF" && _record_agent_pids &&
	wait_for 10 channels_up 12 &&
	unharmed
'

test_expect_success 'a silent client is closed at the handshake timeout; others go on meanwhile' '
	before=$(log_count A "no TLS handshake within") &&
	exec 8<>/dev/tcp/127.0.0.1/$PA &&
	expect_ok transfer -c "$CONF" A:bal C:bal 1 &&
	expect_ok transfer -c "$CONF" C:bal A:bal 1 &&
	wait_bal A 90 &&
	unharmed &&
	wait_for 30 log_has A "refused a connection from .*: no TLS handshake within" &&
	exec 8<&- &&
	expect_eq "$(log_count A "no TLS handshake within")" $((before + 1)) "timeouts logged"
'

test_expect_success 'B moves to another port by config with A->B held: nothing lost' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 7 &&
	expect_eq "$(bal A)" 83 "A bal" &&
	stop_cluster &&
	sed -i "s/^addr = 127.0.0.1:$PB\$/addr = 127.0.0.1:$PB2/" "$CONF" &&
	start_cluster &&
	log_has B "listening on 127.0.0.1:$PB2" &&
	wait_bal B 62 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'a snapshot after the move verifies; restore gives the conserved total' '
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	rm -f A.data B.data C.data &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 150 "restored total" &&
	expect_eq "$(dump_val B.data bal)" 62 "restored B"
'

test_done
