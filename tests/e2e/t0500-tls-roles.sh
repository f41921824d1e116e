#!/bin/bash
# Client certificates carry a role (admin, backup, read-only) in their
# Subject's OU: cert --client issues each; an agent answers what a role may
# not do with REPLY_DENIED and a message naming the role, and changes
# nothing; a backup certificate takes a snapshot; a client's certificate
# never acts as an agent, an agent's never as a client; a Unix-socket
# client stays admin.
. "$(dirname "$0")/lib.sh"

# The version byte of the frames written below.
CS_WIRE=$(wire_version)
export CS_WIRE

. "$_lib_dir/lib-tls.sh"

test_expect_success 'setup: A and B on TCP + TLS, C on its Unix socket; A=100 B=50 C=0' '
	read -r PA PB < <(free_ports 2 | paste -sd" ") &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB C &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	wait_for 10 channels_up 12 &&
	set_balances A=100 B=50 C=0 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'cert --client issues one certificate per role, OU = role, client use only' '
	for r in read-only backup admin; do
		expect_ok cert -c "$CONF" --client "c-$r" --role "$r" &&
		grep -q "^created .*c-$r.crt .*(role $r)" "$OUT" &&
		expect_eq "$(stat -c %a "tls/c-$r.key")" 600 "c-$r.key mode" &&
		openssl verify -CAfile tls/ca.crt "tls/c-$r.crt" >/dev/null &&
		openssl x509 -in "tls/c-$r.crt" -noout -subject |
		    grep -q "OU = $r, CN = c-$r\$" &&
		openssl x509 -in "tls/c-$r.crt" -noout -ext extendedKeyUsage |
		    grep -qx " *TLS Web Client Authentication" || return 1
	done &&
	openssl x509 -in tls/client.crt -noout -subject | grep -q "OU = admin, CN = client\$" &&
	openssl x509 -in tls/A.crt -noout -subject | grep -qv "OU ="
'

test_expect_success 'cert --client: bad usage exits 2, an existing one exits 1, nothing changes' '
	sum1=$(cat tls/* | sha256sum) &&
	expect_error 2 cert -c "$CONF" --client x --role root && err_matches "unknown role .root." &&
	expect_error 2 cert -c "$CONF" --client x && err_matches "needs --role" &&
	expect_error 2 cert -c "$CONF" --role backup && err_matches "--role needs --client" &&
	expect_error 2 cert -c "$CONF" --client A --role admin && err_matches "is an agent.s name" &&
	expect_error 2 cert -c "$CONF" --client ../x --role admin && err_matches "bad client name" &&
	expect_error 1 cert -c "$CONF" --client c-backup --role admin && err_matches "c-backup.crt exists" &&
	expect_eq "$(cat tls/* | sha256sum)" "$sum1" "tls files"
'

# unchanged: every balance as set up, over the admin certificate.
unchanged () {
	expect_eq "$(bal A)" 100 "A bal" && expect_eq "$(bal B)" 50 "B bal" &&
	expect_eq "$(bal C)" 0 "C bal"
}

test_expect_success 'read-only: status and get succeed' '
	expect_ok status --cert c-read-only -c "$CONF" --json &&
	expect_eq "$(json_get "[a[\"up\"] for a in d].count(True)" "$OUT")" 3 "agents up" &&
	expect_ok get -c "$CONF" --cert c-read-only A bal &&
	expect_eq "$(cat "$OUT")" 100 "A bal read"
'

test_expect_success 'read-only: every write and control request is refused, naming the role; nothing changes' '
	for req in "transfer|A:bal B:bal 10|transfer" "add|A bal 5|add" \
	    "put|A bal 7|put" "del|A bal|del" "channel|hold A B|hold a channel" \
	    "compact|A|compact" "deadletter|refund A B 1|resolve dead letters"; do
		IFS="|" read -r cmd args what <<<"$req" &&
		# shellcheck disable=SC2086
		expect_error 1 "$cmd" --cert c-read-only -c "$CONF" $args &&
		err_matches "agent A: role read-only may not $what \(certificate .c-read-only.\)" ||
		{ say "request: $req"; return 1; }
	done &&
	wait_for 10 log_has A "client .c-read-only.: role read-only may not" &&
	unchanged
'

test_expect_success 'read-only: a snapshot is refused at its join, naming the role' '
	CUTSNAP_CLIENT_CERT=c-read-only cs snapshot -c "$CONF" -r "$REPO" >snap.out 2>snap.err
	rc=$? && expect_eq "$rc" 1 "snapshot exit" &&
	grep -q "refused to join the snapshot: agent A: role read-only may not snapshot" snap.err &&
	expect_eq "$(sql "select count(*) from snapshots where status = \"complete\"")" 0 "complete snapshots" &&
	unchanged
'

# ab.ini: the cluster without C (on its Unix socket, whose clients are
# admins), for stop.
test_expect_success 'read-only: stop is refused; the agents run on' '
	awk "/^\[agent C\]/{skip=1} /^\[agent [AB]\]/{skip=0} !skip" "$CONF" >ab.ini &&
	! grep -q "agent C" ab.ini &&
	expect_exit 1 stop -c ab.ini --cert c-read-only &&
	err_matches "role read-only may not stop" &&
	agent_up A && agent_up B
'

test_expect_success 'backup: a snapshot completes and verifies' '
	CUTSNAP_CLIENT_CERT=c-backup take_snapshot &&
	expect_eq "$(snap_status "$SNAP_ID")" complete "snapshot status" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(sql "select count(*) from agents where snapshot_id = $SNAP_ID")" 3 "agents in it"
'

test_expect_success 'backup: status and get succeed; writes and stop are refused; nothing changes' '
	expect_ok status -c "$CONF" --cert=c-backup &&
	expect_ok get -c "$CONF" --cert=c-backup B bal &&
	expect_eq "$(cat "$OUT")" 50 "B bal read" &&
	expect_error 1 transfer -c "$CONF" --cert=c-backup B:bal A:bal 5 &&
	err_matches "agent B: role backup may not transfer" &&
	expect_error 1 put -c "$CONF" --cert=c-backup A k v &&
	err_matches "agent A: role backup may not put" &&
	expect_exit 1 stop -c ab.ini --cert=c-backup &&
	err_matches "role backup may not stop" &&
	agent_up B && unchanged
'

test_expect_success 'a Unix-socket client stays admin whatever certificate is chosen' '
	expect_ok put -c "$CONF" --cert c-read-only C note hello &&
	expect_ok get -c "$CONF" C note &&
	expect_eq "$(cat "$OUT")" hello "C note"
'

test_expect_success '--cert is an option only before the positionals: a value may be --cert' '
	expect_ok put -c "$CONF" C note --cert &&
	expect_ok get -c "$CONF" C note &&
	expect_eq "$(cat "$OUT")" --cert "C note"
'

test_expect_success 'read-only: a large put (spooled as it arrives) is refused too' '
	head -c 600000 /dev/urandom >big &&
	expect_error 1 put -c "$CONF" --cert c-read-only A big - <big &&
	err_matches "agent A: role read-only may not put" &&
	expect_exit 1 get -c "$CONF" A big &&
	err_matches "not found" &&
	expect_ok put -c "$CONF" A big - <big &&
	cs get -c "$CONF" A big | head -c 600000 | cmp - big
'

test_expect_success 'admin: a certificate of its own, chosen by CUTSNAP_CLIENT_CERT, transfers' '
	CUTSNAP_CLIENT_CERT=c-admin cs transfer -c "$CONF" A:bal B:bal 10 >/dev/null &&
	wait_bal B 60 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'cert --out DIR; --cert DIR/NAME presents it' '
	expect_ok cert -c "$CONF" --client ro2 --role read-only --out certs &&
	expect_eq "$(stat -c %a certs)" 700 "certs mode" &&
	[ -s certs/ro2.crt ] && [ -s certs/ro2.key ] && [ ! -e tls/ro2.crt ] &&
	expect_ok get -c "$CONF" --cert "$TEST_DIR/certs/ro2" A bal &&
	expect_error 1 add -c "$CONF" --cert "$TEST_DIR/certs/ro2" A bal 1 &&
	err_matches "role read-only may not add \(certificate .ro2.\)" &&
	expect_error 1 get -c "$CONF" --cert nosuch A bal &&
	err_matches "TLS files for nosuch missing.*cert -c .* --client NAME --role ROLE"
'

test_expect_success 'an agent certificate sending a client request gets a clear refusal' '
	expect_error 1 get -c "$CONF" --cert B A bal &&
	err_matches "agent A: certificate .B. is an agent.s: it may not send client requests" &&
	wait_for 10 log_has A "refused .*: certificate .B. may not send client requests"
'

# hello CERT AS: a peer HELLO as agent AS to A over TLS with tls/CERT;
# prints what A answered: "closed" or the first frame type.
hello () {
	python3 - "$PA" "$1" "$2" <<'PY'
import os, socket, ssl, struct, sys
port, cert, name = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.load_verify_locations("tls/ca.crt")
ctx.load_cert_chain(f"tls/{cert}.crt", f"tls/{cert}.key")
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
p = struct.pack("<I", len(name)) + name
s.sendall(struct.pack("<IBB", 2 + len(p), int(os.environ["CS_WIRE"]), 40) + p)
try:
    b = s.recv(6)
except (ssl.SSLError, OSError):
    b = b""
print("closed" if len(b) < 6 else b[5])
PY
}

test_expect_success 'a client certificate may not open a channel, whatever HELLO says' '
	expect_eq "$(hello c-admin B)" closed "A answered" &&
	wait_for 10 log_has A "refused .*: certificate .c-admin. may not open a channel" &&
	wait_for 10 channels_up 12
'

# fake_cert STEM CN OU: STEM.crt and STEM.key (CN CN, OU OU) signed by
# the CA without cutsnap cert (which would refuse to make either).
fake_cert () {
	openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null &&
	chmod 600 "$1.key" &&
	openssl req -new -key "$1.key" -subj "/OU=$3/CN=$2" -out "$1.csr" &&
	openssl x509 -req -in "$1.csr" -CA tls/ca.crt -CAkey tls/ca.key \
	    -CAcreateserial -days 2 -out "$1.crt" 2>/dev/null
}

test_expect_success 'a certificate with an unknown role is refused at the handshake' '
	mkdir -p -m 700 fk && fake_cert tls/c-root c-root superuser &&
	expect_error 1 get -c "$CONF" --cert c-root A bal &&
	wait_for 10 log_has A "refused a connection from .*: certificate .c-root. has an unknown role" &&
	unchanged_b=$(bal B) && expect_eq "$unchanged_b" 60 "B bal"
'

test_expect_success 'a command refuses an "agent" whose certificate is a client'\''s named like it' '
	fake_cert fk/A A read-only &&
	PF=$(free_ports 1) &&
	{ openssl s_server -quiet -accept "$PF" -tls1_3 -cert fk/A.crt -key fk/A.key \
	    </dev/null >/dev/null 2>&1 & } && SRV=$! && BG_PIDS="$BG_PIDS $SRV" &&
	wait_for 10 eval "(exec 3<>/dev/tcp/127.0.0.1/$PF) 2>/dev/null" &&
	sed "s/^addr = 127.0.0.1:$PA\$/addr = 127.0.0.1:$PF/" "$CONF" >fake.ini &&
	expect_error 1 get -c fake.ini A bal &&
	err_matches "its certificate .A. is a client.s \(role read-only\), not agent A.s" &&
	kill "$SRV"
'

test_done
