#!/usr/bin/env bash
# Authenticated manifests: snapshot --key stores an HMAC-SHA256 over the
# snapshot's rows; verify/restore --key catch an edited row even when the
# attacker recomputed the plain digest and the SHA-256 of a replaced blob.
. "$(dirname "$0")/lib.sh"

KEY=$TEST_DIR/secret.key
# The digest verify recomputes from the rows, taken from its mismatch
# problem (verify --json): exactly what an attacker with write access can
# compute.
redigest () {
	local id=$1 found
	cs verify -r "$REPO" "$id" --json >"$OUT" 2>"$ERR"
	found=$(json_get "[m.group(1) for m in (__import__(\"re\").search(
	    \"digest mismatch.*found ([0-9a-f]{64})\", p) for p in d[\"problems\"])
	    if m][0]" 2>/dev/null)
	[ -n "$found" ] || { say "no digest mismatch reported"; show_out; return 1; }
	sql "update snapshots set digest = '$found' where id = $id"
}

test_expect_success 'setup: a keyed snapshot 1 with 10 in flight, an unkeyed snapshot 2' '
	head -c 32 /dev/urandom >"$KEY" &&
	make_config A B &&
	# The forgery below rewrites the bytes of a blob as a chunk.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=50 &&
	snapshot_in_flight 10 --key "$KEY" && expect_eq "$SNAP_ID" 1 "keyed id" &&
	take_snapshot && expect_eq "$SNAP_ID" 2 "unkeyed id" &&
	stop_cluster &&
	cp -a "$REPO" "$TEST_DIR/good"
'

test_expect_success 'verify --key: ok, nothing else said' '
	expect_ok verify -r "$REPO" 1 --key "$KEY" &&
	grep -q "^snapshot 1: ok" "$OUT" &&
	[ ! -s "$ERR" ]
'

test_expect_success 'the key is nowhere in the repository (raw or hex)' '
	hex=$(od -An -tx1 "$KEY" | tr -d " \n") &&
	expect_eq "${#hex}" 64 "hex key length" &&
	! grep -rqF "$hex" "$REPO" &&
	python3 - "$KEY" "$REPO" <<-PY
	import os, sys
	key = open(sys.argv[1], "rb").read()
	for d, _, fs in os.walk(sys.argv[2]):
	    for f in fs:
	        if key in open(os.path.join(d, f), "rb").read():
	            sys.exit("key bytes found in " + os.path.join(d, f))
	PY
'

test_expect_success 'verify without --key on a keyed snapshot: exit 0 and one warning line' '
	expect_ok verify -r "$REPO" 1 &&
	grep -q "^snapshot 1: ok" "$OUT" &&
	err_is_one_line &&
	err_matches "^cutsnap: verify: warning: snapshot 1 is authenticated \(hmac-sha256\) and its tag was not checked"
'

test_expect_success 'verify --key on an unkeyed snapshot: exit 1, not authenticated' '
	expect_error 1 verify -r "$REPO" 2 --key "$KEY" &&
	grep -q "snapshot 2: not authenticated: no hmac-sha256 tag" "$OUT"
'

test_expect_success 'verify with the wrong key: exit 1, hmac mismatch' '
	head -c 32 /dev/urandom >"$TEST_DIR/other.key" &&
	expect_error 1 verify -r "$REPO" 1 --key "$TEST_DIR/other.key" &&
	grep -q "snapshot 1: hmac-sha256 mismatch" "$OUT"
'

test_expect_success 'a key file too short or missing: exit 2, one line' '
	printf short >"$TEST_DIR/short.key" &&
	expect_error 2 verify -r "$REPO" 1 --key "$TEST_DIR/short.key" &&
	err_matches "short\.key: 5 bytes, at least 16" &&
	expect_error 2 snapshot -c "$CONF" -r "$REPO" --key "$TEST_DIR/none.key" &&
	err_matches "none\.key" &&
	expect_eq "$(sql "select count(*) from snapshots")" 2 "snapshots"
'

test_expect_success 'forged message (amount 10 -> 20, its sha256 and the digest recomputed): --key fails' '
	cp A.data A.keep && cp B.data B.keep &&
	python3 - "$REPO/manifest.db" <<-PY &&
	import hashlib, sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	(rid, data), = db.execute("select id, data from messages where snapshot_id = 1")
	forged = data[:-8] + (20).to_bytes(8, "little", signed=True)
	db.execute("update messages set data = ?, sha256 = ? where id = ?",
	           (forged, hashlib.sha256(forged).hexdigest(), rid))
	db.commit()
	PY
	redigest 1 &&
	expect_error 1 verify -r "$REPO" 1 --key "$KEY" &&
	grep -q "snapshot 1: hmac-sha256 mismatch" "$OUT" &&
	expect_error 1 restore -r "$REPO" 1 -c "$CONF" --key "$KEY" &&
	cmp A.data A.keep && cmp B.data B.keep
'

test_expect_success 'forged blob (B 50 -> 99 with its CRC, a new blob under its sha256, rows and digest recomputed): --key fails' '
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" &&
	old=$(sql "select sha256 from agents where snapshot_id = 1 and name = '\''B'\''") &&
	python3 - "$REPO" "$old" <<-PY &&
	import hashlib, os, sqlite3, struct, sys, zlib
	repo, old = sys.argv[1], sys.argv[2]
	db = sqlite3.connect(os.path.join(repo, "manifest.db"))
	chunks = db.execute("select sha256 from agent_chunks where snapshot_id = 1"
	                    " and agent = ? order by idx", ("B",)).fetchall()
	assert len(chunks) == 1, chunks
	p = os.path.join(repo, "blobs", chunks[0][0][:2], chunks[0][0])
	buf = bytearray(open(p, "rb").read())
	off, done = 16, False
	while off < len(buf) and not done:
	    ln, = struct.unpack_from("<I", buf, off)
	    rec = buf[off + 8: off + 8 + ln]
	    if rec[0] == 1 and rec.endswith(b"\x02\x00\x00\x0050"):   # PUT bal 50
	        rec[-2:] = b"99"
	        buf[off + 8: off + 8 + ln] = rec
	        struct.pack_into("<I", buf, off + 4, zlib.crc32(bytes(rec)))
	        done = True
	    off += 8 + ln
	assert done, "no PUT of 50 in B"
	new = hashlib.sha256(buf).hexdigest()
	os.makedirs(os.path.join(repo, "blobs", new[:2]), exist_ok=True)
	open(os.path.join(repo, "blobs", new[:2], new), "wb").write(buf)
	db.execute("update agent_chunks set sha256 = ? where snapshot_id = 1"
	           " and agent = ?", (new, "B"))
	db.execute("update agents set sha256 = ? where snapshot_id = 1"
	           " and name = ?", (new, "B"))
	db.commit()
	PY
	redigest 1 &&
	expect_ok verify -r "$REPO" 1 &&
	expect_eq "$(blob_val 1 B bal)" 99 "forged B" &&
	expect_error 1 verify -r "$REPO" 1 --key "$KEY" &&
	grep -q "snapshot 1: hmac-sha256 mismatch" "$OUT"
'

test_expect_success 'a deleted tag row: --key fails as not authenticated' '
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" &&
	sql "delete from snapshot_macs" &&
	expect_error 1 verify -r "$REPO" 1 --key "$KEY" &&
	grep -q "snapshot 1: not authenticated" "$OUT"
'

# The chunk rows tile the file and each chunk is checked against its
# row, all under the one digest: a file sha256 row edited alone (the
# digest re-sealed) says nothing about the bytes, which verify and
# restore both take from the checked chunks; a snapshot that verifies
# restores (the same bytes as the intact snapshot).
test_expect_success 'a file sha256 row that disagrees with its chunks (digest re-sealed): verify and restore go by the chunks, the same bytes as the intact snapshot' '
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" &&
	zero=$(printf "%064d" 0) &&
	sql "update agents set sha256 = '\''$zero'\'' where snapshot_id = 2 and name = '\''A'\''" &&
	redigest 2 &&
	expect_ok verify -r "$REPO" 2 &&
	expect_ok restore -r "$REPO" 2 -c "$CONF" &&
	cp A.data A.edited && cp B.data B.edited &&
	expect_ok restore -r "$TEST_DIR/good" 2 -c "$CONF" &&
	cmp A.data A.edited && cmp B.data B.edited
'

test_expect_success 'restore --key of the intact snapshot: restored, 150 in all, no warning' '
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" --key "$KEY" &&
	[ ! -s "$ERR" ] &&
	expect_eq "$(dump_total bal)" 150 "restored total" &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	err_is_one_line && err_matches "^cutsnap: restore: warning: snapshot 1 is authenticated"
'

test_done
