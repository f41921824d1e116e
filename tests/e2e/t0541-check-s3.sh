#!/bin/bash
# cutsnap check -r s3://BUCKET/PREFIX: the newest complete snapshot of a
# repository on an object store is read from the bucket (no local state),
# and --max-age judges it as for a directory.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

test_expect_success 'setup: A=100 B=50 and a snapshot into the bucket' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	ID=$(grep -Eo "[0-9]+" "$OUT" | head -n 1) &&
	[ -n "$ID" ]
'

test_expect_success 'check reads the bucket: ok under --max-age 1h, the id named' '
	rm -rf "$CUTSNAP_CACHE_DIR" &&
	expect_ok check -c "$CONF" -r "$REPO_URL" --max-age 1h --json &&
	json_check "(d[\"ok\"] is True and
	    d[\"checked\"][\"newest_snapshot\"][\"id\"] == $ID)"
'

# too_old: check exits 1 naming snapshot_too_old.
too_old () {
	cs check -c "$CONF" -r "$REPO_URL" --max-age 1s --json >"$OUT" 2>"$ERR"
	[ $? = 1 ] &&
	    json_check "[p[\"kind\"] for p in d[\"problems\"]] == [\"snapshot_too_old\"]"
}

test_expect_success 'the same snapshot past --max-age 1s: snapshot_too_old, exit 1' '
	wait_for 30 too_old
'

test_done
