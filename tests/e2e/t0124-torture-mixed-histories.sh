#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The fault loop's mixed-histories mode on every round: a restore of the
# live cluster stopped after its first file, agents started on the mix,
# transfers across it that must be refused (diverged) or arrive, then the
# restore finished and the live total checked (tests/torture/torture.sh).
# Six rounds of stops, restores and restarts: more than the default budget.
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

SEED=${TORTURE_SEED:-$TEST_SEED}
TORTURE=$_lib_dir/../torture/torture.sh

test_expect_success "fault loop with files from different histories every round, 6 rounds, seed $SEED: refused or delivered, 0 violations" '
	TORTURE_PCT="mix_histories=100 overlap=0" CUTSNAP=$CUTSNAP timeout -k 5 560 \
	    "$TORTURE" -n 6 -s "$SEED" >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	positive mixes "$OUT" &&
	positive mix_histories "$OUT"
'

test_done
