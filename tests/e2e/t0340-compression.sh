#!/bin/bash
# Compression: "cutsnap init -r REPO [--compression zstd|none]" records a
# repository's settings; a snapshot into a missing repository makes one
# with zstd. Compressible data (text, runs of one byte) is stored in well
# under its size and restored byte for byte; a damaged compressed object
# is caught by verify, quarantined, refused by restore and stored again
# by the next snapshot; repositories without settings keep working.
. "$(dirname "$0")/lib.sh"

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
FIRST='' BLOB='' HEX='' R2='' ID='' ID2=''

# Several chunks per file.
export CUTSNAP_CHUNK_SIZE=65536

# stored_bytes REPO: the bytes of every chunk blob of REPO.
stored_bytes () {
	find "$1/blobs" -type f -name "????????????????????????????????????????????????????????????????" \
	    -printf "%s\n" | awk '{ n += $1 } END { print n + 0 }'
}
# logical_bytes ID: the recorded files' bytes of snapshot ID.
logical_bytes () { sql "select sum(size) from agents where snapshot_id = $1"; }
# text_value: 300 KB of lines of text.
text_value () {
	local i
	for i in $(seq 1 3000); do
		printf 'account %06d opened at branch %03d with balance 100\n' \
		    "$i" $((i % 17))
	done
}

test_expect_success 'init: bad usage is exit 2 with one line' '
	make_config A B &&
	expect_error 2 init &&
	err_matches "missing -r REPO" &&
	expect_error 2 init -r "$REPO" --compression lz4 &&
	err_matches "invalid --compression .lz4. \(zstd or none\)" &&
	[ ! -e "$REPO" ]
'

test_expect_success 'a snapshot into a missing repository makes one with zstd' '
	start_cluster &&
	set_balances A=100 B=50 &&
	text_value | cs put -c "$CONF" A text - &&
	head -c 400000 /dev/zero | tr "\0" 0 | cs put -c "$CONF" B zeros - &&
	take_snapshot &&
	FIRST=$SNAP_ID &&
	expect_eq "$(sql "select value from repo_settings where name = '"'"'compression'"'"'")" zstd "compression setting"
'

test_expect_success 'compressible data is stored in well under its size; ls --json says how much' '
	logical=$(logical_bytes "$FIRST") &&
	stored=$(stored_bytes "$REPO") &&
	say "logical $logical bytes, stored $stored bytes" &&
	[ "$logical" -gt 500000 ] &&
	[ "$stored" -gt 0 ] &&
	[ $((stored * 5)) -lt "$logical" ] &&
	expect_ok ls -r "$REPO" --json &&
	json_check "d[0][\"bytes\"] == $logical and d[0][\"stored_bytes\"] == $stored"
'

test_expect_success 'init refuses a repository that exists: exit 2, one line' '
	expect_error 2 init -r "$REPO" &&
	err_matches "repository .* exists already" &&
	expect_eq "$(sql "select count(*) from snapshots")" 1 "snapshots kept"
'

test_expect_success 'verify passes; restore gives the files back byte for byte' '
	expect_ok verify -r "$REPO" "$FIRST" &&
	expect_ok get -c "$CONF" A text && cp "$OUT" text.want &&
	expect_ok get -c "$CONF" B zeros && cp "$OUT" zeros.want &&
	stop_cluster &&
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$FIRST" -c "$CONF" &&
	for n in A B; do
		expect_eq "$(sha256sum $n.data | cut -d" " -f1)" \
		    "$(sql "select sha256 from agents where snapshot_id = $FIRST and name = '"'"'$n'"'"'")" \
		    "sha256 of restored $n.data" || return 1
	done &&
	start_cluster &&
	expect_ok get -c "$CONF" A text && cmp "$OUT" text.want &&
	expect_ok get -c "$CONF" B zeros && cmp "$OUT" zeros.want &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'random data is stored as it is, not grown past a header per chunk' '
	head -c 200000 /dev/urandom | base64 -w 0 | head -c 200000 >rand.val &&
	cs put -c "$CONF" A rand - <rand.val &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	chunks=$(sql "select count(*) from agent_chunks") &&
	[ $(stored_bytes "$REPO") -le $(( $(sql "select sum(size) from (select distinct sha256, size from agent_chunks)") + 16 * chunks )) ]
'

test_expect_success 'a damaged compressed object: verify names it and quarantines it; restore refuses, files untouched' '
	BLOB=$(chunk_paths "$FIRST" B | sed -n 2p) && HEX=$(basename "$BLOB") &&
	flip_byte "$BLOB" 20 &&
	stop_cluster &&
	cp A.data A.before && cp B.data B.before &&
	expect_exit 1 verify -r "$REPO" "$FIRST" &&
	grep -Eq "^problem: snapshot $FIRST: agent B: chunk 1 \(${HEX:0:12}\) (damaged: its object no longer decodes|sha256 mismatch: its bytes no longer hash to its name); blob $HEX moved to .*/quarantine/" "$OUT" &&
	[ ! -e "$BLOB" ] && [ -f "$REPO/quarantine/$HEX" ] &&
	expect_exit 1 restore -r "$REPO" "$FIRST" -c "$CONF" &&
	cmp A.data A.before && cmp B.data B.before
'

test_expect_success 'a damaged object header: verify names it as damaged' '
	BLOB=$(chunk_paths "$FIRST" A | sed -n 1p) && HEX=$(basename "$BLOB") &&
	flip_byte "$BLOB" 0 &&
	expect_exit 1 verify -r "$REPO" "$FIRST" &&
	grep -q "^problem: snapshot $FIRST: agent A: chunk 0 (${HEX:0:12}) damaged: its object no longer decodes; blob $HEX moved to .*/quarantine/" "$OUT"
'

test_expect_success 'the next snapshot stores both again from the live files: every snapshot verifies' '
	start_cluster &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$FIRST" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster
'

test_expect_success '--compression none: each blob is the chunk itself' '
	R2=$TEST_DIR/plain &&
	expect_ok init -r "$R2" --compression none --json &&
	json_check "d == {\"schema\": 1, \"repo\": \"$R2\", \"compression\": \"none\", \"encrypted\": False}" &&
	start_cluster &&
	expect_ok snapshot -c "$CONF" -r "$R2" &&
	ID=$(_parse_id "$OUT") &&
	n=0 &&
	for sha in $(sql "select sha256 from agent_chunks where snapshot_id = $ID" "$R2/manifest.db"); do
		expect_eq "$(sha256sum "$R2/blobs/${sha:0:2}/$sha" | cut -d" " -f1)" "$sha" "blob bytes" || return 1
		n=$((n + 1))
	done &&
	[ "$n" -ge 4 ] &&
	expect_ok verify -r "$R2" "$ID"
'

test_expect_success 'a repository without settings (an older one) keeps working' '
	sql "drop table repo_settings" "$R2/manifest.db" &&
	expect_ok verify -r "$R2" "$ID" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_ok snapshot -c "$CONF" -r "$R2" &&
	ID2=$(_parse_id "$OUT") &&
	expect_ok verify -r "$R2" "$ID2" &&
	stop_cluster &&
	expect_ok restore -r "$R2" "$ID2" -c "$CONF" &&
	start_cluster &&
	expect_eq "$(total)" 150 "total after restore"
'

test_done
