#!/bin/bash
# No shared filesystem: agents A, B and C each on a host of their own (a
# network namespace and a private mount namespace in which data/ is that
# host's own directory hosts/NAME), the commands and the coordinator in a
# hub that sees an empty data/ and an empty hosts/. The coordinator cannot
# read a single data file: every chunk it stores comes from the agents
# over their TLS connections. A snapshot with a held channel verifies; an
# incremental one sends only the new chunks; a chunk damaged on the way,
# a connection cut mid-stream and an agent killed mid-stream commit
# nothing; concurrent snapshots share the work; each host restores its own
# agent from the shared repository, which equals one full restore, and
# doing it again changes nothing.
. "$(dirname "$0")/lib.sh"
test_require NETNS
. "$_lib_dir/lib-tls.sh"

netns_hub
HOSTS=$TEST_DIR/hosts

# on_host NAME CMD...: CMD on host NAME: its network namespace, and a
# mount namespace in which data/ is hosts/NAME and hosts/ an empty tmpfs.
on_host () {
	local h=$1
	shift
	ip netns exec "$(ns_of "$h")" unshare --mount --propagation private \
	    /bin/sh -c 'mount --bind "$1" "$2" &&
	    mount -t tmpfs -o size=1m,mode=0700 none "$3" && shift 3 &&
	    exec "$@"' sh "$HOSTS/$h" "$TEST_DIR/data" "$HOSTS" "$@"
}

# Every command runs in the hub, where data/ and hosts/ are empty.
cs () {
	timeout -k 5 "${CS_TIMEOUT:-30}" ip netns exec "$NS_HUB" \
	    unshare --mount --propagation private /bin/sh -c '
	    mount -t tmpfs -o size=1m,mode=0700 none "$1" &&
	    mount -t tmpfs -o size=1m,mode=0700 none "$2" && shift 2 &&
	    exec "$@"' sh "$TEST_DIR/data" "$HOSTS" "$CUTSNAP" "$@"
}

# start_agent NAME: agent NAME on its host, 4 KiB chunks (many chunks from
# little data), log in logs/NAME.log.
start_agent () {
	CUTSNAP_CHUNK_SIZE=4096 on_host "$1" setsid "$CUTSNAP" agent \
	    -c "$CONF" --name "$1" >>"$TEST_DIR/logs/$1.log" 2>&1 </dev/null &
	AGENT_PIDS="$AGENT_PIDS $!"
	wait_for 15 agent_up "$1"
}

host_file () { echo "$HOSTS/$1/$1.data"; }

# host_total: the sum of bal over the hosts' data files (read from here,
# outside every namespace).
host_total () {
	local h v s=0
	for h in A B C; do
		v=$("$CUTSNAP" dump "$(host_file $h)" --json |
		    json_get "d[\"keys\"][\"bal\"]" /dev/stdin) || return 1
		s=$((s + v))
	done
	echo "$s"
}

complete_count () {
	sql "select count(*) from snapshots where status = 'complete'"
}

# snap_json ARGS...: a snapshot with --json into $OUT; its exit
# status in RC.
snap_json () {
	cs snapshot -c "$CONF" -r "$REPO" --json "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# pad NAME KB: a fresh value of KB KiB under key pad on agent NAME.
pad () {
	head -c $(($2 * 1024)) /dev/urandom | base64 -w0 | head -c $(($2 * 1024)) |
	    cs put -c "$CONF" "$1" pad - >/dev/null
}

test_expect_success 'setup: hosts A, B, C and a hub; no host sees another'\''s data directory' '
	mkdir -p data logs "$HOSTS/A" "$HOSTS/B" "$HOSTS/C" &&
	netns_hosts A B C &&
	on_host A /bin/sh -c "echo a >data/only-a" &&
	test -f "$HOSTS/A/only-a" &&
	! on_host B test -e data/only-a &&
	! on_host B test -e "$HOSTS/A/only-a" &&
	on_host B test -d data &&
	! ip netns exec "$NS_HUB" unshare --mount /bin/sh -c \
	    "mount -t tmpfs none \"$TEST_DIR/data\" && mount -t tmpfs none \"$HOSTS\" &&
	    find \"$TEST_DIR/data\" \"$HOSTS\" -mindepth 1 | grep -q ." &&
	rm "$HOSTS/A/only-a"
'

test_expect_success 'config and certificates; each agent starts on its host' '
	CONF=$TEST_DIR/cluster.ini REPO=$TEST_DIR/repo AGENTS="A B C" &&
	{
		printf "[cluster]\nrun_dir = data/run\ntls_dir = tls\n" &&
		for h in A B C; do
			printf "\n[agent %s]\ndata = data/%s.data\naddr = %s:7101\n" \
			    $h $h "$(ip_of $h)"
		done
	} >"$CONF" &&
	expect_ok cert -c "$CONF" &&
	start_agent A && start_agent B && start_agent C &&
	wait_for 15 channels_up 12 &&
	set_balances A=100 B=50 C=0 &&
	pad A 40 && pad B 40 && pad C 40 &&
	expect_eq "$(total)" 150 "total" &&
	test -f "$(host_file B)" && ! test -e data/B.data
'

test_expect_success 'held channel across hosts: the snapshot streams every chunk, verifies, holds the 10' '
	snapshot_in_flight 10 --json &&
	cp "$TEST_DIR/.snap.out" full.json &&
	json_check "d[\"status\"] == \"complete\" and d[\"chunks\"][\"copied\"] == d[\"chunks\"][\"listed\"] and d[\"chunks\"][\"listed\"] >= 30 and d[\"chunks\"][\"streamed_bytes\"] == d[\"chunks\"][\"bytes\"] > 120000" full.json &&
	expect_eq "$(sql "select count(*) from messages where snapshot_id = $SNAP_ID")" 1 "messages in flight" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "cut total" &&
	wait_bal B 60
'

test_expect_success 'incremental: only the new chunks cross the wire' '
	expect_ok transfer -c "$CONF" A:bal C:bal 5 &&
	snap_json && expect_eq "$RC" 0 "snapshot exit" &&
	SNAP_ID=$(json_get "d[\"id\"]") &&
	json_check "1 <= d[\"chunks\"][\"copied\"] <= 6 and d[\"chunks\"][\"listed\"] >= 30" &&
	json_check "0 < d[\"chunks\"][\"streamed_bytes\"] == d[\"chunks\"][\"bytes\"] <= 4096 * d[\"chunks\"][\"copied\"]" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(cut_total "$REPO" "$SNAP_ID")" 150 "cut total"
'

test_expect_success 'a chunk damaged on the way is refused: aborted, nothing committed, no stray blob' '
	before=$(complete_count) &&
	blobs_before=$(find repo/blobs -type f | wc -l) &&
	expect_ok transfer -c "$CONF" B:bal C:bal 3 &&
	CUTSNAP_FAULT=coord-stream-corrupt snap_json &&
	expect_eq "$RC" 1 "snapshot exit" &&
	grep -q "arrived damaged: sha256 mismatch" "$ERR" &&
	json_check "d[\"status\"] == \"aborted\"" &&
	bad=$(json_get "d[\"id\"]") &&
	expect_eq "$(snap_status "$bad")" aborted "manifest status" &&
	expect_eq "$(complete_count)" "$before" "complete snapshots" &&
	expect_eq "$(find repo/blobs -name ".tmp*" | wc -l)" 0 "temp files" &&
	at_least 1 "blobs" $(find repo/blobs -type f) &&
	test "$(find repo/blobs -type f | wc -l)" -le $((blobs_before + 6)) &&
	snap_json && expect_eq "$RC" 0 "next snapshot" &&
	expect_ok verify -r "$REPO" "$(json_get "d[\"id\"]")"
'

# stream_bg NAME: new chunks on NAME, then a snapshot in the background
# that fetches slowly; returns once the copy is under way.
stream_bg () {
	pad "$1" 64 && STREAM_DELAY_MS=300 slow_snapshot_bg --timeout 60
}

test_expect_success 'the TCP connection to B cut mid-stream: aborted, nothing committed' '
	before=$(complete_count) &&
	stream_bg B &&
	ip netns exec "$NS_HUB" ss -K dst "$(ip_of B)" >/dev/null &&
	! snapshot_wait &&
	expect_eq "$SNAP_RC" 1 "snapshot exit" &&
	grep -q "agent B" "$TEST_DIR/.snap.err" &&
	expect_eq "$(snap_status "$SNAP_ID")" aborted "manifest status" &&
	expect_eq "$(complete_count)" "$before" "complete snapshots" &&
	wait_for 15 agents_idle &&
	expect_eq "$(total)" 150 "live total"
'

test_expect_success 'agent C killed mid-stream: aborted, nothing committed; restarted, the next one completes' '
	before=$(complete_count) &&
	stream_bg C &&
	pid=$(agent_pid C) && kill -KILL $pid && wait_for 10 pid_gone "$pid" &&
	! snapshot_wait &&
	expect_eq "$SNAP_RC" 1 "snapshot exit" &&
	grep -q "agent C" "$TEST_DIR/.snap.err" &&
	expect_eq "$(snap_status "$SNAP_ID")" aborted "manifest status" &&
	expect_eq "$(complete_count)" "$before" "complete snapshots" &&
	start_agent C && wait_for 15 channels_up 12 &&
	snap_json && expect_eq "$RC" 0 "snapshot after the restart" &&
	expect_ok verify -r "$REPO" "$(json_get "d[\"id\"]")"
'

test_expect_success 'three snapshots at once over the streams: each completes and verifies' '
	pad A 32 &&
	n=0 &&
	for t in s1 s2 s3; do
		snapshot_bg_as $t -r "$REPO" --json && n=$((n + 1))
	done &&
	expect_eq "$n" 3 "started" &&
	ids="" &&
	for t in s1 s2 s3; do
		snapshot_wait_as $t && ids="$ids $SNAP_ID" || return 1
	done &&
	at_least 3 "snapshots" $ids &&
	for id in $ids; do
		expect_ok verify -r "$REPO" "$id" &&
		expect_eq "$(cut_total "$REPO" "$id")" 150 "cut total of $id" || return 1
	done &&
	copied=$(cat .snap-s1.out .snap-s2.out .snap-s3.out |
	    python3 -c "import json,sys; print(sum(json.loads(l)[\"chunks\"][\"copied\"] for l in sys.stdin if l.strip()))") &&
	test "$copied" -ge 8
'

test_expect_success 'stop; each host restores its own agent: the conserved total, equal to one full restore but for the fence' '
	take_snapshot && LAST=$SNAP_ID &&
	expect_eq "$(cut_total "$REPO" "$LAST")" 150 "cut total" &&
	for p in $(agent_pid A) $(agent_pid B) $(agent_pid C); do
		kill -TERM $p && wait_for 15 pid_gone $p || return 1
	done &&
	rm -f "$(host_file A)" "$(host_file B)" "$(host_file C)" &&
	n=0 &&
	for h in A B C; do
		on_host $h timeout 30 "$CUTSNAP" restore -r "$REPO" "$LAST" \
		    -c "$CONF" --agent $h >"$OUT" 2>"$ERR" || { show_out; return 1; }
		n=$((n + 1))
	done &&
	expect_eq "$n" 3 "hosts restored" &&
	expect_eq "$(host_total)" 150 "restored total" &&
	sed "s#^data = data/#data = full/#" "$CONF" >full.ini && mkdir full &&
	timeout 30 "$CUTSNAP" restore -r "$REPO" "$LAST" -c full.ini >"$OUT" 2>"$ERR" &&
	for h in A B C; do
		"$CUTSNAP" dump "$(host_file $h)" --json >host.json &&
		"$CUTSNAP" dump full/$h.data --json >full.json &&
		python3 -c "import json, sys
h, f = json.load(open(\"host.json\")), json.load(open(\"full.json\"))
fenced = h.pop(\"fenced\"), f.pop(\"fenced\")
sys.exit(h != f or fenced != ($LAST, None))" || return 1
	done
'

test_expect_success 'each host restores again: nothing changes' '
	sha256sum "$(host_file A)" "$(host_file B)" "$(host_file C)" >before.sum &&
	for h in A B C; do
		on_host $h timeout 30 "$CUTSNAP" restore -r "$REPO" "$LAST" \
		    -c "$CONF" --agent $h >"$OUT" 2>"$ERR" || { show_out; return 1; }
	done &&
	sha256sum -c --quiet before.sum &&
	expect_eq "$(host_total)" 150 "restored total"
'

test_done
