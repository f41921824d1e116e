#!/bin/bash
# A chunk that only grew since the agent's previous snapshot is stored as
# the previous snapshot's object of it plus one zstd frame of the new
# bytes (store/chunkdelta.c): snapshot --json counts those chunks as
# "extended". Each such blob decodes to exactly its chunk (verify,
# restore, and zstd itself), holds at most 8 frames, and is never built
# on a previous blob that rotted or on a file whose old bytes changed
# (compaction). An encrypted repository extends too: the previous blob is
# opened under its name and the new one sealed under its own.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_PASSWORD=extend-test
unset CUTSNAP_PASSWORD_FILE

ENC=$TEST_DIR/enc
N=0	# text values put so far (keys t1..tN)

# grow AGENT [COUNT] [BYTES]: COUNT (default 1) new values of BYTES
# (default 2000) bytes of text.
grow () {
	local i
	for i in $(seq 1 "${2:-1}"); do
		N=$((N + 1))
		yes "$1 line $N of the history" | head -c "${3:-2000}" |
		    cs put -c "$CONF" "$1" "t$N" - || return 1
	done
}
# snap_json REPO: a snapshot into REPO that completes; SNAP_ID and OUT set.
snap_json () {
	expect_ok snapshot -c "$CONF" -r "$1" --json &&
	SNAP_ID=$(json_get 'd["id"]') && [ -n "$SNAP_ID" ]
}
# extended: the last snapshot's count of extended chunks.
extended () { json_get 'd["chunks"]["extended"]'; }
# last_blob ID AGENT: the blob of the agent's last chunk in snapshot ID.
last_blob () { chunk_paths "$1" "$2" | tail -n 1; }
# frames BLOB: how many zstd frames the object's payload holds.
frames () {
	tail -c +17 "$1" >"$TEST_DIR/.payload.zst" &&
	zstd -lv "$TEST_DIR/.payload.zst" 2>/dev/null |
	    sed -n 's/^# Zstandard Frames: //p'
}
# same_bytes ID AGENT: the agent's file of snapshot ID, put together from
# its blobs with zstd (blob_path checks its sha256), is the recorded one.
same_bytes () {
	local p
	p=$(blob_path "$1" "$2") &&
	expect_eq "$(sha256sum <"$p" | cut -d" " -f1)" \
	    "$(sql "select lower(sha256) from agents where snapshot_id = $1 and name = '$2'")" \
	    "sha256 of $2 in snapshot $1"
}
verify_ok () { expect_ok verify -r "${2:-$REPO}" "$1"; }

test_expect_success 'setup: three agents, small files (one partial chunk each); snapshot 1' '
	make_config A B C &&
	start_cluster &&
	set_balances A=600 B=300 C=100 &&
	grow A 20 && grow B 5 && grow C 2 &&
	snap_json "$REPO" &&
	expect_eq "$SNAP_ID" 1 "first id" &&
	expect_eq "$(extended)" 0 "extended chunks of the first snapshot"
'

test_expect_success 'A grows: its chunk is extended, two frames, and decodes to the recorded bytes' '
	old=$(last_blob 1 A) &&
	grow A 10 &&
	snap_json "$REPO" &&
	expect_eq "$(extended)" 1 "extended chunks (B and C unchanged)" &&
	json_check "d[\"chunks\"][\"copied\"] == 1" &&
	new=$(last_blob "$SNAP_ID" A) &&
	[ "$new" != "$old" ] &&
	expect_eq "$(frames "$old")" 1 "frames of the first blob" &&
	expect_eq "$(frames "$new")" 2 "frames of the extended blob" &&
	same_bytes "$SNAP_ID" A && same_bytes 1 A &&
	verify_ok 1 && verify_ok "$SNAP_ID"
'

test_expect_success 'the previous blob stays whole and smaller than the extended one built on it' '
	[ "$(stat -c %s "$old")" -lt "$(stat -c %s "$new")" ] &&
	expect_eq "$(cmp -n "$(stat -c %s "$old")" "$old" "$new" >/dev/null 2>&1; echo $?)" 1 \
	    "headers differ (plain length)" &&
	expect_eq "$(cmp -i 16 -n $(( $(stat -c %s "$old") - 16 )) "$old" "$new" >/dev/null; echo $?)" 0 \
	    "the old payload leads the new one"
'

test_expect_success 'all three grow, and a balance moves: three chunks extended, the cut restores to 1000' '
	grow A 3 && grow B 3 && grow C 3 &&
	cs transfer -c "$CONF" A:bal C:bal 25 >/dev/null &&
	wait_bal C 125 &&
	snap_json "$REPO" &&
	expect_eq "$(extended)" 3 "extended chunks" &&
	S3=$SNAP_ID &&
	verify_ok "$S3" &&
	expect_eq "$(cut_total "$REPO" "$S3")" 1000 "total of the cut" &&
	for a in A B C; do same_bytes "$S3" "$a" || return 1; done
'

test_expect_success 'a chunk is extended while it has fewer than 8 frames, then stored whole again' '
	f=$(frames "$(last_blob "$SNAP_ID" A)") && whole=0 &&
	for i in $(seq 1 12); do
		grow A 1 200 && snap_json "$REPO" || return 1
		if [ "$f" -lt 8 ]; then want_e=1 want_f=$((f + 1)); else want_e=0 want_f=1 whole=$((whole + 1)); fi
		f=$(frames "$(last_blob "$SNAP_ID" A)") &&
		expect_eq "$(extended)" "$want_e" "snapshot $SNAP_ID: extended" &&
		expect_eq "$f" "$want_f" "snapshot $SNAP_ID: frames of A" &&
		same_bytes "$SNAP_ID" A || return 1
	done &&
	expect_eq "$whole" 1 "chunks stored whole again in 12 snapshots" &&
	verify_ok "$SNAP_ID"
'

test_expect_success 'a previous blob that rotted is not built on: the new blob is whole and good' '
	prev=$(last_blob "$SNAP_ID" A) && P=$SNAP_ID &&
	size=$(stat -c %s "$prev") &&
	flip_byte "$prev" $((16 + (size - 16) / 2)) &&
	grow A 2 &&
	snap_json "$REPO" &&
	expect_eq "$(extended)" 0 "extended chunks after the rot" &&
	expect_eq "$(frames "$(last_blob "$SNAP_ID" A)")" 1 "frames of the new blob" &&
	verify_ok "$SNAP_ID" && same_bytes "$SNAP_ID" A &&
	expect_exit 1 verify -r "$REPO" "$P"
'

test_expect_success 'a chunk across a boundary: the finished chunk is extended, the next one starts whole' '
	grow A 1 $((3 << 20)) && snap_json "$REPO" &&
	pf=$(frames "$(last_blob "$SNAP_ID" A)") &&
	before=$(sql "select count(*) from agent_chunks where snapshot_id = $SNAP_ID and agent = '\''A'\''") &&
	grow A 1 $((2 << 20)) && snap_json "$REPO" &&
	after=$(sql "select count(*) from agent_chunks where snapshot_id = $SNAP_ID and agent = '\''A'\''") &&
	expect_eq "$after" $((before + 1)) "A chunks" &&
	expect_eq "$(extended)" 1 "extended chunks" &&
	expect_eq "$(frames "$(chunk_paths "$SNAP_ID" A | sed -n "${before}p")")" $((pf + 1)) "frames of the finished chunk" &&
	expect_eq "$(frames "$(last_blob "$SNAP_ID" A)")" 1 "frames of the new last chunk" &&
	verify_ok "$SNAP_ID" && same_bytes "$SNAP_ID" A
'

test_expect_success 'compaction rewrites old bytes: nothing is built on the old blobs' '
	for i in $(seq 1 30); do cs put -c "$CONF" B hot "value $i" >/dev/null || return 1; done &&
	snap_json "$REPO" &&
	expect_ok compact -c "$CONF" B &&
	grow B 40 &&
	snap_json "$REPO" &&
	expect_eq "$(extended)" 0 "extended chunks after compaction" &&
	verify_ok "$SNAP_ID" && same_bytes "$SNAP_ID" B
'

test_expect_success 'an encrypted repository extends a grown chunk too: sealed anew, it verifies' '
	expect_ok init -r "$ENC" --encrypt &&
	snap_json "$ENC" && E1=$SNAP_ID &&
	grow A 3 && snap_json "$ENC" &&
	expect_eq "$(extended)" 1 "extended chunks, encrypted" &&
	E2=$SNAP_ID &&
	verify_ok "$E1" "$ENC" && verify_ok "$E2" "$ENC" &&
	expect_eq "$(cut_total "$ENC" "$E2")" 1000 "total of the encrypted cut" &&
	! grep -rq "line $N of the history" "$ENC" ||
	    { say "plain text of A found in the encrypted repository"; return 1; }
'

test_expect_success 'encrypted: a previous blob that does not open is not built on' '
	sha=$(sql "select lower(sha256) from agent_chunks where snapshot_id = $E2 and agent = '\''A'\'' order by idx desc limit 1" "$ENC/manifest.db") &&
	prev=$ENC/blobs/${sha:0:2}/$sha && [ -f "$prev" ] &&
	flip_byte "$prev" $(( $(stat -c %s "$prev") / 2 )) &&
	grow A 2 && snap_json "$ENC" &&
	expect_eq "$(extended)" 0 "extended chunks after the sealed blob was damaged" &&
	verify_ok "$SNAP_ID" "$ENC" &&
	expect_exit 1 verify -r "$ENC" "$E2"
'

test_expect_success 'restore of an extended snapshot gives every recorded file back and the total' '
	stop_cluster &&
	restore_each 1000 "$REPO:$S3" &&
	for a in A B C; do
		p=$(blob_path "$S3" "$a") &&
		cmp -n "$(stat -c %s "$p")" "$p" "$TEST_DIR/$a.data" ||
		    { say "$a does not start with its file of snapshot $S3"; return 1; }
	done
'

test_done
