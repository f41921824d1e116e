#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# verify's memory does not grow with a file's history: the same live
# state (two balances) recorded after a history of about 1 MiB a file
# (1x) and after 20 times as much (20x); the growth of verify's peak RSS
# between the two must stay under a quarter of the growth of the recorded
# bytes (it kept every file whole in memory, and every SEND of its
# history: more than the bytes). Small chunks (the CUTSNAP_CHUNK_SIZE test
# hook) keep the per-chunk buffers out of the figure. No timing: only
# sizes. Both snapshots hold messages in flight on a held channel, so the
# cut check still compares them with the SEND records. restore (verify and
# write in one pass) has the same bound.
TEST_TIMEOUT=${TEST_TIMEOUT:-800}
. "$(dirname "$0")/lib.sh"

# peak_kib CMD...: run a cutsnap command, print its peak RSS in KiB
# (getrusage of the child); fails when the command fails. A sanitizer
# build keeps freed memory in a quarantine, which would be counted as
# verify's: none for this measure (other builds ignore the variable).
peak_kib () {
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0 \
	python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
if r.returncode != 0:
    sys.exit("exit %d" % r.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$CUTSNAP" "$@"
}

smallest () { stat -c %s A.data B.data | sort -n | head -1; }

# grow_to BYTES: load until both files are at least BYTES long (bounded);
# every load conserves the total.
grow_to () {
	local k=0
	while [ "$(smallest)" -lt "$1" ] && [ $k -lt 60 ]; do
		cs load -c "$CONF" -s 2 --clients 8 --json >load.json &&
		json_check "d[\"conserved\"]" load.json || return 1
		k=$((k + 1))
	done
	say "smallest file $(smallest) bytes after $k loads"
	[ "$(smallest)" -ge "$1" ]
}

# snap_held TAG: a snapshot while A->B holds 3 transfers (in flight in
# the cut); its id into TAG.id, its recorded bytes into TAG.bytes.
snap_held () {
	expect_ok channel -c "$CONF" hold A B &&
	for i in 1 2 3; do
		cs transfer -c "$CONF" A:bal B:bal 7 >/dev/null || return 1
	done &&
	snapshot_bg --initiator B &&
	wait_recorded A && wait_recorded B &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	echo "$SNAP_ID" >"$1.id" &&
	wait_for 20 total_is 200000 &&
	expect_ok ls -r "$REPO" --json &&
	json_get "[s[\"bytes\"] for s in d if s[\"id\"] == $SNAP_ID][0]" >"$1.bytes" &&
	expect_eq "$(json_get "[s[\"msgs\"] for s in d if s[\"id\"] == $SNAP_ID][0]")" 3 \
	    "messages in flight in $1"
}

test_expect_success 'setup: two agents, 64 KiB chunks, no automatic compaction' '
	make_config A B &&
	sed -i "/^\[cluster\]/a compact_min_size = 1G" "$CONF" &&
	CUTSNAP_CHUNK_SIZE=65536 start_cluster &&
	set_balances A=100000 B=100000
'

test_expect_success '1x: a history of at least 1 MiB a file, snapshot over 3 messages in flight' '
	grow_to $((1 << 20)) &&
	snap_held x1
'

test_expect_success '20x: the history grown to at least 20 times that, snapshot again' '
	grow_to $((20 * $(cat x1.bytes) / 2)) &&
	snap_held x20 &&
	say "recorded bytes: 1x $(cat x1.bytes), 20x $(cat x20.bytes)" &&
	[ "$(cat x20.bytes)" -ge $((19 * $(cat x1.bytes))) ]
'

test_expect_success 'both verify; verify of 20x grows by under a quarter of its extra bytes' '
	r1=$(CUTSNAP_CHUNK_SIZE=65536 peak_kib verify -q -r "$REPO" "$(cat x1.id)") &&
	r20=$(CUTSNAP_CHUNK_SIZE=65536 peak_kib verify -q -r "$REPO" "$(cat x20.id)") &&
	grow=$((r20 - r1)) &&
	extra=$((($(cat x20.bytes) - $(cat x1.bytes)) / 1024)) &&
	say "verify peak RSS: 1x $r1 KiB, 20x $r20 KiB; growth $grow KiB for $extra KiB more recorded bytes (bound $((extra / 4)) KiB)" &&
	[ "$grow" -lt $((extra / 4)) ]
'

test_expect_success 'stop' '
	stop_cluster
'

# restore verifies and writes in one pass with the same bound: each chunk
# from a worker's buffer to the temp file, the replay reading that back.
test_expect_success 'both restore; restore of 20x grows by under a quarter of its extra bytes' '
	r1=$(CUTSNAP_CHUNK_SIZE=65536 peak_kib restore -q -r "$REPO" "$(cat x1.id)" -c "$CONF") &&
	r20=$(CUTSNAP_CHUNK_SIZE=65536 peak_kib restore -q -r "$REPO" "$(cat x20.id)" -c "$CONF") &&
	grow=$((r20 - r1)) &&
	extra=$((($(cat x20.bytes) - $(cat x1.bytes)) / 1024)) &&
	say "restore peak RSS: 1x $r1 KiB, 20x $r20 KiB; growth $grow KiB for $extra KiB more recorded bytes (bound $((extra / 4)) KiB)" &&
	[ "$grow" -lt $((extra / 4)) ] &&
	[ "$(stat -c %s A.data)" -ge $(($(cat x20.bytes) / 4)) ]
'

test_done
