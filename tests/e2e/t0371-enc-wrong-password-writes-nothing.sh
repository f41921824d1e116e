#!/bin/bash
# A snapshot into an encrypted repository with a wrong password fails
# before it writes anything there: with new chunks waiting to be copied,
# no blob, temp file, lock file or directory appears or changes (names,
# kinds, sizes and modification times of everything but the manifest's
# own files), the manifest's rows are the same, and the agents keep no
# cut for it (the next snapshot with the password takes one and copies
# the new chunks). It holds however the work around the key derivation
# is ordered.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_CHUNK_SIZE=16384
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE

# tree: every file and directory in REPO but manifest.db* (SQLite's own
# files: opening it may touch them, and make and remove its -wal and
# -shm, which changes REPO's own mtime), with kind, size and mtime.
tree () {
	(cd "$REPO" && find . -mindepth 1 ! -name 'manifest.db*' \
	    -printf '%p %y %s %T@\n' | LC_ALL=C sort)
}
# rows: the manifest's contents, as SQL.
rows () { sqlite3 "$REPO/manifest.db" .dump; }

test_expect_success 'an encrypted repository with one snapshot' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	printf "%s\n" "wrong horse" >bad &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	put_random A 20 &&
	take_snapshot --password-file pw &&
	[ "$(find "$REPO/blobs" -type f | wc -l)" -gt 3 ]
'

test_expect_success 'a wrong password with new chunks to copy: exit 12, nothing written' '
	put_random A 20 && put_random B 20 &&
	tree >tree.before && rows >rows.before &&
	sleep 0.01 &&
	expect_error 12 snapshot -c "$CONF" -r "$REPO" --password-file bad &&
	err_matches "wrong password" &&
	tree >tree.after && rows >rows.after &&
	{ cmp tree.before tree.after ||
	    { say "the repository changed:"; diff tree.before tree.after; false; }; } &&
	{ cmp rows.before rows.after ||
	    { say "the manifest changed"; false; }; } &&
	[ -z "$(find "$REPO" -name ".tmp*")" ]
'

test_expect_success 'the password then takes the snapshot and copies the new chunks' '
	take_snapshot --password-file pw --json &&
	json_check "d[\"chunks\"][\"copied\"] > 0" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" --password-file pw &&
	stop_cluster
'

test_done
