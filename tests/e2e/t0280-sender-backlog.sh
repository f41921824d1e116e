#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A sender's memory does not grow with its backlog: a held channel with
# a long queue keeps only a window of it in memory, the rest stays in the
# data file and is read back as the channel drains; every message still
# arrives exactly once, also after a restart with the backlog queued.
. "$(dirname "$0")/lib.sh"

# Under AddressSanitizer the peak measures its shadow memory and the
# quarantine of freed blocks, not the agent's design: there the bound is
# reported but not asserted, and a shorter backlog does (the plain build
# asserts it).
case $(basename "$CUTSNAP") in
*-asan) SANITIZED=1 BACKLOG=40000 BURST=5000 ;;
*) SANITIZED=0 BACKLOG=150000 BURST=20000 ;;
esac
# BURST: the messages the cases under load wait for (queued, acknowledged,
# sent before a kill): fewer under ASan, whose agents on a loaded machine
# sent under 5,000 a second.
# Idle, an agent peaks near 7 MiB; the old sender kept about 200 bytes per
# queued message (150,000 took it past 35 MiB).
LIMIT_KIB=$((20 * 1024))
START=10000000

peak_kib () {
	awk '/^VmHWM:/ { print $2 }' "/proc/$(agent_pid "$1")/status"
}

peak_below_limit () {
	local k
	k=$(peak_kib "$1") || return 1
	say "agent $1 VmHWM: $k KiB (limit $LIMIT_KIB KiB)"
	[ -n "$k" ] || return 1
	[ $SANITIZED = 1 ] || [ "$k" -lt $LIMIT_KIB ]
}

chan () { out_field A B "$1"; }
drained () { channel_drained A B; }

# grow_backlog N: transfers of 1 from A to B with the channel held until
# at least N more are queued; fails if load fails or rounds run out.
grow_backlog () {
	local want=$(($(chan sent) + $1)) rounds=0
	while [ "$(chan sent)" -lt "$want" ]; do
		rounds=$((rounds + 1))
		[ $rounds -le 12 ] || { say "backlog stuck at $(chan sent)"; return 1; }
		expect_ok load -c "$CONF" -s 3 --clients 32 --max-amount 1 --no-drain --json ||
		    return 1
		json_check 'd["failures"] == 0 and d["conserved"] is None' ||
		    return 1
	done
	say "A sent $(chan sent), B applied so far: $(chan acked)"
}

# Every message arrived once: B holds exactly what A debited.
exactly_once () {
	local sent
	sent=$(chan sent) || return 1
	[ "$sent" -gt 0 ] || return 1
	expect_eq "$(bal B)" "$sent" "B's balance (one per message sent)" &&
	expect_eq "$(bal A)" $((START - sent)) "A's balance" &&
	expect_eq "$(total)" $START "total"
}

# Only A, in the foreground of a background job: while B is down A's
# backlog stays queued.
start_a_alone () {
	"$CUTSNAP" agent -c "$CONF" --name A 2>"$TEST_DIR/A.err" &
	BG_PIDS="$BG_PIDS $!"
	AGENT_PIDS="$AGENT_PIDS $!"
}

test_expect_success 'setup: one channel A>B, held' '
	CHANNELS="A>B" make_config A B &&
	start_cluster &&
	set_balances A=$START B=0 &&
	expect_ok channel -c "$CONF" hold A B
'

test_expect_success "a backlog of $BACKLOG messages keeps A below 20 MiB" '
	grow_backlog $BACKLOG &&
	expect_eq "$(chan queued)" "$(chan sent)" "queued on the held channel" &&
	peak_below_limit A
'

test_expect_success 'released, every message arrives exactly once; A stays below 20 MiB' '
	expect_ok channel -c "$CONF" release A B &&
	wait_for 60 drained &&
	exactly_once &&
	peak_below_limit A
'

test_expect_success "restarted with a backlog of $BACKLOG and its peer down, A stays below 20 MiB" '
	expect_ok channel -c "$CONF" hold A B &&
	grow_backlog $BACKLOG &&
	sent=$(chan sent) &&
	stop_cluster &&
	start_a_alone &&
	wait_for 10 chan sent &&
	expect_eq "$(chan queued)" $((sent - $(chan acked))) "queued after the restart" &&
	[ "$(chan queued)" -ge $BACKLOG ] &&
	peak_below_limit A
'

test_expect_success 'B started: the backlog arrives exactly once; A stays below 20 MiB' '
	expect_ok start -c "$CONF" &&
	wait_for 60 drained &&
	exactly_once &&
	peak_below_limit A
'

# While transfers keep coming: the window refills from the file as acks
# arrive in the middle of batches whose records are not durable yet.
# The load runs until every step has been seen (then SIGTERM ends it
# early, with its summary), not for a fixed time that a slow machine
# can outlast.
test_expect_success 'held, released, held and released reversed under load: exactly once' '
	expect_ok channel -c "$CONF" hold A B &&
	{ "$CUTSNAP" load -c "$CONF" -s 600 --clients 32 --max-amount 1 --no-drain --json \
	    >load.out 2>load.err & } &&
	LOAD_PID=$! && BG_PIDS="$BG_PIDS $LOAD_PID" &&
	wait_for 60 eval "[ \"\$(chan queued)\" -gt $BURST ]" &&
	acked=$(chan acked) &&
	expect_ok channel -c "$CONF" release A B &&
	wait_for 60 eval "[ \"\$(chan queued)\" -gt 0 ] && [ \"\$(chan acked)\" -gt $((acked + BURST)) ]" &&
	expect_ok channel -c "$CONF" hold A B &&
	wait_for 60 eval "[ \"\$(chan queued)\" -gt $((BURST / 2)) ]" &&
	acked=$(chan acked) &&
	expect_ok channel -c "$CONF" release --reverse A B &&
	wait_for 60 eval "[ \"\$(chan acked)\" -gt $((acked + BURST)) ]" &&
	kill -TERM "$LOAD_PID" &&
	wait "$LOAD_PID" &&
	json_check "(d[\"failures\"] == 0 and d[\"transfers\"] > 0 and
	    d[\"interrupted\"] is True)" load.out &&
	wait_for 60 drained &&
	exactly_once &&
	! grep -Eq "error|exiting" run/A.log run/B.log
'

# kill -9 under load: the sender's file knows less acknowledged than the
# receiver applied (ACK records are hints), so it restarts with a file
# part to resend from its cursor; the channel keeps one history.
# A is killed once BURST more messages were sent.
test_expect_success 'A killed -9 under load and restarted: same history, exactly once' '
	"$CUTSNAP" load -c "$CONF" -s 600 --clients 32 --max-amount 1 --no-drain --json \
	    >load2.out 2>&1 &
	LOAD_PID=$! && BG_PIDS="$BG_PIDS $LOAD_PID" &&
	before=$(chan sent) &&
	wait_for 60 eval "[ \"\$(chan sent)\" -gt $((before + BURST)) ]" &&
	kill -KILL "$(agent_pid A)" &&
	kill -TERM "$LOAD_PID" &&
	{ wait "$LOAD_PID"; true; } &&
	start_cluster &&
	wait_for 60 drained &&
	expect_ok status -c "$CONF" --json &&
	json_check "not any(o.get(\"diverged\") for a in d for o in a[\"out\"])" &&
	! grep -q "diverged" run/A.log &&
	exactly_once
'

test_done
