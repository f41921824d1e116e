#!/bin/bash
# Snapshots while an agent keeps writing (large values, many keys): each
# recorded file is one moment of that agent, a prefix of what it wrote.
. "$(dirname "$0")/lib.sh"

# writer N: put A seq/1..N in order, each with a 256 KiB value, then done.
writer () {
	local i
	for i in $(seq 1 "$1"); do
		cs put -c "$CONF" A "k$i" - <big.val >/dev/null 2>>writer.err ||
		    echo "put k$i failed" >>writer.errors
		cs put -c "$CONF" A last "$i" >/dev/null 2>>writer.err ||
		    echo "put last $i failed" >>writer.errors
	done
}

# prefix_ok FILE: the keys k1..kL exist for L = the file's "last", and no
# k(L+2) (k(L+1) may be written just before "last" moved); prints L.
# Read from dump --json.
prefix_ok () {
	cs dump "$1" --json >dump.json || return 1
	python3 - "$1" dump.json <<-'PY'
	import json, sys
	keys = json.load(open(sys.argv[2]))["keys"]
	last = int(keys.get("last", 0))
	missing = [i for i in range(1, last + 1) if "k%d" % i not in keys]
	if missing:
	    sys.exit("%s: last=%d but k%d missing" % (sys.argv[1], last, missing[0]))
	if "k%d" % (last + 2) in keys:
	    sys.exit("%s: k%d beyond last=%d" % (sys.argv[1], last + 2, last))
	print(last)
	PY
}

test_expect_success 'setup: two agents, a 256 KiB value' '
	make_config A B &&
	# The blobs are read and damaged here as the chunks themselves.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	head -c 196608 /dev/urandom | base64 -w 0 >big.val &&
	[ "$(stat -c %s big.val)" -eq 262144 ]
'

test_expect_success 'snapshots while A writes 60 large values: all complete' '
	writer 60 &
	W=$! && BG_PIDS="$BG_PIDS $W" &&
	IDS="" && k=0 &&
	while [ $k -lt 3 ] || { [ $k -lt 12 ] && kill -0 $W 2>/dev/null; }; do
		take_snapshot --initiator B || return 1
		IDS="$IDS $SNAP_ID"
		k=$((k + 1))
	done &&
	wait "$W" &&
	[ ! -s writer.errors ] || { cat writer.errors writer.err; false; }
'

test_expect_success 'every snapshot verifies' '
	at_least 3 snapshots $IDS &&
	for id in $IDS; do
		expect_ok verify -r "$REPO" "$id" || return 1
	done
'

test_expect_success 'each recorded file of A is a prefix of its writes, growing' '
	at_least 3 snapshots $IDS &&
	prev=0 &&
	for id in $IDS; do
		last=$(prefix_ok "$(blob_path "$id" A)") || return 1
		say "snapshot $id: last=$last"
		[ "$last" -ge "$prev" ] || { say "snapshot $id went back: $last < $prev"; return 1; }
		prev=$last
	done &&
	[ "$prev" -gt 0 ] || { say "no snapshot recorded a write of A"; false; }
'

test_expect_success 'the recorded values are the written bytes' '
	set -- $IDS && id=$(eval echo \${$#}) &&
	cs dump "$(blob_path "$id" A)" --json >k1.json &&
	json_get "d[\"keys\"][\"k1\"]" k1.json >k1.val &&
	{ cmp -s k1.val big.val || { printf "\n" | cat big.val - | cmp - k1.val; }; }
'

test_expect_success 'restore the middle snapshot: A holds exactly its prefix' '
	stop_cluster &&
	set -- $IDS && mid=$(eval echo \${$(( ($# + 1) / 2 ))}) &&
	want=$(prefix_ok "$(blob_path "$mid" A)") &&
	expect_ok restore -r "$REPO" "$mid" -c "$CONF" &&
	expect_eq "$(prefix_ok A.data)" "$want" "last after restore" &&
	start_cluster &&
	expect_ok get -c "$CONF" A last &&
	expect_eq "$(cat "$OUT")" "$want" "live last"
'

test_expect_success 'the repository stores a repeated file once (content addressed)' '
	take_snapshot &&
	S1=$SNAP_ID &&
	take_snapshot &&
	S2=$SNAP_ID &&
	expect_eq "$(chunk_paths "$S1" A)" "$(chunk_paths "$S2" A)" "chunks of A" &&
	expect_eq "$(find "$REPO/blobs" -type f ! -name ".*" | wc -l)" \
	    "$(sql "select count(distinct sha256) from agent_chunks")" "blob files"
'

test_done
