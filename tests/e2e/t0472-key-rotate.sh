#!/bin/bash
# key rotate gives an encrypted repository a new master key: every chunk
# object is sealed and named again (no object of the old key is left),
# every snapshot still verifies (rows authenticated under the new key)
# and restores the same files; one key for the new password replaces all
# keys, so the old passwords open nothing, and the old key rows put back
# open a master key under which nothing checks (the newest commit object
# is the first thing refused). Refused while a snapshot carries a --key
# tag, and over s3:// (not done there yet).
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_CHUNK_SIZE=16384
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE CUTSNAP_NEW_PASSWORD \
    CUTSNAP_NEW_PASSWORD_FILE

blobs () { find "$1/blobs" -type f -not -name ".*" -printf "%f\n" | sort; }

test_expect_success 'two snapshots, one with a message in flight, two passwords' '
	make_config A B &&
	printf "%s\n" "one" >pw && printf "%s\n" "two" >pw2 &&
	printf "%s\n" "three" >pw3 &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	expect_ok key -r "$REPO" add --password-file pw --new-password-file pw2 &&
	start_cluster &&
	set_balances A=100 B=50 && put_random A 6 &&
	take_snapshot --password-file pw && S1=$SNAP_ID &&
	put_random B 6 &&
	snapshot_in_flight 10 --password-file pw && S2=$SNAP_ID &&
	stop_cluster &&
	expect_eq "$(sql "select count(*) from messages")" 1 "recorded messages" &&
	cp A.data A.want && cp B.data B.want &&
	cp -a "$REPO" before && blobs before >before.list &&
	n=$(wc -l <before.list) &&
	{ [ "$n" -ge 4 ] || { say "only $n chunk objects"; false; }; }
'

test_expect_success 'rotate: every object sealed and named again, none of the old left' '
	expect_ok key -r "$REPO" rotate --password-file pw --new-password-file pw3 --json &&
	json_check "d[\"id\"] >= 1" &&
	blobs "$REPO" >after.list &&
	expect_eq "$(comm -12 before.list after.list | wc -l)" 0 "objects kept from the old key" &&
	[ "$(wc -l <after.list)" -eq "$(wc -l <before.list)" ] &&
	expect_ok key -r "$REPO" list --json &&
	json_check "len(d) == 1"
'

test_expect_success 'every snapshot verifies under the new key and restores the same files' '
	expect_ok verify -r "$REPO" "$S1" --password-file pw3 --json &&
	json_check "d[\"ok\"] is True and d[\"rows_authenticity_checked\"] is True" &&
	expect_ok verify -r "$REPO" "$S2" --password-file pw3 --json &&
	json_check "d[\"ok\"] is True and d[\"msgs\"] == 1" &&
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$S2" -c "$CONF" --password-file pw3 &&
	expect_eq "$(dump_total bal)" 150 "total restored" &&
	cmp B.data B.want
'

test_expect_success 'the old passwords open nothing' '
	expect_error 12 verify -r "$REPO" --password-file pw &&
	err_matches "wrong password" &&
	expect_error 12 verify -r "$REPO" --password-file pw2 &&
	err_matches "wrong password"
'

test_expect_success 'the old key rows put back: no object opens under the old key' '
	sql "delete from repo_keys; attach \"before/manifest.db\" as b;
	    insert into repo_keys select * from b.repo_keys;" &&
	expect_exit "[12]" verify -r "$REPO" "$S2" --password-file pw &&
	grep -q "damaged\|not authenticated" "$OUT" "$ERR"
'

test_expect_success 'refused while a snapshot carries a --key tag' '
	head -c 32 /dev/urandom >hkey &&
	expect_ok init -r tagged --encrypt --password-file pw &&
	start_cluster &&
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/tagged" --password-file pw --key hkey &&
	stop_cluster &&
	blobs tagged >tagged.list &&
	expect_error 1 key -r tagged rotate --password-file pw --new-password-file pw3 &&
	err_matches "--key tag" &&
	expect_eq "$(blobs tagged)" "$(cat tagged.list)" "objects after the refusal" &&
	expect_ok verify -r tagged --password-file pw --key hkey
'

test_expect_success 'an s3:// repository is refused before anything is read' '
	expect_error 2 key -r s3://no-bucket/prefix rotate --password-file pw &&
	err_matches "not done over s3://"
'

test_done
