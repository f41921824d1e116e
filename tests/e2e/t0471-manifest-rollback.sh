#!/bin/bash
# A manifest rolled back to an older copy of itself is noticed. The copy
# is put back after two more snapshots: ls and verify still read it but
# warn, naming both generations; snapshot, forget and prune refuse (so
# prune cannot delete the lost snapshots' blobs); snapshot
# --accept-rollback continues with an id past the lost ones (never one
# handed out before). With the commit objects deleted as well, this
# user's record of the repository (under XDG_STATE_HOME, which lib.sh
# sets to the test's directory) still catches it. In an encrypted
# repository a commit object forged without the key is refused by name,
# while one written by forget (which needs no password: no MAC) is taken.
. "$(dirname "$0")/lib.sh"

# gen DB: the generation the manifest DB is at.
gen () { sql "select gen from repo_generation" "$1"; }
# save NAME: a copy of the manifest as it is now (checkpointed first).
save () {
	sql "pragma wal_checkpoint(truncate)" >/dev/null &&
	cp "$REPO/manifest.db" "$TEST_DIR/$1.db"
}
# put_back NAME: the copy replaces the manifest.
put_back () {
	rm -f "$REPO/manifest.db-wal" "$REPO/manifest.db-shm" &&
	cp "$TEST_DIR/$1.db" "$REPO/manifest.db"
}

test_expect_success 'a snapshot, a copy of the manifest, two more snapshots' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 && put_random A 4 &&
	take_snapshot && S1=$SNAP_ID &&
	save old && OLDGEN=$(gen "$TEST_DIR/old.db") &&
	put_random B 4 && take_snapshot && S2=$SNAP_ID &&
	set_balances A=70 && take_snapshot && S3=$SNAP_ID &&
	NEWGEN=$(gen "$REPO/manifest.db") &&
	{ [ "$NEWGEN" -gt "$OLDGEN" ] || { say "generation $OLDGEN -> $NEWGEN"; false; }; } &&
	ls "$REPO/commits" | grep -qx "$(printf %020d "$NEWGEN")" &&
	put_back old
'

test_expect_success 'ls and verify read the old manifest but warn, naming both generations' '
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"id\"] for s in d] == [$S1]" &&
	err_matches "generation $OLDGEN but generation $NEWGEN was committed" &&
	expect_ok verify -r "$REPO" "$S1" &&
	err_matches "rolled back or replaced by an older copy"
'

test_expect_success 'snapshot refuses and hands out no id' '
	expect_exit 2 snapshot -c "$CONF" -r "$REPO" &&
	err_matches "manifest.db is at generation $OLDGEN but generation $NEWGEN was committed" &&
	expect_eq "$(sql "select count(*) from snapshots")" 1 "snapshots in the manifest"
'

test_expect_success 'forget and prune refuse; the lost snapshots keep their blobs' '
	nblobs=$(find "$REPO/blobs" -type f -not -name ".*" | wc -l) &&
	expect_exit 2 forget -r "$REPO" --keep-last 1 &&
	err_matches "rolled back" &&
	expect_exit 2 prune -r "$REPO" --force &&
	err_matches "rolled back" &&
	expect_eq "$(find "$REPO/blobs" -type f -not -name ".*" | wc -l)" "$nblobs" "blob files"
'

test_expect_success 'snapshot --accept-rollback continues past every id handed out' '
	take_snapshot --accept-rollback &&
	{ [ "$SNAP_ID" -gt "$S3" ] || { say "id $SNAP_ID reused (last was $S3)"; false; }; } &&
	S4=$SNAP_ID &&
	expect_ok ls -r "$REPO" &&
	! grep -q "rolled back" "$ERR" &&
	take_snapshot && { [ "$SNAP_ID" -gt "$S4" ] || { say "id $SNAP_ID"; false; }; }
'

test_expect_success 'commit objects deleted too: this user'"'"'s record catches it' '
	save old2 && OLDGEN=$(gen "$TEST_DIR/old2.db") && last=$SNAP_ID &&
	take_snapshot && NEWGEN=$(gen "$REPO/manifest.db") &&
	put_back old2 && rm -rf "$REPO/commits" &&
	expect_exit 2 snapshot -c "$CONF" -r "$REPO" &&
	err_matches "generation $OLDGEN but generation $NEWGEN was committed \(as this user.s record" &&
	expect_exit 2 prune -r "$REPO" &&
	expect_ok ls -r "$REPO" &&
	err_matches "rolled back"
'

test_expect_success 'encrypted: a commit object forged without the key is refused by name; forget'"'"'s (no key, no MAC) is not' '
	printf "%s\n" "pw" >pw &&
	CUTSNAP_SCRYPT_N=1024 expect_ok init -r enc --encrypt --password-file pw &&
	CUTSNAP_SCRYPT_N=1024 expect_ok snapshot -c "$CONF" -r "$TEST_DIR/enc" --password-file pw &&
	newest=$(ls enc/commits | tail -n 1) && grep -q "^mac " "enc/commits/$newest" &&
	sed "s/^generation .*/generation 99999/" "enc/commits/$newest" >enc/commits/00000000000000099999 &&
	expect_exit 2 snapshot -c "$CONF" -r "$TEST_DIR/enc" --password-file pw &&
	err_matches "commits/00000000000000099999 is not authenticated by the repository key" &&
	rm enc/commits/00000000000000099999 &&
	expect_ok forget -r enc --keep-last 1 &&
	newest=$(ls enc/commits | tail -n 1) && ! grep -q "^mac " "enc/commits/$newest" &&
	CUTSNAP_SCRYPT_N=1024 expect_ok snapshot -c "$CONF" -r "$TEST_DIR/enc" --password-file pw
'

test_expect_success 'stop' 'stop_cluster'

test_done
