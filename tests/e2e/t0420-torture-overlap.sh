#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The fault loop's overlapping snapshots (tests/torture/torture.sh, mode
# overlap) on every round: two to four cutsnap snapshot started together
# from random initiators, into one repository or into two, some with a
# coordinator or an agent killed during them; each one that exits 0 must be
# listed complete, verify, sum and restore to the initial total, the
# others leave no complete snapshot, ids are distinct. Then two planted
# failures: a coordinator that claims a snapshot it did not take is a
# violation, and a run whose overlapping snapshots all fail fails as
# having checked nothing.
TEST_TIMEOUT=${TEST_TIMEOUT:-1080}
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

SEED=${TORTURE_SEED:-$TEST_SEED}
TORTURE=$_lib_dir/../torture/torture.sh

test_expect_success "overlapping snapshots every round, 4 rounds, seed $SEED: checked, 0 violations" '
	TORTURE_PCT="overlap=100" CUTSNAP=$CUTSNAP timeout -k 5 400 \
	    "$TORTURE" -n 4 -s "$SEED" >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield overlaps "$OUT")" 4 "overlaps" &&
	expect_eq "$(sumfield overlap_two_repos "$OUT")" 2 "into two repositories" &&
	positive overlap_snapshots "$OUT" &&
	positive overlap_complete "$OUT" &&
	positive overlap_checked "$OUT" &&
	positive overlap_restored "$OUT" &&
	tail -n 1 "$OUT" | grep -qx "torture: PASS"
'

# A coordinator that, while another snapshot runs, exits 0 and names a
# snapshot it never took: the loop must see it is not listed complete.
test_expect_success 'a concurrent snapshot claimed but not taken is a violation, exit 1' '
	cat >fake <<-EOF &&
	#!/bin/sh
	if [ "\$1" = snapshot ]; then
		if mkdir "$TEST_DIR/one" 2>/dev/null; then
			"$CUTSNAP" "\$@"; rc=\$?
			rmdir "$TEST_DIR/one"
			exit \$rc
		fi
		echo 999
		exit 0
	fi
	exec "$CUTSNAP" "\$@"
	EOF
	chmod +x fake &&
	TORTURE_PCT="overlap=100 kill_coordinator=0 kill_agent=0" \
	    CUTSNAP=$TEST_DIR/fake TMPDIR=$TEST_DIR timeout -k 5 240 \
	    "$TORTURE" -n 2 -s "$SEED" >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 1 "torture exit status" &&
	expect_eq "$(sumfield result "$OUT")" FAIL "result" &&
	positive violations "$OUT" &&
	grep -q "^  first  .*overlap: " "$OUT"
'

# Snapshots that fail whenever another one started with them (each
# leaves a file, waits 2 s, then counts the files of the last 4 s, also
# of one whose coordinator the loop killed): the mode struck but checked no
# overlapping snapshot, so the run fails having checked nothing (the
# single snapshots of the rounds still complete).
test_expect_success 'overlap mode that checked no snapshot fails: "checked nothing", exit 1' '
	cat >alone <<-EOF &&
	#!/bin/bash
	if [ "\$1" = snapshot ]; then
		mkdir -p "$TEST_DIR/running"
		: >"$TEST_DIR/running/\$\$"
		sleep 2
		n=\$(find "$TEST_DIR/running" -type f -newermt "-4 seconds" | wc -l)
		if [ \$n -gt 1 ]; then
			sleep 2
			rm -f "$TEST_DIR/running/\$\$"
			echo "cutsnap: snapshot: refused by the test" >&2
			exit 1
		fi
		"$CUTSNAP" "\$@"; rc=\$?
		rm -f "$TEST_DIR/running/\$\$"
		exit \$rc
	fi
	exec "$CUTSNAP" "\$@"
	EOF
	chmod +x alone &&
	TORTURE_PCT="overlap=100 kill_coordinator=0" \
	    CUTSNAP=$TEST_DIR/alone TMPDIR=$TEST_DIR timeout -k 5 400 \
	    "$TORTURE" -n 3 -s "$SEED" >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 1 "torture exit status" &&
	expect_eq "$(sumfield result "$OUT")" FAIL "result" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield overlap_checked "$OUT")" 0 "overlap_checked" &&
	positive overlaps "$OUT" &&
	positive complete "$OUT" &&
	grep -q "^  checked nothing   .*no overlapping snapshot checked" "$OUT"
'

test_done
