#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Compaction: under load with compact_min_size = 4M no data file grows
# past 16 MiB and the total is conserved; cutsnap compact shrinks each file
# to its live state and keeps the state (dump --json before and after, and
# after a restart); a snapshot after a rewrite verifies and restores;
# status shows the file's live size and its last rewrite; bad sizes and
# bad agent names are refused.
. "$(dirname "$0")/lib.sh"

# set_cluster KEY = VALUE: add a line under [cluster].
set_cluster () {
	sed -i "/^\[cluster\]/a $*" "$CONF"
}

# dumps TAG: each agent's dump --json into dump-NAME.TAG.
dumps () {
	local n
	for n in $AGENTS; do
		cs dump "$TEST_DIR/$n.data" --json >"dump-$n.$1" || return 1
	done
}

# same_state DUMP1 DUMP2: two dump --json outputs hold the same state: the
# same keys, values, sent and applied seqs; acked may only have grown
# (ACK records are hints written with the next batch) up to sent.
same_state () {
	python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
for k in a:
    if k != "acked" and a[k] != b.get(k):
        sys.exit("%s differs: %s / %s" % (k, a[k], b.get(k)))
for p, s in a["acked"].items():
    if not s <= b["acked"].get(p, 0) <= b["sent"].get(p, 0):
        sys.exit("acked %s: %d, then %d" % (p, s, b["acked"].get(p, 0)))
' "$1" "$2"
}

same_dumps () {
	local n k=0
	for n in $AGENTS; do
		same_state "dump-$n.$1" "dump-$n.$2" || {
			say "$n: dumps $1 and $2 differ"; return 1
		}
		k=$((k + 1))
	done
	[ "$k" -gt 0 ]
}

max_size () {
	stat -c %s A.data B.data C.data | sort -n | tail -1
}

# blob_loop AGENT: overwrite AGENT's key "blob" with 256 KiB values 80
# times: without compaction its file would grow past 20 MiB.
blob_loop () {
	local i=0
	head -c 196608 /dev/urandom | base64 -w0 >"blob.$1"
	while [ $i -lt 80 ]; do
		cs put -c "$CONF" "$1" blob - <"blob.$1" >/dev/null 2>&1 ||
		    echo "put $1 failed" >>blob.errors
		i=$((i + 1))
	done
	echo "$i" >"blob.$1.count"
}

# any_alive PID...: one of them still runs.
any_alive () {
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}

test_expect_success 'config: a bad compact_min_size is one line, exit 2' '
	make_config A &&
	set_cluster "compact_min_size = 12Q" &&
	expect_error 2 status -c "$CONF" &&
	err_matches "compact_min_size .12Q.: expected a size" &&
	make_config A &&
	set_cluster "compact_min_size = 0" &&
	expect_error 2 status -c "$CONF" &&
	make_config A &&
	set_cluster "compact_min_size = 4M" &&
	expect_exit 1 status -c "$CONF"
'

test_expect_success 'setup: three agents, compact_min_size = 4M' '
	make_config A B C &&
	set_cluster "compact_min_size = 4M" &&
	start_cluster &&
	set_balances A=100000 B=100000 C=100000
'

test_expect_success 'under load and 20 MiB of overwrites each no file exceeds 16 MiB; total conserved' '
	rm -f sizes
	blobs=""
	for n in A B C; do blob_loop $n & blobs="$blobs $!"; done
	BG_PIDS="$BG_PIDS $blobs"
	cs load -c "$CONF" -s 8 --clients 4 --json >load.json 2>load.err &
	LOAD=$!
	BG_PIDS="$BG_PIDS $LOAD"
	# shellcheck disable=SC2086 # a list of pids
	while any_alive $LOAD $blobs; do max_size >>sizes; sleep 0.1; done
	wait $blobs && wait $LOAD &&
	json_check "d[\"conserved\"]" load.json &&
	[ ! -s blob.errors ] &&
	n=$(wc -l <sizes) && [ "$n" -gt 10 ] &&
	biggest=$(sort -n sizes | tail -1) &&
	say "largest file seen: $biggest bytes in $n samples" &&
	[ "$biggest" -le $((16 << 20)) ] &&
	expect_eq "$(cat blob.A.count blob.B.count blob.C.count | tr "\n" " ")" \
	    "80 80 80 " "256 KiB values written per agent"
'

test_expect_success 'each agent compacted on its own (status --json: generation >= 1)' '
	expect_ok status -c "$CONF" --json &&
	cp "$OUT" st.json &&
	json_get "min(a[\"compaction\"][\"generation\"] for a in d)" st.json >gen &&
	[ "$(cat gen)" -ge 1 ] &&
	json_get "len(d)" st.json | grep -qx 3 &&
	grep -q "compaction: [0-9]* -> [0-9]* bytes (live state [0-9]*, generation 1) in [0-9]* ms" \
	    run/A.log
'

test_expect_success 'the total is still 300000' '
	wait_for 20 total_is 300000
'

test_expect_success 'cutsnap compact: each file at most twice its live state, same dump' '
	files_settle A.data B.data C.data &&
	dumps before &&
	expect_ok compact -c "$CONF" --json &&
	cp "$OUT" compact.json &&
	json_get "len(d)" compact.json | grep -qx 3 &&
	json_check "all(a[\"ok\"] for a in d)" compact.json &&
	for n in A B C; do
		after=$(json_get "[a for a in d if a[\"agent\"] == \"$n\"][0][\"after\"]" compact.json) &&
		live=$(json_get "[a for a in d if a[\"agent\"] == \"$n\"][0][\"live\"]" compact.json) &&
		size=$(stat -c %s $n.data) &&
		say "$n: after=$after live=$live size=$size" &&
		[ "$size" -le $((2 * live)) ] && [ "$after" -le $((2 * live)) ] || return 1
	done &&
	files_settle A.data B.data C.data &&
	dumps after &&
	same_dumps before after
'

test_expect_success 'status shows size, live size and the last compaction' '
	expect_ok status -c "$CONF" --json &&
	cp "$OUT" st2.json &&
	json_check "all(a[\"live_size\"] > 0 and a[\"live_size\"] <= 2 * a[\"size\"] and a[\"compaction\"][\"count\"] >= 1 and a[\"compaction\"][\"last_after\"] > 0 and a[\"compaction\"][\"last_at\"] > 0 and a[\"compaction\"][\"running\"] is False for a in d)" st2.json &&
	expect_ok status -c "$CONF" &&
	grep -Eq "^    file  size=[0-9]+  live=[0-9]+  generation=[0-9]+  compacted=20[0-9-]+T" "$OUT"
'

test_expect_success 'agents restart on the rewritten files with the same state' '
	stop_cluster &&
	dumps stopped &&
	same_dumps after stopped &&
	start_cluster &&
	expect_eq "$(total)" 300000 "total" &&
	expect_eq "$(cs get -c "$CONF" A blob | cksum)" "$({ cat blob.A; echo; } | cksum)" "A blob"
'

test_expect_success 'transfers go on; a snapshot after the rewrite verifies and restores' '
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok transfer -c "$CONF" C:bal A:bal 7 &&
	wait_for 10 total_is 300000 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok compact -c "$CONF" A &&
	grep -Eq "^A  [0-9]+ -> [0-9]+ bytes  live=[0-9]+  generation=[0-9]+  ms=[0-9]+$" "$OUT" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	rm -f A.data B.data C.data &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 300000 "restored total"
'

test_expect_success 'dead letters, open and resolved, survive a compaction and resolve after it (5 stays dead)' '
	start_cluster &&
	expect_ok put -c "$CONF" B note text &&
	expect_ok transfer -c "$CONF" A:bal B:note 3 &&
	expect_ok transfer -c "$CONF" A:bal B:note 4 &&
	expect_ok transfer -c "$CONF" C:bal B:note 5 &&
	wait_for 10 eval "cs deadletter -c \"\$CONF\" list B --json | grep -q \"\\\"amount\\\":5\"" &&
	seq=$(cs deadletter -c "$CONF" list B --json | python3 -c "import json, sys; d = json.load(sys.stdin); print([x[\"seq\"] for x in d[\"agents\"][0][\"dead_letters\"] if x[\"amount\"] == 3][0])") &&
	expect_ok deadletter -c "$CONF" refund B A "$seq" &&
	cs deadletter -c "$CONF" list B --all --json >dl.before &&
	json_check "len(d[\"agents\"][0][\"dead_letters\"]) == 3" dl.before &&
	expect_ok compact -c "$CONF" B &&
	cs deadletter -c "$CONF" list B --all --json >dl.after &&
	cmp dl.before dl.after &&
	stop_cluster && start_cluster &&
	cs deadletter -c "$CONF" list B --all --json >dl.restart &&
	cmp dl.before dl.restart &&
	seq=$(json_get "[x[\"seq\"] for x in d[\"agents\"][0][\"dead_letters\"] if x[\"amount\"] == 4][0]" dl.after) &&
	expect_ok deadletter -c "$CONF" refund B A "$seq" &&
	expect_error 1 deadletter -c "$CONF" refund B A "$seq" &&
	wait_for 10 total_is 299995 &&
	stop_cluster
'

test_expect_success 'compact: an unknown agent is exit 2; a stopped agent exit 1' '
	expect_error 2 compact -c "$CONF" Z &&
	err_matches "unknown agent Z" &&
	expect_error 1 compact -c "$CONF" A &&
	err_matches "agent A is not running"
'

test_done
