#!/bin/bash
# The agents' TLS per record: an agent picks TLS_AES_128_GCM_SHA256
# whatever the client prefers, and still serves a client that offers only
# AES-256-GCM or ChaCha20. TLS errors are queued per thread, not per
# connection, and the transport clears the queue only when it holds one:
# clients that go away without a close_notify (an error on their
# connection) must not make the healthy connections of a running load
# look failed, nor lose or double a transfer.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

LOAD=$TEST_DIR/load.json
DROPS=6

# channels_down: how many times the agents logged a channel down.
channels_down () { cat "$TEST_DIR"/run/*.log | grep -Ec "channel [A-C]>[A-C] down" || true; }

# drop_client N: the Nth client that completes its handshake with A
# (verified), then dies (SIGKILL): its connection ends without a
# close_notify. Fails when the handshake did not complete. (A subshell:
# the fifo's descriptor stays out of the test's shell.)
drop_client () (
	local out=$TEST_DIR/drop.$1 fifo=$TEST_DIR/drop.$1.in pid n=0
	mkfifo "$fifo" || return 1
	exec 7<>"$fifo"
	openssl s_client -connect "127.0.0.1:$PA" -tls1_3 \
	    -cert tls/client.crt -key tls/client.key -CAfile tls/ca.crt \
	    -verify_return_error <&7 >"$out" 2>&1 &
	pid=$!
	while ! grep -q "Verify return code: 0 (ok)" "$out" && [ $n -lt 100 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	exec 7>&-
	rm -f "$fifo"
	grep -q "Verify return code: 0 (ok)" "$out"
)

test_expect_success 'setup: A, B, C on 127.0.0.1 with TLS, channels up' '
	tls_loopback_abc &&
	set_balances A=1000 B=1000 C=1000
'

test_expect_success 'the agent picks TLS_AES_128_GCM_SHA256 over the client default order' '
	s_client dflt.out &&
	cat dflt.out >&2 &&
	grep -q "Verify return code: 0 (ok)" dflt.out &&
	grep -q "Cipher is TLS_AES_128_GCM_SHA256" dflt.out
'

test_expect_success 'a client that offers only AES-256-GCM or ChaCha20 is served with it' '
	s_client aes256.out -ciphersuites TLS_AES_256_GCM_SHA384 &&
	grep -q "Cipher is TLS_AES_256_GCM_SHA384" aes256.out &&
	s_client chacha.out -ciphersuites TLS_CHACHA20_POLY1305_SHA256 &&
	grep -q "Cipher is TLS_CHACHA20_POLY1305_SHA256" chacha.out
'

test_expect_success "load while $DROPS clients die without a close_notify: no failure, conserved" '
	down0=$(channels_down)
	cs load --json -c "$CONF" -s 4 --clients 16 >"$LOAD" 2>"$TEST_DIR/load.err" &
	lp=$!
	sleep 1
	dropped=0
	for i in $(seq 1 $DROPS); do
		drop_client "$i" && dropped=$((dropped + 1))
	done
	wait "$lp"
	rc=$?
	cat "$LOAD" "$TEST_DIR/load.err" >&2
	expect_eq "$dropped" "$DROPS" "clients dropped after a handshake" &&
	expect_eq "$rc" 0 "load exit" &&
	expect_eq "$(json_get "d[\"conserved\"]" "$LOAD")" true "conserved" &&
	expect_eq "$(json_get "d[\"failures\"]" "$LOAD")" 0 "failures" &&
	[ "$(json_get "d[\"transfers\"]" "$LOAD")" -ge 100 ] &&
	total_is 3000
'

test_expect_success 'the channels stayed up meanwhile' '
	channels_up 12 &&
	expect_eq "$(channels_down)" "$down0" "channel downs logged"
'

test_expect_success 'after the drops: transfers still exact, then stop' '
	cs load --json -c "$CONF" -s 1 --clients 4 >"$LOAD" 2>"$TEST_DIR/load.err" &&
	expect_eq "$(json_get "d[\"failures\"]" "$LOAD")" 0 "failures" &&
	total_is 3000 &&
	stop_cluster
'

test_done
