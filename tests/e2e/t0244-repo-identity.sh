#!/bin/bash
# A repository's identity (issue 10): created with it, stored in the
# manifest and in blobs/, shown by ls --json and show; a manifest from
# another repository is refused by every command (exit 2) and nothing is
# deleted; prune refuses to delete most of the blobs, or any while the
# manifest refers to none, without --force.
. "$(dirname "$0")/lib.sh"

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
LAST='' ID='' OTHER=''

nblobs () { find "$1/blobs" -type f -name '[0-9a-f]*' | wc -l; }
nref () { sql "select count(distinct lower(sha256)) from agent_chunks"; }

test_expect_success 'setup: A, B; four snapshots of changing data' '
	make_config A B &&
	start_cluster &&
	for i in 1 2 3 4; do
		set_balances A=$((100 + i)) B=$((50 + i)) &&
		cs put -c "$CONF" A "k$i" "$(head -c 3000 /dev/urandom | base64 -w0)" >/dev/null &&
		take_snapshot || return 1
	done &&
	LAST=$SNAP_ID
'

test_expect_success 'the identity: 32 hex digits, the same in ls --json, show, show --json and blobs/' '
	ID=$(cat "$REPO/blobs/.repository-id") &&
	[[ "$ID" =~ ^[0-9a-f]{32}$ ]] &&
	expect_ok ls -r "$REPO" --json &&
	json_check "len(d) == 4 and all(s[\"repository\"] == \"$ID\" for s in d)" &&
	expect_ok show -r "$REPO" --json &&
	json_check "d[\"snapshot\"][\"repository\"] == \"$ID\"" &&
	expect_ok show -r "$REPO" &&
	grep -qx "repository $ID" "$OUT"
'

test_expect_success 'a second repository gets another identity' '
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/other" &&
	OTHER=$(cat "$TEST_DIR/other/blobs/.repository-id") &&
	[[ "$OTHER" =~ ^[0-9a-f]{32}$ ]] && [ "$OTHER" != "$ID" ]
'

test_expect_success 'a manifest copied from another repository: every command refuses (exit 2), nothing deleted' '
	mkdir mixed && cp -a "$REPO/blobs" mixed/ &&
	cp "$TEST_DIR/other/manifest.db" mixed/ &&
	before=$(nblobs mixed) && [ "$before" -gt 4 ] &&
	n=0 &&
	for c in "ls" "show" "verify" "prune" "prune --force" "forget --keep-last 1" \
	    "restore -c $CONF" "snapshot -c $CONF"; do
		expect_error 2 $c -r "$TEST_DIR/mixed" &&
		err_matches "manifest.db belongs to repository $OTHER but blobs/ to repository $ID" || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 8 "commands checked" &&
	expect_eq "$(nblobs mixed)" "$before" "blobs in the mixed repository"
'

test_expect_success 'blobs/ without its identity: refused, exit 2' '
	cp -a "$REPO" noid && rm -f noid/blobs/.repository-id &&
	expect_error 2 prune -r "$TEST_DIR/noid" &&
	err_matches "blobs/.repository-id is missing" &&
	expect_error 2 ls -r "$TEST_DIR/noid"
'

test_expect_success 'prune that would delete most blobs: refused without --force, nothing deleted' '
	expect_ok forget -r "$REPO" --keep-last 1 &&
	before=$(nblobs "$REPO") && ref=$(nref) &&
	[ $((2 * (before - ref))) -gt "$before" ] ||
	    { say "only $((before - ref)) of $before unreferenced"; false; } &&
	expect_error 1 prune -r "$REPO" &&
	err_matches "would delete $((before - ref)) of $before blobs .*more than half.*--force" &&
	expect_eq "$(nblobs "$REPO")" "$before" "blob files" &&
	expect_ok prune -r "$REPO" --dry-run --json &&
	json_check "d[\"deleted\"] == $((before - ref))" &&
	expect_ok prune -r "$REPO" --force &&
	expect_eq "$(nblobs "$REPO")" "$ref" "blob files after --force" &&
	expect_ok verify -r "$REPO" "$LAST"
'

test_expect_success 'a manifest that refers to no blob: prune refuses even one deletion without --force' '
	expect_ok forget -r "$REPO" --keep-last 0 --force &&
	expect_eq "$(nref)" 0 "referenced blobs" &&
	before=$(nblobs "$REPO") && [ "$before" -gt 0 ] &&
	expect_error 1 prune -r "$REPO" &&
	err_matches "while the manifest refers to none" &&
	expect_eq "$(nblobs "$REPO")" "$before" "blob files" &&
	expect_ok prune -r "$REPO" --force &&
	expect_eq "$(nblobs "$REPO")" 0 "blob files after --force"
'

test_done
