#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The fault loop's partial-restore mode on every round: a random proper
# subset of the agents killed -9 and restored alone (restore --agent) from
# a complete snapshot into the live cluster. A transfer from a fenced
# agent must fail; once its fence lifted by itself (nothing moved on its
# channels since the cut) or the others were restored from the same
# snapshot, the live total must be the initial one (tests/torture).
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

SEED=${TORTURE_SEED:-$TEST_SEED}
TORTURE=$_lib_dir/../torture/torture.sh

test_expect_success "fault loop restoring a subset into the live cluster every round, 6 rounds, 4 agents, seed $SEED: 0 violations" '
	TORTURE_PCT="partial_restore=100 mix_histories=0 overlap=0" \
	    CUTSNAP=$CUTSNAP timeout -k 5 560 \
	    "$TORTURE" -n 6 -a 4 -s "$SEED" >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield result "$OUT")" PASS "result" &&
	positive partial "$OUT" &&
	positive partial_restore "$OUT" &&
	expect_eq "$(( $(sumfield partial_lifted "$OUT") + $(sumfield partial_resolved "$OUT") ))" \
	    "$(sumfield partial "$OUT")" "partial restores lifted or resolved"
'

test_done
