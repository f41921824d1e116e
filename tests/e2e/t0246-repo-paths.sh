#!/bin/bash
# Bad repository paths are bad arguments (issue 10): a file, a path below
# a file, an unreadable directory, an s3:// URL without credentials and a
# URL of another scheme exit 2 with one line from every
# command, and create nothing; a snapshot against stopped agents checks
# that they answer before anything is created: no repository, no aborted
# snapshot.
. "$(dirname "$0")/lib.sh"

# every_cmd CODE REGEX REPO: every command that takes -r exits CODE with
# one line matching REGEX.
every_cmd () {
	local c n=0
	for c in "ls" "ls --json" "show" "verify" "restore -c $CONF" \
	    "forget --keep-last 1" "prune" "snapshot -c $CONF"; do
		# shellcheck disable=SC2086
		expect_error "$1" $c -r "$3" && err_matches "$2" || return 1
		n=$((n + 1))
	done
	expect_eq "$n" 8 "commands checked"
}

test_expect_success 'setup: A, B running' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50
'

test_expect_success 'a file, not a directory: exit 10 (no repository; 2 from snapshot, which would create one) from every command' '
	echo hello >afile &&
	every_cmd "10|2" "repository .*afile is not a directory" "$TEST_DIR/afile" &&
	expect_eq "$(cat afile)" hello "the file"
'

test_expect_success 'a path below a file: exit 2 from every command' '
	every_cmd 2 "repository .*afile/repo: Not a directory" "$TEST_DIR/afile/repo"
'

test_expect_success 'URLs: s3:// without credentials and other schemes exit 2, no s3: directory made' '
	(
		unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY &&
		every_cmd 2 "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" "s3://bucket/prefix"
	) &&
	every_cmd 2 "only s3:// object stores are supported" "gs://bucket/prefix" &&
	[ ! -e "s3:" ] && [ ! -e "$TEST_DIR/s3:" ] && [ ! -e gs: ]
'

test_expect_success NOBODY 'a directory the user cannot read: exit 2 from the readers, as that user' '
	take_snapshot &&
	mkdir -p pub && chmod 755 "$TEST_DIR" pub &&
	cp -a "$REPO" pub/repo && chmod 700 pub/repo &&
	n=0 &&
	for c in "ls" "verify" "show"; do
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		    "$CUTSNAP" $c -r "$TEST_DIR/pub/repo" >"$OUT" 2>"$ERR"
		RC=$?
		expect_eq "$RC" 2 "exit status of $c as nobody" &&
		err_is_one_line && err_matches "Permission denied" || return 1
		n=$((n + 1))
	done &&
	chmod 700 "$TEST_DIR" &&
	expect_eq "$n" 3 "commands checked"
'

test_expect_success 'snapshot against stopped agents: exit 1, no repository created' '
	stop_cluster &&
	expect_error 1 snapshot -c "$CONF" -r "$TEST_DIR/fresh" &&
	err_matches "agent A is not running" &&
	[ ! -e "$TEST_DIR/fresh" ]
'

test_expect_success 'snapshot against stopped agents: no aborted row in an existing repository' '
	[ -d "$REPO" ] || { start_cluster && take_snapshot && stop_cluster; } &&
	before=$(sql "select group_concat(id || status) from snapshots") &&
	expect_error 1 snapshot -c "$CONF" -r "$REPO" &&
	err_matches "is not running" &&
	expect_eq "$(sql "select group_concat(id || status) from snapshots")" "$before" "snapshots"
'

test_done
