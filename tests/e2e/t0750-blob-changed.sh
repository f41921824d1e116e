#!/bin/bash
# A blob changed since it was last hashed is never reused unchecked. The
# repository records what each blob looked like at its last check (size,
# inode, ctime: REPO/blobchecks.db); a snapshot hashes a reused blob again
# whenever that differs, whatever its mtime says. Before, a blob edited in
# place got a fresh mtime, which read as "checked just now": the next
# snapshot was listed complete on it and verify then quarantined it. A
# blob replaced by another file with the same bytes is hashed and reused;
# prune drops the records of the blobs it deletes.
. "$(dirname "$0")/lib.sh"

# Small chunks: A's file spans several, and its first ones are full and
# reused by every later snapshot.
export CUTSNAP_CHUNK_SIZE=4096

# chunk_n ID K: the blob of chunk K of A's recorded file in snapshot ID.
chunk_n () { chunk_paths "$1" A | sed -n "$(($2 + 1))p"; }
blob_good () { [ "$(sha256sum "$1" | cut -d" " -f1)" = "$(basename "$1")" ]; }
check_sql () { sql "$1" "$REPO/blobchecks.db"; }
# A snapshot after a change to A's file (so the cut differs), with
# --json; healed N: it rehashed and healed N blobs.
snap_json () {
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	take_snapshot --json "$@"
}
healed_is () {
	json_check "d[\"chunks\"][\"rechecked\"] >= $1 and d[\"chunks\"][\"healed\"] == $1"
}

test_expect_success 'setup: A spans several chunks; snapshot 1 verifies, its blobs recorded' '
	make_config A B &&
	# The blobs are the chunks themselves: edited here as such.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=100 &&
	# Numbers, not one repeated byte: every chunk its own blob.
	seq 100000 | head -c 13000 | cs put -c "$CONF" A pad - &&
	take_snapshot &&
	FIRST=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$FIRST" &&
	[ "$(chunk_paths "$FIRST" A | wc -l)" -ge 4 ] &&
	[ "$(chunk_paths "$FIRST" A | sort -u | wc -l)" -ge 4 ] &&
	[ "$(check_sql "select count(*) from checks")" -ge 4 ]
'

test_expect_success 'a blob edited in place (fresh mtime) is rehashed, quarantined and copied again' '
	BLOB=$(chunk_n "$FIRST" 0) && HEX=$(basename "$BLOB") &&
	size=$(stat -c %s "$BLOB") &&
	flip_byte "$BLOB" 100 &&
	expect_eq "$(stat -c %s "$BLOB")" "$size" "size after the edit" &&
	! blob_good "$BLOB" &&
	snap_json &&
	healed_is 1 &&
	blob_good "$BLOB" &&
	[ -f "$REPO/quarantine/$HEX" ] && ! blob_good "$REPO/quarantine/$HEX" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" "$FIRST"
'

test_expect_success 'a blob edited in place and touched back to an old mtime is rehashed too' '
	BLOB=$(chunk_n "$FIRST" 1) && HEX=$(basename "$BLOB") &&
	old=$(stat -c %Y "$BLOB") &&
	flip_byte "$BLOB" 200 &&
	touch -d "@$old" "$BLOB" &&
	expect_eq "$(stat -c %Y "$BLOB")" "$old" "mtime put back" &&
	snap_json &&
	healed_is 1 &&
	blob_good "$BLOB" &&
	[ -f "$REPO/quarantine/$HEX" ] &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" "$FIRST"
'

test_expect_success 'a blob replaced by a new inode with the same bytes is rehashed and reused' '
	BLOB=$(chunk_n "$FIRST" 2) && HEX=$(basename "$BLOB") &&
	ino=$(stat -c %i "$BLOB") &&
	cp -p "$BLOB" "$BLOB.new" && mv "$BLOB.new" "$BLOB" &&
	ino2=$(stat -c %i "$BLOB") &&
	[ "$ino2" != "$ino" ] &&
	snap_json &&
	json_check "d[\"chunks\"][\"rechecked\"] >= 1 and d[\"chunks\"][\"healed\"] == 0" &&
	expect_eq "$(stat -c %i "$BLOB")" "$ino2" "inode of the reused blob" &&
	[ ! -e "$REPO/quarantine/$HEX" ] &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'unchanged blobs within the recheck age are not read again' '
	snap_json &&
	json_check "d[\"chunks\"][\"rechecked\"] == 0"
'

test_expect_success 'without blobchecks.db every reused blob is hashed once, then trusted again' '
	# A'"'"'s full chunks of the first snapshot are reused (its last one
	# grew with each transfer).
	n=$(($(chunk_paths "$FIRST" A | wc -l) - 1)) &&
	rm -f "$REPO"/blobchecks.db* &&
	snap_json &&
	json_check "d[\"chunks\"][\"rechecked\"] >= $n and d[\"chunks\"][\"healed\"] == 0" &&
	snap_json &&
	json_check "d[\"chunks\"][\"rechecked\"] == 0"
'

test_expect_success 'prune drops the records of the blobs it deletes, and only those' '
	check_sql "select lower(hex(name)) from checks" >names.before &&
	# --force: most blobs go (each snapshot grew A'"'"'s last chunk).
	expect_ok forget -r "$REPO" --keep-last 1 --prune --force --json &&
	gone=0 kept=0 &&
	while read -r h; do
		in=$(check_sql "select count(*) from checks where name = x'"'"'$h'"'"'") &&
		if [ -e "$REPO/blobs/${h:0:2}/$h" ]; then
			expect_eq "$in" 1 "records of kept blob $h" || return 1
			kept=$((kept + 1))
		else
			expect_eq "$in" 0 "records of deleted blob $h" || return 1
			gone=$((gone + 1))
		fi
	done <names.before &&
	[ "$gone" -gt 0 ] && [ "$kept" -gt 0 ] &&
	expect_ok verify -r "$REPO"
'

test_expect_success 'a damaged blobchecks.db: the snapshot fails with one line saying what to do' '
	printf "not a database" >"$REPO/blobchecks.db" &&
	rm -f "$REPO/blobchecks.db-wal" "$REPO/blobchecks.db-shm" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" &&
	err_matches "blobchecks.db: .*remove it" &&
	rm -f "$REPO/blobchecks.db" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_done
