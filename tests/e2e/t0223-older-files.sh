#!/bin/bash
# Data files written before channels had a history chain (SEND and APPLY
# records without it, messages without an id) still open: their channels
# connect unchecked, deliver what was in flight exactly once, and from the
# next message on both ends keep one chain again, also across restarts,
# snapshots and a restore.
. "$(dirname "$0")/lib.sh"

# old_files: A.data and B.data as an older version wrote them: A=100 sent
# 5 (seq 1, acknowledged) and 7 (seq 2, in flight) to B; B=50 applied seq 1.
old_files () {
	python3 - "$TEST_DIR" <<'PY'
import struct, sys, zlib
def b(x): return struct.pack("<I", len(x)) + x
def rec(t, payload):
    body = bytes([t]) + payload
    return struct.pack("<II", len(body), zlib.crc32(body)) + body
def msg(key, amount): return bytes([1]) + b(key) + struct.pack("<q", amount)
hdr = b"CUTSNAPL" + struct.pack("<II", 1, 0)
a = hdr + rec(1, b(b"bal") + b(b"100"))
a += rec(3, b(b"B") + struct.pack("<Q", 1) + b(b"bal") + b(b"95") + b(msg(b"bal", 5)))
a += rec(3, b(b"B") + struct.pack("<Q", 2) + b(b"bal") + b(b"88") + b(msg(b"bal", 7)))
a += rec(5, b(b"B") + struct.pack("<Q", 1))
bb = hdr + rec(1, b(b"bal") + b(b"50"))
bb += rec(4, b(b"A") + struct.pack("<Q", 1) + b(b"bal") + b(b"55"))
open(sys.argv[1] + "/A.data", "wb").write(a)
open(sys.argv[1] + "/B.data", "wb").write(bb)
PY
}

test_expect_success 'files of an older version: they open, the message in flight arrives once' '
	make_config A B &&
	old_files &&
	expect_eq "$(dump_total bal)" 143 "total in the files (7 in flight)" &&
	start_cluster &&
	wait_bal B 62 &&
	wait_channels_settled &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'they connected unchecked, and said so once per channel end' '
	grep -q "channel A>B: no history chain yet at seq 1 .*accepted unchecked" run/A.log &&
	! grep -q "diverged" run/A.log run/B.log
'

test_expect_success 'new transfers both ways; after a restart the ends agree on the chain' '
	expect_ok transfer -c "$CONF" A:bal B:bal 3 &&
	expect_ok transfer -c "$CONF" B:bal A:bal 4 &&
	wait_bal A 89 &&
	wait_bal B 61 &&
	stop_cluster &&
	start_cluster &&
	wait_channels_settled &&
	expect_ok status -c "$CONF" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 2 &&
	wait_bal B 63 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'a snapshot of the mixed files verifies and restores into agreeing ends' '
	snapshot_in_flight 1 &&
	wait_bal B 64 &&
	expect_eq "$(msg_count "$SNAP_ID" A B)" 1 "messages recorded on A->B" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	wait_channels_settled &&
	expect_eq "$(bal A)/$(bal B)" 86/64 "A/B restored" &&
	expect_ok transfer -c "$CONF" B:bal A:bal 4 &&
	wait_bal A 90 &&
	expect_eq "$(total)" 150 "total" &&
	stop_cluster
'

test_done
