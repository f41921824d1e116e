#!/bin/bash
# An absent snapshot id is a bad argument (issue 9 part 5): verify, show
# and restore exit 2 with one line naming it, and restore writes nothing.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A, B and one snapshot' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot &&
	stop_cluster
'

test_expect_success 'verify, verify --json and show of snapshot 99: exit 2, one line' '
	n=0 &&
	for c in "verify" "verify --json" "show" "show --json" "show --sum bal"; do
		expect_error 2 $c -r "$REPO" 99 &&
		err_matches "snapshot 99 does not exist" || return 1
		# With --json the error is also the one object on stdout.
		case $c in
		*--json) json_check "(d[\"error\"][\"code\"] == \"usage\" and
		    d[\"error\"][\"exit\"] == 2 and
		    \"snapshot 99 does not exist\" in d[\"error\"][\"message\"])" ;;
		*) [ ! -s "$OUT" ] ;;
		esac || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 5 "commands checked"
'

test_expect_success 'restore of snapshot 99: exit 2, one line, the data files untouched' '
	cp A.data A.saved && cp B.data B.saved &&
	expect_error 2 restore -r "$REPO" 99 -c "$CONF" &&
	err_matches "snapshot 99 does not exist" &&
	cmp A.data A.saved && cmp B.data B.saved
'

test_expect_success 'the snapshot that exists still verifies (exit 0)' '
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_done
