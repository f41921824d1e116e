#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The fault loop's TCP variant (torture.sh -t, make torture TCP=1): the
# same rounds, faults and bank checks with every agent listening on
# 127.0.0.1 with mutual TLS instead of a Unix socket. Kills of agents and
# coordinators drop TCP connections mid-protocol; resends after the
# reconnect must lose nothing and apply nothing twice.
TEST_TIMEOUT=${TEST_TIMEOUT:-720}
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

SEED=${TORTURE_SEED:-$TEST_SEED}
ROUNDS=${TORTURE_ROUNDS:-10}
TORTURE=$_lib_dir/../torture/torture.sh
OUT=$TEST_DIR/out
ERR=$TEST_DIR/err

# The timeout only guards against a hang; the loop's own checks decide.
test_expect_success "fault loop over TCP+TLS, $ROUNDS rounds, seed $SEED: real checks, 0 violations" '
	TORTURE_PCT="overlap=0" CUTSNAP=$CUTSNAP TMPDIR=$TEST_DIR \
	    timeout -k 5 600 "$TORTURE" -t -k \
	    -n "$ROUNDS" -s "$SEED" >"$OUT" 2>"$ERR"; rc=$?
	cat "$OUT" >&2
	expect_eq "$rc" 0 "torture exit status" &&
	expect_eq "$(sumfield tcp "$OUT")" 1 "tcp" &&
	expect_eq "$(sumfield violations "$OUT")" 0 "violations" &&
	expect_eq "$(sumfield result "$OUT")" PASS "result" &&
	expect_eq "$(sumfield rounds "$OUT")" "$ROUNDS" "rounds" &&
	positive complete "$OUT" &&
	positive verifies "$OUT" &&
	positive cut_sums "$OUT" &&
	positive restores "$OUT" &&
	positive inflight "$OUT" &&
	positive kills "$OUT" &&
	grep -qx "torture: PASS" "$OUT"
'

test_expect_success "the agents of that run listened on TCP with TLS, not on Unix sockets" '
	dir=$(ls -d "$TEST_DIR"/cs-torture.* | head -n 1) &&
	test -d "$dir" &&
	expect_eq "$(grep -c "^addr = 127\.0\.0\.1:[0-9]*$" "$dir/cluster.ini")" 3 "agents with addr" &&
	test -s "$dir/tls/ca.crt" &&
	expect_eq "$(grep -l "listening on 127\.0\.0\.1:.*mutual TLS" "$dir"/run/*.log | wc -l)" 3 "agents listening on TLS" &&
	expect_eq "$(find "$dir" -type s | wc -l)" 0 "Unix sockets"
'

test_done
