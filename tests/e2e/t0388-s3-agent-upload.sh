#!/bin/bash
# Agents on other hosts put their own chunks into the bucket. Agents A
# and B each in a network namespace of their own, the commands and the
# coordinator in a hub namespace joined to them by a bridge, over TCP +
# mutual TLS; the S3 server (radosgw) on the root namespace's loopback,
# reached from the hub and from the hosts through a relay that listens on
# the hub's bridge address. The repository is s3:// without compression,
# so each blob is its chunk: the agents upload their new chunks
# themselves (0 bytes over their control connections, nothing in the
# coordinator's cache), the snapshot verifies and restores from an empty
# directory with the total conserved; an incremental snapshot uploads
# only the new chunks; an agent with a wrong secret falls back to the
# coordinator's upload (one warning line), as does one whose endpoint
# does not answer, and the snapshot still holds
# every chunk; an agent killed mid-upload commits nothing; in a
# compressed repository the agents upload each chunk's zstd object,
# which verifies and restores.
. "$(dirname "$0")/lib.sh"
test_require S3,NETNS
. "$_lib_dir/lib-s3.sh"
. "$_lib_dir/lib-tls.sh"

netns_hub

RGW_URL=$AWS_ENDPOINT_URL
RELAY_PORT=9000
RELAY_URL=http://10.77.0.254:$RELAY_PORT
export CUTSNAP_CHUNK_SIZE=16384

# The commands and the coordinator run in the hub, where the S3 server
# is the relay.
cs () {
	timeout -k 5 "${CS_TIMEOUT:-60}" ip netns exec "$NS_HUB" \
	    env AWS_ENDPOINT_URL="$RELAY_URL" "$CUTSNAP" "$@"
}

# start_agent NAME [VAR=VALUE...]: agent NAME on its host with its own
# AWS_* environment (the relay, the test user's keys, unless the VARs
# say otherwise); log in run/NAME.log.
start_agent () {
	local h=$1
	shift
	mkdir -p "$TEST_DIR/run" &&
	ip netns exec "$(ns_of "$h")" env AWS_ENDPOINT_URL="$RELAY_URL" "$@" \
	    setsid "$CUTSNAP" agent -c "$CONF" --name "$h" \
	    >>"$TEST_DIR/run/$h.log" 2>&1 </dev/null &
	AGENT_PIDS="$AGENT_PIDS $!"
	wait_for 15 agent_up "$h"
}

# The relay: listens in the hub on its bridge address, connects to the
# S3 server on the root namespace's loopback.
cat >relay.py <<'EOF'
import ctypes, os, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
root = os.open("/proc/self/ns/net", os.O_RDONLY)
hub = os.open("/var/run/netns/" + sys.argv[1], os.O_RDONLY)
if libc.setns(hub, 0x40000000) != 0:
    sys.exit("setns into the hub failed")
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((sys.argv[2], int(sys.argv[3])))
ls.listen(64)
if libc.setns(root, 0x40000000) != 0:
    sys.exit("setns back failed")
dst = (sys.argv[4], int(sys.argv[5]))
print("ready", flush=True)

def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
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
    t = threading.Thread(target=pump, args=(u, c), daemon=True)
    t.start()
    pump(c, u)
    t.join()
    c.close()
    u.close()

while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF

agent_down () { ! agent_up "$1"; }

# blobs_in_cache: the blob files in the coordinator's cache.
blobs_in_cache () {
	find "$CUTSNAP_CACHE_DIR" -type f -regextype egrep \
	    -regex '.*/blobs/[0-9a-f]{2}/[0-9a-f]{64}' 2>/dev/null | wc -l
}

# refs_missing: how many blobs the newest committed manifest refers to
# are not in the bucket (the manifest is left in newest.db).
refs_missing () {
	newest_refs >/dev/null &&
	sqlite3 newest.db "select distinct sha256 from agent_chunks" | sort >refs &&
	s3keys "$BUCKET" repo/blobs/ | sed -n 's#^repo/blobs/../##p' | sort >have &&
	[ -s refs ] &&
	comm -23 refs have | wc -l
}

# commits: how many commits the bucket holds.
commits () { s3count "$BUCKET" repo/commits/; }

# pad NAME KB: a fresh value of KB KiB of text under key pad on NAME.
pad () {
	head -c $(($2 * 1024)) /dev/urandom | base64 -w0 | head -c $(($2 * 1024)) |
	    cs put -c "$CONF" "$1" "pad$RANDOM" - >/dev/null
}

# restored_total DIR: sum of bal over DIR's restored A and B data files.
restored_total () {
	local h v s=0
	for h in A B; do
		v=$("$CUTSNAP" dump "$1/$h.data" --json |
		    json_get "d[\"keys\"][\"bal\"]" /dev/stdin) || return 1
		s=$((s + v))
	done
	echo "$s"
}

UP1='' NB1='' NC1=''

test_expect_success 'setup: hosts A and B, a hub, a relay to the S3 server; the hub reaches it only through the relay' '
	netns_hosts A B &&
	rgw=${RGW_URL#http://} &&
	{ python3 relay.py "$NS_HUB" 10.77.0.254 "$RELAY_PORT" "${rgw%:*}" \
	    "${rgw##*:}" >relay.out 2>relay.err & } &&
	BG_PIDS="$BG_PIDS $!" &&
	wait_for 10 grep -q ready relay.out &&
	ip netns exec "$(ns_of A)" curl -s -o /dev/null -w "%{http_code}" "$RELAY_URL/" | grep -q "^[1-5][0-9][0-9]$" &&
	! ip netns exec "$NS_HUB" curl -s -m 2 -o /dev/null "$RGW_URL/"
'

test_expect_success 'config, certificates, agents on their hosts; an uncompressed repository in the bucket' '
	make_tls_config A=10.77.0.1:7101 B=10.77.0.2:7102 &&
	expect_ok cert -c "$CONF" &&
	start_agent A && start_agent B &&
	wait_for 15 channels_up 4 &&
	set_balances A=100 B=50 &&
	pad A 200 && pad B 200 &&
	expect_eq "$(total)" 150 "total" &&
	expect_ok init -r "$REPO_URL" --compression none
'

test_expect_success 'full snapshot: the agents upload every chunk; none crosses a control connection; the bucket has them all' '
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	cp "$OUT" full.json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"listed\"] >= 20 and d[\"chunks\"][\"copied\"] == d[\"chunks\"][\"listed\"] and d[\"chunks\"][\"agent_uploaded\"] == d[\"chunks\"][\"copied\"] and d[\"chunks\"][\"streamed_bytes\"] == 0 and d[\"chunks\"][\"agent_uploaded_bytes\"] == d[\"chunks\"][\"bytes\"] > 400000" full.json &&
	! grep -q . "$ERR" &&
	UP1=$(json_get "d[\"chunks\"][\"agent_uploaded\"]" full.json) &&
	a=$(sed -n "s#.*uploaded \([0-9]*\) chunks (.*to $REPO_URL.*#\1#p" run/A.log | tail -n 1) &&
	b=$(sed -n "s#.*uploaded \([0-9]*\) chunks (.*to $REPO_URL.*#\1#p" run/B.log | tail -n 1) &&
	say "A uploaded $a, B $b, the snapshot says $UP1" &&
	[ "$a" -gt 0 ] && [ "$b" -gt 0 ] && expect_eq "$((a + b))" "$UP1" "uploads in the logs" &&
	expect_eq "$(blobs_in_cache)" 0 "blobs in the coordinator cache" &&
	expect_eq "$(commits)" 2 "commits (init, snapshot)" &&
	expect_eq "$(refs_missing)" 0 "referenced blobs missing" &&
	expect_eq "$(wc -l <refs)" "$UP1" "blobs referenced" &&
	one=$(head -n 1 refs) &&
	aws --endpoint-url "$RGW_URL" s3api head-object --bucket "$BUCKET" \
	    --key "repo/blobs/${one:0:2}/$one" >head.json &&
	json_check "d[\"ContentLength\"] > 0" head.json
'

test_expect_success 'verify and restore from an empty directory: the total is conserved' '
	cs verify -r "$REPO_URL" --json >"$OUT" 2>"$ERR" &&
	json_check "d[\"ok\"]" &&
	mkdir fresh &&
	sed "s#^run_dir = .*#run_dir = run#" "$CONF" >fresh/cluster.ini &&
	(
		cd fresh &&
		CUTSNAP_CACHE_DIR=$TEST_DIR/nocache timeout 60 "$CUTSNAP" restore \
		    -c cluster.ini -r "$REPO_URL"
	) >"$OUT" 2>"$ERR" &&
	! test -e nocache/blobs &&
	expect_eq "$(restored_total fresh)" 150 "restored total"
'

test_expect_success 'incremental snapshot: the agents upload only the new chunks' '
	NB1=$(s3count "$BUCKET" repo/blobs/) &&
	pad A 40 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	cp "$OUT" incr.json &&
	json_check "d[\"status\"] == \"complete\" and 0 < d[\"chunks\"][\"agent_uploaded\"] == d[\"chunks\"][\"copied\"] < d[\"chunks\"][\"listed\"] / 3 and d[\"chunks\"][\"streamed_bytes\"] == 0" incr.json &&
	n=$(json_get "d[\"chunks\"][\"agent_uploaded\"]" incr.json) &&
	expect_eq "$(s3count "$BUCKET" repo/blobs/)" "$((NB1 + n))" "blobs in the bucket" &&
	log_has A "uploaded $n chunks .*, 0 there already, 0 failed" &&
	expect_eq "$(refs_missing)" 0 "referenced blobs missing"
'

test_expect_success 'an agent with a wrong secret: its chunks come through the coordinator, one warning, every chunk stored' '
	kill -TERM "$(agent_pid B)" && wait_for 15 agent_down B &&
	start_agent B AWS_SECRET_ACCESS_KEY=wrong-secret &&
	wait_for 15 channels_up 4 &&
	pad A 40 && pad B 40 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	cp "$OUT" wrong.json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"agent_uploaded\"] > 0 and d[\"chunks\"][\"streamed_bytes\"] > 0 and d[\"chunks\"][\"copied\"] > d[\"chunks\"][\"agent_uploaded\"]" wrong.json &&
	expect_eq "$(wc -l <"$ERR")" 1 "stderr lines" &&
	err_matches "^cutsnap: snapshot: warning: agent B did not upload [0-9]+ chunks to $REPO_URL \(.*(denied|Forbidden|Signature).*\); they came through the coordinator" &&
	log_has B "uploaded 0 chunks .* failed: " &&
	expect_eq "$(refs_missing)" 0 "referenced blobs missing" &&
	cs verify -r "$REPO_URL" --json >"$OUT" 2>"$ERR" &&
	json_check "d[\"ok\"]"
'

test_expect_success 'an agent whose endpoint does not answer: the same fallback, and the snapshot completes' '
	kill -TERM "$(agent_pid B)" && wait_for 15 agent_down B &&
	start_agent B AWS_ENDPOINT_URL=http://10.77.0.254:1 &&
	wait_for 15 channels_up 4 &&
	pad B 40 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"streamed_bytes\"] > 0" &&
	expect_eq "$(wc -l <"$ERR")" 1 "stderr lines" &&
	err_matches "^cutsnap: snapshot: warning: agent B did not upload [0-9]+ chunks to $REPO_URL \(.*10[.]77[.]0[.]254.*\); they came through the coordinator" &&
	expect_eq "$(refs_missing)" 0 "referenced blobs missing"
'

test_expect_success 'an agent killed mid-upload: the snapshot fails, nothing is committed; the next one completes' '
	kill -TERM "$(agent_pid A)" "$(agent_pid B)" &&
	wait_for 15 agent_down A && wait_for 15 agent_down B &&
	start_agent A CUTSNAP_FAULT=agent-upload-delay:3000 && start_agent B &&
	wait_for 15 channels_up 4 &&
	pad A 100 &&
	NC1=$(commits) &&
	n=$(log_count A "uploading [0-9]+ chunks to $REPO_URL") &&
	{ cs snapshot -c "$CONF" -r "$REPO_URL" >"$TEST_DIR/.snap.out" 2>"$TEST_DIR/.snap.err" & } &&
	SNAP_PID=$! && BG_PIDS="$BG_PIDS $SNAP_PID" &&
	wait_for 30 eval "[ \$(log_count A \"uploading [0-9]+ chunks to $REPO_URL\") -gt $n ]" &&
	kill -KILL "$(agent_pid A)" &&
	! snapshot_wait &&
	expect_eq "$SNAP_RC" 1 "snapshot exit status" &&
	grep -q "agent A" "$TEST_DIR/.snap.err" &&
	expect_eq "$(commits)" "$NC1" "commits" &&
	start_agent A && wait_for 15 channels_up 4 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" --json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"streamed_bytes\"] == 0" &&
	expect_eq "$(commits)" "$((NC1 + 1))" "commits" &&
	expect_eq "$(refs_missing)" 0 "referenced blobs missing"
'

test_expect_success 'a compressed repository: the agents upload each chunk as its zstd object; it verifies and restores' '
	c0=$(blobs_in_cache) &&
	expect_ok snapshot -c "$CONF" -r "s3://$BUCKET/zrepo" --json &&
	cp "$OUT" z.json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"copied\"] >= 20 and d[\"chunks\"][\"agent_uploaded\"] == d[\"chunks\"][\"copied\"] and d[\"chunks\"][\"streamed_bytes\"] == 0" z.json &&
	! grep -q . "$ERR" &&
	expect_eq "$(blobs_in_cache)" "$c0" "blobs in the coordinator cache" &&
	k=$(s3keys "$BUCKET" zrepo/blobs/ | grep -E "/blobs/[0-9a-f]{2}/[0-9a-f]{64}$" | head -n 1) &&
	[ -n "$k" ] &&
	aws --endpoint-url "$RGW_URL" s3 cp "s3://$BUCKET/$k" zobj >/dev/null &&
	expect_eq "$(head -c 4 zobj)" CSO1 "object magic" &&
	expect_eq "$(od -An -tu1 -j4 -N1 zobj | tr -d " ")" 1 "codec (zstd)" &&
	sz=$(stat -c %s zobj) && [ "$sz" -lt 16384 ] &&
	cs verify -r "s3://$BUCKET/zrepo" --json >"$OUT" 2>"$ERR" &&
	json_check "d[\"ok\"]" &&
	mkdir zfresh &&
	sed "s#^run_dir = .*#run_dir = run#" "$CONF" >zfresh/cluster.ini &&
	(
		cd zfresh &&
		CUTSNAP_CACHE_DIR=$TEST_DIR/znocache timeout 60 "$CUTSNAP" \
		    restore -c cluster.ini -r "s3://$BUCKET/zrepo"
	) >"$OUT" 2>"$ERR" &&
	expect_eq "$(restored_total zfresh)" 150 "restored total"
'

test_done
