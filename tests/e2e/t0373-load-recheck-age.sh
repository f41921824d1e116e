#!/bin/bash
# The snapshots of "load --snapshot-every" recheck a reused chunk only
# when its last check is older than the default recheck age (7 days), as
# "cutsnap snapshot" does. Before, load left the age at 0: every
# snapshot read back, decoded and hashed every stored chunk it reused,
# which doubled the CPU the snapshots cost the load client.
. "$(dirname "$0")/lib.sh"

# Small chunks: A's file spans several; chunk 0 is full and reused by
# every later snapshot.
export CUTSNAP_CHUNK_SIZE=4096

chunk0 () { chunk_paths "$1" A | head -n 1; }
blob_good () { [ "$(sha256sum "$1" | cut -d" " -f1)" = "$(basename "$1")" ]; }
# check_sql STMT: run STMT on the records of the blobs' last checks.
check_sql () { sql "$1" "$REPO/blobchecks.db"; }
# checked_at BLOB: when the blob was last hashed, per its record.
checked_at () { check_sql "select checked from checks where name = x'$(basename "$1")'"; }
# load_snapshots: a short load taking snapshots; at least one completes.
load_snapshots () {
	expect_ok load -c "$CONF" -s 2 --clients 4 --snapshot-every 300 -r "$REPO" --json &&
	json_check "d[\"snapshots\"] >= 1 and d[\"snapshot_failures\"] == 0 and d[\"conserved\"] is True"
}

test_expect_success 'setup: A spans several chunks, in a repository of raw chunks' '
	make_config A B &&
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=100 &&
	head -c 9000 /dev/zero | tr "\0" p | cs put -c "$CONF" A pad - &&
	take_snapshot &&
	FIRST=$SNAP_ID &&
	BLOB=$(chunk0 "$FIRST") &&
	[ "$(chunk_paths "$FIRST" A | wc -l)" -ge 3 ]
'

test_expect_success 'a blob checked an hour ago is reused by load'"'"'s snapshots without a recheck' '
	check_sql "update checks set checked = checked - 3600" &&
	old=$(checked_at "$BLOB") &&
	[ -n "$old" ] &&
	load_snapshots &&
	last=$(sql "select max(id) from snapshots where status = '"'"'complete'"'"'") &&
	[ "$last" -gt "$FIRST" ] &&
	expect_eq "$(chunk0 "$last")" "$BLOB" "chunk 0 of the last snapshot" &&
	expect_eq "$(checked_at "$BLOB")" "$old" "last check of a blob checked within the recheck age"
'

test_expect_success 'a bad blob last checked 10 days ago is rechecked and healed by load'"'"'s snapshots' '
	# A rot that leaves no trace: the record matches the new bytes.
	flip_byte "$BLOB" 100 &&
	check_sql "update checks set checked = checked - 10 * 86400,
	    ctime_ns = $(stat -c %.9Z "$BLOB" | tr -d .)
	    where name = x'"'"'$(basename "$BLOB")'"'"'" &&
	! blob_good "$BLOB" &&
	load_snapshots &&
	blob_good "$BLOB" &&
	last=$(sql "select max(id) from snapshots where status = '"'"'complete'"'"'") &&
	expect_ok verify -r "$REPO" "$last" &&
	expect_ok verify -r "$REPO" "$FIRST"
'

test_done
