#!/bin/bash
# forget never deletes every complete snapshot by accident (issue 10):
# --keep-last 0, or a --keep-within that keeps none, needs --force.
. "$(dirname "$0")/lib.sh"

ncomplete () { sql "select count(*) from snapshots where status = 'complete'"; }

test_expect_success 'setup: A, B and two snapshots' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot && take_snapshot &&
	expect_eq "$(ncomplete)" 2 "complete snapshots"
'

test_expect_success 'forget --keep-last 0 without --force: exit 2, nothing forgotten' '
	expect_error 2 forget -r "$REPO" --keep-last 0 &&
	err_matches "--force" &&
	expect_eq "$(ncomplete)" 2 "complete snapshots"
'

test_expect_success 'a --keep-within that keeps no complete snapshot: exit 1, nothing forgotten' '
	sql "update snapshots set started_at = '\''2020-01-01T00:00:00Z'\''" &&
	expect_error 1 forget -r "$REPO" --keep-within 1d &&
	err_matches "every complete snapshot \(2\).*--force" &&
	expect_eq "$(ncomplete)" 2 "complete snapshots"
'

test_expect_success '--dry-run needs no --force and changes nothing' '
	expect_ok forget -r "$REPO" --keep-last 0 --dry-run --json &&
	json_check "len(d[\"forgotten\"]) == 2 and d[\"dry_run\"]" &&
	expect_eq "$(ncomplete)" 2 "complete snapshots"
'

test_expect_success 'forget --keep-last 0 --force forgets them all' '
	expect_ok forget -r "$REPO" --keep-last 0 --force --json &&
	json_check "len(d[\"forgotten\"]) == 2 and d[\"kept\"] == []" &&
	expect_eq "$(ncomplete)" 0 "complete snapshots"
'

test_done
