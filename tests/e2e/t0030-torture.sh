#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A short run of the fault loop (tests/torture/torture.sh; `make torture`
# runs a long one): random transfers over held channels, snapshots and
# restores with kill -9 of agents, coordinators and restores, then the
# bank check. The figures come from the loop's machine-readable summary
# line; the run must have checked something (complete snapshots, verifies,
# restores, messages recorded in flight), not only have found nothing.
# The seed (CUTSNAP_TEST_SEED, lib.sh) is printed so a failure can be
# replayed: CUTSNAP_TEST_SEED=SEED with this script, torture.sh -s SEED alone.
# Overlapping snapshots (mode overlap) have their own short run in t0420,
# so that these runs stay within their time budget.
# Three fault-loop runs: the guard over the whole script leaves room for
# all three on a slow (sanitizer) build; each run has its own hang guard.
TEST_TIMEOUT=${TEST_TIMEOUT:-960}
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

SEED=${TORTURE_SEED:-$TEST_SEED}
ROUNDS=${TORTURE_ROUNDS:-25}
TORTURE=$_lib_dir/../torture/torture.sh

test_expect_success "fault loop, $ROUNDS rounds, seed $SEED: real checks, 0 violations" '
	TORTURE_PCT="overlap=0" CUTSNAP=$CUTSNAP timeout -k 5 400 \
	    "$TORTURE" -n "$ROUNDS" -s "$SEED" \
	    >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield result "$OUT")" PASS "result" &&
	expect_eq "$(sumfield rounds "$OUT")" "$ROUNDS" "rounds" &&
	positive complete "$OUT" &&
	positive verifies "$OUT" &&
	positive cut_sums "$OUT" &&
	positive restores "$OUT" &&
	positive inflight "$OUT" &&
	positive with_inflight "$OUT" &&
	positive kills "$OUT" &&
	positive kill_agent "$OUT" &&
	tail -n 1 "$OUT" | grep -qx "torture: PASS"
'

test_expect_success "fault loop on an encrypted repository (-e), 10 rounds, seed $SEED: real checks, 0 violations" '
	TORTURE_PCT="overlap=0" CUTSNAP=$CUTSNAP timeout -k 5 400 \
	    "$TORTURE" -e -n 10 -s "$SEED" \
	    >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	expect_eq "$(sumfield encrypted "$OUT")" 1 "encrypted" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield rounds "$OUT")" 10 "rounds" &&
	positive complete "$OUT" &&
	positive verifies "$OUT" &&
	positive cut_sums "$OUT" &&
	positive restores "$OUT" &&
	positive kills "$OUT" &&
	tail -n 1 "$OUT" | grep -qx "torture: PASS"
'

# A cutsnap whose snapshots all fail: the loop sees no complete snapshot,
# so nothing to verify or restore, and must fail rather than pass empty.
test_expect_success 'a run that completed no snapshot fails: "checked nothing", exit 1' '
	cat >nosnap <<-EOF &&
	#!/bin/sh
	[ "\$1" = snapshot ] && { echo "cutsnap: snapshot: refused by the test" >&2; exit 1; }
	exec "$CUTSNAP" "\$@"
	EOF
	chmod +x nosnap &&
	TORTURE_PCT="overlap=0" CUTSNAP=$TEST_DIR/nosnap TMPDIR=$TEST_DIR \
	    timeout -k 5 120 "$TORTURE" -n 2 -s "$SEED" \
	    >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 1 "torture exit status" &&
	expect_eq "$(sumfield result "$OUT")" FAIL "result" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield complete "$OUT")" 0 "complete" &&
	grep -q "^  checked nothing   no complete snapshot, no verify, no restore, no message recorded in flight$" "$OUT" &&
	tail -n 1 "$OUT" | grep -qx "torture: FAIL"
'

test_done
