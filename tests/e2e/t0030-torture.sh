#!/bin/bash
# A short run of the fault loop (tests/torture/torture.sh; `make torture`
# runs a long one): random transfers, snapshots and restores with kill -9
# of agents, coordinators and restores, then the bank check. The seed is
# printed so a failure can be replayed with torture.sh -s SEED.
. "$(dirname "$0")/lib.sh"

SEED=${TORTURE_SEED:-$(( $(date +%s) % 32768 ))}
ROUNDS=${TORTURE_ROUNDS:-60}

test_expect_success "fault loop, $ROUNDS rounds, seed $SEED: 0 violations" '
	CUTSNAP=$CUTSNAP timeout -k 5 120 \
	    "$_lib_dir/../torture/torture.sh" -n "$ROUNDS" -s "$SEED" \
	    >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	grep -q "^  violations        0$" "$OUT" &&
	grep -q "^torture: PASS$" "$OUT" &&
	grep -Eq "^  kills             agent [1-9]" "$OUT"
'

test_done
