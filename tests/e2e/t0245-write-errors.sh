#!/bin/bash
# Text output checks its write errors (issue 10): ls, show, verify,
# forget, prune and snapshot writing to a full device (/dev/full) exit 1
# with one line on stderr instead of 0.
. "$(dirname "$0")/lib.sh"

# full ARGS...: cutsnap ARGS with stdout on /dev/full.
full () {
	cs "$@" >/dev/full 2>"$ERR"
	RC=$?
	expect_eq "$RC" 1 "exit status of cutsnap $*" && err_is_one_line &&
	err_matches "write stdout failed: No space left on device"
}

test_expect_success 'setup: A, B and two snapshots' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot && take_snapshot
'

[ -w /dev/full ] && echo x 2>/dev/null >/dev/full
if [ $? -ne 0 ] && [ -c /dev/full ]; then
test_expect_success 'ls, show, verify, forget and prune text output to /dev/full: exit 1, one line' '
	n=0 &&
	for c in "ls" "show" "show --sum bal" "verify" \
	    "forget --keep-last 1 --dry-run" "prune --dry-run"; do
		full $c -r "$REPO" || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 6 "commands checked"
'

test_expect_success 'a snapshot whose id cannot be printed: exit 1, one line; it is committed' '
	before=$(sql "select count(*) from snapshots") &&
	full snapshot -c "$CONF" -r "$REPO" &&
	expect_eq "$(sql "select count(*) from snapshots where status = '\''complete'\''")" \
	    "$((before + 1))" "complete snapshots"
'

test_expect_success 'a forget whose report cannot be printed: exit 1, one line' '
	full forget -r "$REPO" --keep-last 2 &&
	expect_eq "$(sql "select count(*) from snapshots")" 2 "snapshots left"
'
else
test_skip 'output to /dev/full' 'no /dev/full here'
test_skip 'snapshot to /dev/full' 'no /dev/full here'
test_skip 'forget to /dev/full' 'no /dev/full here'
fi

test_expect_success 'the same commands to a writable stdout still exit 0' '
	expect_ok ls -r "$REPO" && [ -s "$OUT" ] &&
	expect_ok verify -r "$REPO" && [ -s "$OUT" ]
'

test_done
