#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Compaction of a sender with a backlog on a held channel, longer than
# the window it keeps in memory (the rest is read back from the data
# file): the unacknowledged messages are carried into the new file and
# read back from there; released, every message arrives exactly once,
# also after a restart on the rewritten file.
. "$(dirname "$0")/lib.sh"

START=10000000
BACKLOG=12000

chan () { out_field A B "$1"; }
drained () { channel_drained A B; }

# grow_backlog N: transfers of 1 from A to B with the channel held until
# at least N more are queued; fails if load fails or rounds run out.
grow_backlog () {
	local want=$(($(chan sent) + $1)) rounds=0
	while [ "$(chan sent)" -lt "$want" ]; do
		rounds=$((rounds + 1))
		[ $rounds -le 12 ] || { say "backlog stuck at $(chan sent)"; return 1; }
		expect_ok load -c "$CONF" -s 2 --clients 32 --max-amount 1 --no-drain --json ||
		    return 1
		json_check 'd["failures"] == 0' || return 1
	done
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

a_gen () {
	cs status -c "$CONF" --json >g.json &&
	json_get "[a for a in d if a[\"agent\"] == \"A\"][0][\"compaction\"][\"generation\"]" g.json
}

test_expect_success 'setup: one channel A>B, held, with a backlog past the window' '
	CHANNELS="A>B" make_config A B &&
	start_cluster &&
	set_balances A=$START B=0 &&
	expect_ok channel -c "$CONF" hold A B &&
	grow_backlog $BACKLOG &&
	[ "$(chan queued)" -ge $BACKLOG ]
'

test_expect_success 'compacted while held: the backlog is in the new file, queued as before' '
	queued=$(chan queued) &&
	expect_ok compact -c "$CONF" A --json &&
	json_check "d[0][\"ok\"] and d[0][\"after\"] < d[0][\"before\"]" &&
	expect_eq "$(a_gen)" 1 "generation" &&
	expect_eq "$(chan queued)" "$queued" "queued after the rewrite"
'

test_expect_success 'released: every message arrives exactly once' '
	expect_ok channel -c "$CONF" release A B &&
	wait_for 60 drained &&
	exactly_once
'

test_expect_success 'half drained, held, compacted, restarted on the new file: exactly once' '
	expect_ok channel -c "$CONF" hold A B &&
	grow_backlog $BACKLOG &&
	expect_ok channel -c "$CONF" release A B &&
	wait_for 20 eval "[ \"\$(chan acked)\" -gt \$(( \$(chan sent) - $BACKLOG / 2 )) ]" &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok compact -c "$CONF" A &&
	expect_eq "$(a_gen)" 2 "generation" &&
	stop_cluster &&
	start_cluster &&
	expect_ok channel -c "$CONF" release A B &&
	wait_for 60 drained &&
	exactly_once &&
	! grep -Eq "error|exiting" run/A.log run/B.log
'

test_done
