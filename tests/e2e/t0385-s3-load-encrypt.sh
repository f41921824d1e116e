#!/bin/bash
# An object-store repository made by init (plain and --encrypt) and fed by
# "load --snapshot-every": each periodic snapshot is committed to the
# bucket as it is taken; an encrypted repository keeps its contents
# sealed in the bucket and needs its password to verify and restore (and
# verify --no-password checks only its sealed parts, and says so).
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

ENC_URL=s3://$BUCKET/enc

test_expect_success 'init makes the repository in the bucket and names it by its URL' '
	make_config A B &&
	expect_ok init -r "$REPO_URL" --json &&
	json_check "d[\"repo\"] == \"$REPO_URL\" and d[\"compression\"] == \"zstd\"" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 1 "commits" &&
	expect_error 2 init -r "$REPO_URL" &&
	err_matches "repository $REPO_URL exists already"
'

test_expect_success 'load --snapshot-every commits every snapshot to the bucket while it runs' '
	start_cluster &&
	expect_ok load -c "$CONF" --seconds 3 --clients 2 --snapshot-every 700 -r "$REPO_URL" --json &&
	json_check "d[\"conserved\"] and d[\"snapshots\"] >= 2 and d[\"snapshot_failures\"] == 0" &&
	n=$(json_get "d[\"snapshots\"]") &&
	commits=$(s3count "$BUCKET" repo/commits/) &&
	say "snapshots $n, commits $commits" &&
	[ "$commits" -ge $((n + 1)) ] &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $n and all(s[\"status\"] == \"complete\" for s in d)" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_expect_success 'an encrypted repository in the bucket: contents sealed, password needed' '
	echo "correct horse" >pw &&
	expect_ok init -r "$ENC_URL" --encrypt --password-file pw &&
	cs put -c "$CONF" A marker "S3-PLAINTEXT-MARKER-0123456789" &&
	expect_ok snapshot -c "$CONF" -r "$ENC_URL" --password-file pw &&
	mkdir objs &&
	for k in $(s3keys "$BUCKET" enc/); do
		s3req GET "$BUCKET/$k" -o "objs/$(echo "$k" | tr / _)" | tail -n 1 | grep -q "^200$" || return 1
	done &&
	at_least 4 objects objs/* &&
	! grep -rq "S3-PLAINTEXT-MARKER" objs &&
	expect_ok verify -r "$ENC_URL" --password-file pw --json &&
	json_check "d[\"ok\"]" &&
	echo wrong >bad.pw &&
	expect_error 12 verify -r "$ENC_URL" --password-file bad.pw &&
	expect_ok key list -r "$ENC_URL" --password-file pw
'

test_expect_success 'verify --no-password of the bucket: the sealed parts, said so' '
	expect_ok verify -r "$ENC_URL" --no-password --json &&
	json_check "d[\"ok\"] is True and d[\"content_checked\"] is False and d[\"objects\"] >= 1 and d[\"problems\"] == []" &&
	grep -q "nothing sealed was opened" "$ERR"
'

test_expect_success 'restore from the encrypted bucket with no local state' '
	mkdir fresh && cp "$CONF" fresh/cluster.ini &&
	(cd fresh && CUTSNAP_CACHE_DIR=$TEST_DIR/none cs restore -c cluster.ini -r "$ENC_URL" --password-file ../pw) >"$OUT" 2>"$ERR" &&
	cs start -c fresh/cluster.ini >/dev/null &&
	expect_eq "$(cs get -c fresh/cluster.ini A marker)" "S3-PLAINTEXT-MARKER-0123456789" "restored value" &&
	cs stop -c fresh/cluster.ini >/dev/null
'

test_done
