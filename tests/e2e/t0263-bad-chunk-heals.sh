#!/bin/bash
# A damaged chunk does not spread: verify quarantines a blob whose bytes
# no longer hash to its name (REPO/quarantine/), the next snapshot stores
# it again from the live file, and every snapshot that refers to it
# verifies again; a snapshot rehashes reused chunks whose last check is
# older than --recheck-age, so it heals a bad blob on its own. Before, a
# flipped byte was reused by every later snapshot, each listed complete.
. "$(dirname "$0")/lib.sh"

# Small chunks: A's file spans several; chunk 0 is full and reused by
# every later snapshot.
export CUTSNAP_CHUNK_SIZE=4096

# chunk0 ID: the blob of chunk 0 of A's recorded file in snapshot ID.
chunk0 () { chunk_paths "$1" A | head -n 1; }
# The blob's bytes hash to its name.
blob_good () { [ "$(sha256sum "$1" | cut -d" " -f1)" = "$(basename "$1")" ]; }
# check_sql STMT: run STMT on the records of the blobs' last checks.
check_sql () { sql "$1" "$REPO/blobchecks.db"; }
# checked_at HEX: when blob HEX was last hashed, per its record.
checked_at () { check_sql "select checked from checks where name = x'$1'"; }
# rot_quietly BLOB OFFSET: flip a byte and make the blob's record match
# its new look, as rot of the medium, which changes no ctime, would.
rot_quietly () {
	flip_byte "$1" "$2" &&
	check_sql "update checks set ctime_ns = $(stat -c %.9Z "$1" | tr -d .)
	    where name = x'$(basename "$1")'"
}

test_expect_success 'setup: A spans several chunks; snapshot 1 verifies' '
	make_config A B &&
	# The blobs are read and damaged here as the chunks themselves.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=100 &&
	head -c 9000 /dev/zero | tr "\0" p | cs put -c "$CONF" A pad - &&
	take_snapshot &&
	FIRST=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$FIRST" &&
	BLOB=$(chunk0 "$FIRST") && HEX=$(basename "$BLOB") &&
	[ "$(chunk_paths "$FIRST" A | wc -l)" -ge 3 ]
'

test_expect_success 'a flipped byte: verify names the bad blob and moves it to REPO/quarantine/' '
	flip_byte "$BLOB" 100 &&
	expect_exit 1 verify -r "$REPO" "$FIRST" &&
	grep -q "^problem: snapshot $FIRST: agent A: chunk 0 (${HEX:0:12}) sha256 mismatch: its bytes no longer hash to its name; blob $HEX moved to .*/quarantine/" "$OUT" &&
	[ ! -e "$BLOB" ] && [ -f "$REPO/quarantine/$HEX" ] &&
	! blob_good "$REPO/quarantine/$HEX" &&
	expect_exit 1 verify -r "$REPO" "$FIRST" &&
	grep -q "agent A: chunk 0 (${HEX:0:12}): missing" "$OUT"
'

test_expect_success 'the next snapshot stores it again from the live file: both snapshots verify' '
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	take_snapshot &&
	expect_eq "$(chunk0 "$SNAP_ID")" "$BLOB" "chunk 0 of the new snapshot" &&
	blob_good "$BLOB" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" "$FIRST"
'

test_expect_success 'a silent rot, then a snapshot with --recheck-age 0: it heals the blob itself' '
	rot_quietly "$BLOB" 200 &&
	! blob_good "$BLOB" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	take_snapshot --recheck-age 0 &&
	blob_good "$BLOB" &&
	! blob_good "$REPO/quarantine/$HEX" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" "$FIRST" &&
	expect_ok ls -r "$REPO" --json &&
	json_check "all(s[\"status\"] == \"complete\" for s in d) and len(d) == 3"
'

test_expect_success 'a recheck that finds the blob good records it checked and copies nothing' '
	check_sql "update checks set checked = checked - 10 * 86400 where name = x'"'"'$HEX'"'"'" &&
	old=$(checked_at "$HEX") &&
	take_snapshot --json &&
	json_check "d[\"chunks\"][\"rechecked\"] >= 1 and d[\"chunks\"][\"healed\"] == 0" &&
	[ "$(checked_at "$HEX")" -gt $((old + 86400)) ] &&
	blob_good "$BLOB" &&
	check_sql "update checks set checked = checked - 3600" &&
	old=$(checked_at "$HEX") &&
	take_snapshot --recheck-age 2h --json &&
	json_check "d[\"chunks\"][\"rechecked\"] == 0" &&
	expect_eq "$(checked_at "$HEX")" "$old" "last check of a blob checked within 2h"
'

test_expect_success 'a bad --recheck-age: exit 2, one line' '
	expect_error 2 snapshot -c "$CONF" -r "$REPO" --recheck-age soon &&
	err_matches "invalid DURATION"
'

# Within the recheck age a blob that rotted without a trace (its size,
# inode and ctime as recorded) is still trusted by its name: verify is
# what finds it then, and the next snapshot heals it.
test_expect_success 'within the recheck age: verify finds a silent rot, the snapshot after it heals' '
	rot_quietly "$BLOB" 300 &&
	take_snapshot --json &&
	json_check "d[\"chunks\"][\"rechecked\"] == 0" &&
	expect_exit 1 verify -r "$REPO" "$SNAP_ID" &&
	grep -q "blob $HEX moved to" "$OUT" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_ok verify -r "$REPO" "$FIRST"
'

if unshare --mount true 2>/dev/null; then
	test_expect_success 'a read-only repository: verify reports the bad blob and moves nothing' '
		flip_byte "$BLOB" 400 &&
		unshare --mount sh -c "mount --bind \"$REPO\" \"$REPO\" &&
		    mount -o remount,bind,ro \"$REPO\" &&
		    exec \"$CUTSNAP\" verify -r \"$REPO\" $FIRST" >"$OUT" 2>"$ERR"
		RC=$?
		if [ $RC = 2 ] && grep -q "unable to open\|read-only\|readonly" "$ERR"; then
			say "verify cannot open a read-only repository yet: $(cat "$ERR")"
		else
			expect_eq "$RC" 1 "verify exit status" &&
			grep -q "blob $HEX not quarantined: .*Read-only file system" "$OUT" ||
			    { show_out; false; }
		fi &&
		[ -f "$BLOB" ] && ! blob_good "$BLOB"
	'
else
	test_skip 'a read-only repository: verify reports the bad blob and moves nothing' \
	    'no mount namespaces here'
fi

test_done
