#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Snapshots taken from every agent while random transfers run: each one
# verifies, and each one restored holds exactly the money there was.
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

NAMES=(A B C D)
N_LOOPS=2
N_TRANSFERS=150		# per loop

# transfer_loop SEED: random transfers; each one done (status 0) goes to
# the ledger (ledger.SEED: "SRC DST AMOUNT"), any status but 0 and 1 (not
# enough money) to loop.errors.
transfer_loop () {
	local i s d n rc
	RANDOM=$1
	for i in $(seq 1 $N_TRANSFERS); do
		s=${NAMES[RANDOM % 4]}
		d=${NAMES[RANDOM % 4]}
		[ "$s" = "$d" ] && continue
		n=$((RANDOM % 200 + 1))
		cs transfer -c "$CONF" "$s:bal" "$d:bal" "$n" >/dev/null 2>"loop.err.$1"
		rc=$?
		case $rc in
		0) echo "$s $d $n" >>"ledger.$1" ;;
		1) ;;
		*) echo "transfer $s:bal $d:bal $n: exit $rc: $(cat "loop.err.$1")" \
		    >>loop.errors ;;
		esac
	done
}

# chaos_loop SEED: hold two random channels for a moment, release them
# (half of the time in reverse, the non-FIFO drill), until chaos.stop
# exists; so that snapshots catch messages in flight.  The sleeps shape the
# workload; nothing waits on them.
chaos_loop () {
	local i s1 d1 s2 d2
	RANDOM=$1
	for i in $(seq 1 300); do
		[ -e chaos.stop ] && break
		s1=${NAMES[RANDOM % 4]}; d1=${NAMES[RANDOM % 4]}
		s2=${NAMES[RANDOM % 4]}; d2=${NAMES[RANDOM % 4]}
		[ "$s1" = "$d1" ] || cs channel -c "$CONF" hold "$s1" "$d1"
		[ "$s2" = "$d2" ] || cs channel -c "$CONF" hold "$s2" "$d2"
		sleep 0.$((RANDOM % 3 + 1))
		for c in "$s1 $d1" "$s2 $d2"; do
			set -- $c
			[ "$1" = "$2" ] && continue
			if [ $((RANDOM % 2)) = 0 ]; then
				cs channel -c "$CONF" release --reverse "$1" "$2"
			else
				cs channel -c "$CONF" release "$1" "$2"
			fi
		done
	done >chaos.log 2>&1
}

# ledger_balances: the balances of A B C D that the transfers in the
# ledger files lead to from 1000 each; live_balances: the agents' own.
ledger_balances () {
	cat ledger.* | awk '{ b[$1] -= $3; b[$2] += $3 }
	    END { printf "%d %d %d %d\n", 1000 + b["A"], 1000 + b["B"],
	        1000 + b["C"], 1000 + b["D"] }'
}
live_balances () { echo "$(bal A) $(bal B) $(bal C) $(bal D)"; }
balances_are () { [ "$(live_balances)" = "$1" ]; }

# balances_match_ledger MIN: at least MIN transfers are in the ledger and,
# once the channels drain, every balance is exactly what they lead to.
balances_match_ledger () {
	local n want
	n=$(cat ledger.* | wc -l) &&
	say "$n transfers done" &&
	[ "$n" -ge "$1" ] &&
	want=$(ledger_balances) &&
	say "balances expected from the ledger: $want" &&
	{ wait_for 30 balances_are "$want" ||
	    { say "balances are $(live_balances)"; return 1; }; }
}

release_all () {
	local s d
	for s in "${NAMES[@]}"; do
		for d in "${NAMES[@]}"; do
			[ "$s" = "$d" ] || cs channel -c "$CONF" release "$s" "$d" || return 1
		done
	done
}

test_expect_success 'setup: four agents with 1000 each' '
	make_config A B C D &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 D=1000 &&
	expect_eq "$(total)" 4000 "total"
'

test_expect_success 'snapshots from every initiator during random transfers all complete' '
	LOOP_PIDS=""
	for l in $(seq 1 $N_LOOPS); do
		transfer_loop $((TEST_SEED + l * 7919)) &
		LOOP_PIDS="$LOOP_PIDS $!"
	done
	BG_PIDS="$BG_PIDS $LOOP_PIDS"
	IDS="" && k=0 &&
	while [ $k -lt 4 ] || { [ $k -lt 12 ] && kill -0 $LOOP_PIDS 2>/dev/null; }; do
		take_snapshot --initiator "${NAMES[k % 4]}" || return 1
		IDS="$IDS $SNAP_ID"
		k=$((k + 1))
	done &&
	say "snapshots: $IDS" &&
	for p in $LOOP_PIDS; do wait "$p"; done &&
	[ ! -s loop.errors ] || { cat loop.errors; return 1; }
'

test_expect_success 'drained, each balance is 1000 plus exactly what the transfers done brought it' '
	balances_match_ledger 50
'

test_expect_success 'at least four distinct complete snapshots' '
	expect_eq "$(echo $IDS | wc -w)" "$(echo $IDS | tr " " "\n" | sort -u | wc -l)" "distinct ids" &&
	[ "$(echo $IDS | wc -w)" -ge 4 ] &&
	for id in $IDS; do
		expect_eq "$(snap_status "$id")" complete "status of $id" || return 1
	done
'

test_expect_success 'every snapshot verifies' '
	at_least 4 snapshots $IDS &&
	for id in $IDS; do
		expect_ok verify -r "$REPO" "$id" || return 1
	done
'

test_expect_success 'every snapshot: recorded files plus in-flight messages = 4000' '
	say "recorded in-flight messages: $(sql "select count(*) from messages")" &&
	at_least 4 snapshots $IDS &&
	for id in $IDS; do
		s=0
		for n in "${NAMES[@]}"; do
			v=$(blob_val "$id" $n bal) || return 1
			s=$((s + v))
		done
		m=$(msg_sum "$id") || return 1
		say "snapshot $id: files $s + messages $m"
		expect_eq "$((s + m))" 4000 "snapshot $id total" || return 1
	done
'

test_expect_success 'once the channels drain the live total is 4000' '
	wait_for 20 total_is 4000 || { say "total is $(total)"; return 1; }
'

test_expect_success 'a snapshot of the quiet cluster has no messages and verifies' '
	take_snapshot --initiator C &&
	expect_eq "$(msg_count "$SNAP_ID")" 0 "messages" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	LIVE="$(bal A) $(bal B) $(bal C) $(bal D)" &&
	QUIET=$SNAP_ID
'

test_expect_success 'phase 2: channels held and released at random (some reversed) during snapshots' '
	rm -f loop.errors chaos.stop
	LOOP_PIDS=""
	for l in $(seq 1 $N_LOOPS); do
		N_TRANSFERS=400 transfer_loop $((TEST_SEED + l * 104729)) &
		LOOP_PIDS="$LOOP_PIDS $!"
	done
	chaos_loop $((TEST_SEED + 31337)) &
	CHAOS=$!
	BG_PIDS="$BG_PIDS $LOOP_PIDS $CHAOS"
	IDS2="" && k=0 &&
	while [ $k -lt 6 ] || { [ $k -lt 14 ] && kill -0 $LOOP_PIDS 2>/dev/null; }; do
		# Besides the random holds: one more held channel with a
		# message queued on it when the snapshot starts.
		init=${NAMES[(k + 1) % 4]}
		hs=${NAMES[k % 4]}; hd=${NAMES[(k + 2) % 4]}
		expect_ok channel -c "$CONF" hold "$hs" "$hd" || return 1
		cs transfer -c "$CONF" "$hs:bal" "$hd:bal" 1 >/dev/null 2>&1 &&
		    echo "$hs $hd 1" >>ledger.holds
		snapshot_bg --initiator "$init"
		wait_recorded "$init" || return 1
		if [ $((k % 2)) = 0 ]; then
			expect_ok channel -c "$CONF" release --reverse "$hs" "$hd"
		else
			expect_ok channel -c "$CONF" release "$hs" "$hd"
		fi || return 1
		snapshot_wait || return 1
		IDS2="$IDS2 $SNAP_ID"
		k=$((k + 1))
	done &&
	say "snapshots: $IDS2" &&
	for p in $LOOP_PIDS; do wait "$p"; done &&
	touch chaos.stop && wait "$CHAOS" &&
	release_all &&
	[ ! -s loop.errors ] || { cat loop.errors; return 1; }
'

test_expect_success 'phase 2: the holds put messages in flight in some snapshots' '
	n=0 &&
	at_least 6 snapshots $IDS2 &&
	for id in $IDS2; do n=$((n + $(msg_count "$id"))); done &&
	say "in-flight messages recorded: $n" &&
	[ "$n" -gt 0 ]
'

test_expect_success 'phase 2: every snapshot verifies and holds 4000 (files + messages)' '
	at_least 6 snapshots $IDS2 &&
	for id in $IDS2; do
		expect_ok verify -r "$REPO" "$id" || return 1
		s=0
		for n in "${NAMES[@]}"; do
			v=$(blob_val "$id" $n bal) || return 1
			s=$((s + v))
		done
		m=$(msg_sum "$id") || return 1
		say "snapshot $id: files $s + messages $m ($(msg_count "$id"))"
		expect_eq "$((s + m))" 4000 "snapshot $id total" || return 1
	done
'

test_expect_success 'phase 2: the channels drain to 4000, each balance what the ledger says' '
	wait_for 20 total_is 4000 || { say "total is $(total)"; return 1; }
	balances_match_ledger 150
'

test_expect_success 'stop: the data files hold 4000' '
	stop_cluster &&
	expect_eq "$(dump_total bal)" 4000 "offline total"
'

test_expect_success 'each snapshot restored holds 4000' '
	at_least 10 snapshots $IDS $IDS2 &&
	for id in $IDS $IDS2; do
		expect_ok restore -r "$REPO" "$id" -c "$CONF" || return 1
		expect_eq "$(dump_total bal)" 4000 "total restored from $id" || return 1
	done
'

test_expect_success 'the quiet snapshot restores the exact live balances' '
	expect_ok restore -r "$REPO" "$QUIET" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal) $(dump_val B.data bal) $(dump_val C.data bal) $(dump_val D.data bal)" \
	    "$LIVE" "balances"
'

# The phase-2 snapshot with the most messages in flight.
test_expect_success 'agents started on a restored snapshot deliver its messages once' '
	set -- $(sql "select snapshot_id from messages group by 1 order by count(*) desc limit 1") &&
	[ -n "${1:-}" ] &&
	say "restoring snapshot $1 with $(msg_count "$1") messages" &&
	expect_ok restore -r "$REPO" "$1" -c "$CONF" &&
	start_cluster &&
	wait_for 20 total_is 4000 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	expect_eq "$(dump_total bal)" 4000 "offline total"
'

test_done
