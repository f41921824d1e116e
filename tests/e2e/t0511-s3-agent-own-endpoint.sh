#!/bin/bash
# Agents sign requests only for their own endpoint. Agents A and B over
# TCP + TLS on loopback (so the coordinator streams their files and asks
# them to upload); the commands and the coordinator reach the S3 server
# through a relay that records every byte sent to it. With their own
# AWS_ENDPOINT_URL (the server, plain http, which their own environment
# allows) the agents upload every chunk there: the relay sees no blob
# PUT. An agent with no endpoint of its own refuses the upload, whatever
# endpoint the coordinator uses: its session token never reaches the
# relay, the snapshot names why in one warning line and its chunks come
# through the coordinator.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"
. "$_lib_dir/lib-tls.sh"

RGW_URL=$AWS_ENDPOINT_URL
export CUTSNAP_CHUNK_SIZE=16384
REPO_URL=s3://$BUCKET/repo

# The commands and the coordinator use the relay as their endpoint.
cs () {
	timeout -k 5 "${CS_TIMEOUT:-60}" env AWS_ENDPOINT_URL="$RELAY_URL" \
	    "$CUTSNAP" "$@"
}

# start_agent NAME [-u] [VAR=VALUE...]: agent NAME with its own endpoint
# (the server), or with -u none, and the VARs in its environment.
start_agent () {
	local h=$1 ep=(AWS_ENDPOINT_URL="$RGW_URL")
	shift
	if [ "${1:-}" = -u ]; then
		ep=(-u AWS_ENDPOINT_URL)
		shift
	fi
	mkdir -p run &&
	env "${ep[@]}" "$@" setsid "$CUTSNAP" agent \
	    -c "$CONF" --name "$h" >>"run/$h.log" 2>&1 </dev/null &
	AGENT_PIDS="$AGENT_PIDS $!"
	wait_for 15 agent_up "$h"
}
agent_down () { ! agent_up "$1"; }

cat >relay.py <<'PY'
import socket, sys, threading
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
dst = (sys.argv[1], int(sys.argv[2]))
rec = open(sys.argv[3], "ab", buffering=0)
lock = threading.Lock()
print(ls.getsockname()[1], flush=True)

def pump(a, b, log):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            if log:
                with lock:
                    rec.write(d)
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def serve(c):
    try:
        u = socket.create_connection(dst)
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pump, args=(u, c, False), daemon=True)
    t.start()
    pump(c, u, True)
    t.join()
    c.close()
    u.close()

while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY

# pad NAME KB: a fresh value of KB KiB of text on NAME.
pad () {
	head -c $(($2 * 1024)) /dev/urandom | base64 -w0 | head -c $(($2 * 1024)) |
	    cs put -c "$CONF" "$1" "pad$RANDOM" - >/dev/null
}

# blob_puts: the blob uploads the relay has seen.
blob_puts () { grep -aEc "^PUT /$BUCKET/repo/blobs/[0-9a-f]{2}/" relay.rec || true; }

test_expect_success 'setup: a recording relay to the S3 server, agents A and B with their own endpoint' '
	rgw=${RGW_URL#http://} &&
	: >relay.rec &&
	{ python3 relay.py "${rgw%:*}" "${rgw##*:}" relay.rec >relay.out 2>relay.err & } &&
	BG_PIDS="$BG_PIDS $!" &&
	wait_for 10 grep -q "^[0-9]" relay.out &&
	RELAY_URL=http://127.0.0.1:$(head -n 1 relay.out) &&
	read -r PA PB < <(free_ports 2 | paste -sd" ") &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF" &&
	start_agent A && start_agent B &&
	wait_for 15 channels_up 4 &&
	set_balances A=100 B=50 &&
	pad A 100 && pad B 100 &&
	expect_ok init -r "$REPO_URL" --compression none &&
	grep -aq "^PUT /$BUCKET/repo/" relay.rec
'

test_expect_success 'agents with their own endpoint upload there: no blob passes the relay' '
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"copied\"] > 5 and d[\"chunks\"][\"agent_uploaded\"] == d[\"chunks\"][\"copied\"] and d[\"chunks\"][\"streamed_bytes\"] == 0" &&
	! grep -q . "$ERR" &&
	expect_eq "$(blob_puts)" 0 "blob PUTs through the relay"
'

test_expect_success 'an agent with no endpoint of its own refuses: its token never reaches the coordinator endpoint' '
	kill -TERM "$(agent_pid B)" && wait_for 15 agent_down B &&
	start_agent B -u AWS_SESSION_TOKEN=canary-token-of-B &&
	wait_for 15 channels_up 4 &&
	pad B 40 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"streamed_bytes\"] > 0" &&
	expect_eq "$(wc -l <"$ERR")" 1 "stderr lines" &&
	err_matches "^cutsnap: snapshot: warning: agent B did not upload [0-9]+ chunks to $REPO_URL \(agent B: no S3 endpoint of its own \(AWS_ENDPOINT_URL in the agent.s environment\).*\); they came through the coordinator" &&
	! grep -aq canary-token-of-B relay.rec &&
	cs verify -r "$REPO_URL" --json >"$OUT" 2>"$ERR" &&
	json_check "d[\"ok\"]"
'

test_done
