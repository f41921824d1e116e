#!/bin/bash
# verify --no-password: an encrypted repository checked without its
# password, as far as that goes, and saying so. A good snapshot with a
# message in flight passes (exit 0, "content_checked": false, every chunk
# object and the recorded message counted); each damage it can see
# without a key is a problem (exit 1), named: a missing chunk object, one
# cut short, one whose sealed magic is gone, an edited row (the digest),
# a recorded message deleted (the cut's shape on its channel), a key row
# made malformed. A flipped bit inside a sealed object is past what it
# can see (that needs the password: the full verify finds it), and it
# says it did not open anything. The snapshot's HMAC tag is checked
# with --key (a wrong key is a problem). An unencrypted repository refuses the
# option (exit 2).
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_CHUNK_SIZE=16384
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE

# nopw_json REPO: verify --no-password --json into $OUT, exit status in NRC.
nopw_json () {
	cs verify -r "$1" --no-password --json >"$OUT" 2>"$TEST_DIR/.err"
	NRC=$?
}

test_expect_success 'an encrypted snapshot with a transfer in flight' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	head -c 32 /dev/urandom >hkey && head -c 32 /dev/urandom >otherkey &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	set_balances A=100 B=50 &&
	put_random A 30 && put_random B 30 &&
	snapshot_in_flight 10 --password-file pw --key hkey &&
	stop_cluster &&
	expect_eq "$(sql "select count(*) from messages where snapshot_id = $SNAP_ID")" 1 \
	    "recorded messages" &&
	expect_ok verify -r "$REPO" --password-file pw --key hkey
'

test_expect_success 'without the password: ok, and it says content was not checked' '
	expect_ok verify -r "$REPO" --no-password &&
	grep -q "ok without the password" "$OUT" &&
	grep -q "nothing sealed was opened" "$TEST_DIR/.err" &&
	nopw_json "$REPO" && expect_eq "$NRC" 0 "exit status" &&
	objs=$(sql "select count(distinct sha256) from agent_chunks where snapshot_id = $SNAP_ID") &&
	{ [ "$objs" -ge 4 ] || { say "only $objs chunk objects"; false; }; } &&
	json_check "d[\"ok\"] is True and d[\"content_checked\"] is False and d[\"problems\"] == [] and d[\"objects\"] == $objs and d[\"msgs\"] == 1 and d[\"object_bytes\"] > 0"
'

test_expect_success 'the snapshot tag: checked with --key, a wrong key is a problem' '
	expect_ok verify -r "$REPO" --no-password &&
	grep -q "tag was not checked" "$ERR" &&
	expect_ok verify -r "$REPO" --no-password --key hkey &&
	! grep -q "tag was not checked" "$ERR" &&
	{ cs verify -r "$REPO" --no-password --key otherkey --json >"$OUT" \
	    2>"$ERR"; NRC=$?; } &&
	expect_eq "$NRC" 1 "exit status" &&
	json_check "any(\"hmac-sha256 mismatch\" in p for p in d[\"problems\"])"
'

test_expect_success 'with the password the json says content was checked' '
	expect_ok verify -r "$REPO" --password-file pw --key hkey --json &&
	json_check "d[\"ok\"] is True and d[\"content_checked\"] is True"
'

# damaged NAME: a copy of the repository to damage, its path in $D.
damaged () { D=$TEST_DIR/$1; rm -rf "$D"; cp -a "$REPO" "$D"; }
# one_blob DIR: the path of one chunk object of the snapshot in DIR.
one_blob () {
	local sha
	sha=$(sql "select sha256 from agent_chunks where snapshot_id = $SNAP_ID order by agent, idx limit 1" "$1/manifest.db") &&
	echo "$1/blobs/${sha:0:2}/$sha"
}
# expect_problem PATTERN: verify --no-password of $D fails (exit 1) and
# names PATTERN among its problems.
expect_problem () {
	nopw_json "$D" &&
	expect_eq "$NRC" 1 "exit status" &&
	json_check "d[\"ok\"] is False and d[\"content_checked\"] is False and any(__import__(\"re\").search(r\"$1\", p) for p in d[\"problems\"])"
}

test_expect_success 'a missing chunk object is a problem' '
	damaged missing && rm -f "$(one_blob "$D")" &&
	expect_problem "blob [0-9a-f]{64}: missing"
'

test_expect_success 'a chunk object cut short is a problem' '
	damaged short && b=$(one_blob "$D") && truncate -s 20 "$b" &&
	expect_problem "blob [0-9a-f]{64}: size mismatch"
'

test_expect_success 'a chunk object whose sealed magic is gone is a problem' '
	damaged magic && b=$(one_blob "$D") &&
	printf "XXXX" | dd of="$b" bs=1 seek=0 conv=notrunc 2>/dev/null &&
	expect_problem "not a sealed object"
'

test_expect_success 'an edited row is a problem (the digest)' '
	damaged edited &&
	sql "update agents set size = size + 1 where snapshot_id = $SNAP_ID" "$D/manifest.db" &&
	expect_problem "manifest digest mismatch"
'

test_expect_success 'a recorded message deleted is a problem (the cut on its channel)' '
	damaged nomsg &&
	sql "delete from messages where snapshot_id = $SNAP_ID" "$D/manifest.db" &&
	expect_problem "channel A->B: 0 recorded messages"
'

test_expect_success 'a malformed key row is a problem' '
	damaged key &&
	sql "update repo_keys set salt = zeroblob(1)" "$D/manifest.db" &&
	expect_problem "key 1 is malformed"
'

test_expect_success 'a flipped bit inside a sealed object: only the password finds it' '
	damaged flipped && b=$(one_blob "$D") &&
	flip_byte "$b" 40 &&
	expect_ok verify -r "$D" --no-password &&
	grep -q "content not checked" "$OUT" &&
	expect_error 1 verify -r "$D" --password-file pw
'

test_expect_success 'an unencrypted repository refuses the option' '
	expect_ok init -r plain &&
	expect_error 2 verify -r plain --no-password &&
	err_matches "not encrypted"
'

test_done
