#!/bin/bash
# Snapshots taken from every agent while random transfers run: each one
# verifies, and each one restored holds exactly the money there was.
. "$(dirname "$0")/lib.sh"

NAMES=(A B C D)
N_LOOPS=2
N_TRANSFERS=150		# per loop

# transfer_loop SEED: random transfers; any status but 0 (done) and 1
# (not enough money) is written to loop.errors.
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
		0 | 1) ;;
		*) echo "transfer $s:bal $d:bal $n: exit $rc: $(cat "loop.err.$1")" \
		    >>loop.errors ;;
		esac
	done
}

test_expect_success 'setup: four agents with 1000 each' '
	make_config A B C D &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 D=1000 &&
	expect_eq "$(total)" 4000 "total"
'

test_expect_success 'snapshots from every initiator during random transfers all complete' '
	LOOP_PIDS="" &&
	for l in $(seq 1 $N_LOOPS); do
		transfer_loop $((l * 7919)) &
		LOOP_PIDS="$LOOP_PIDS $!"
	done &&
	BG_PIDS="$BG_PIDS $LOOP_PIDS" &&
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

test_expect_success 'the transfers really ran' '
	[ "$(bal A)$(bal B)$(bal C)$(bal D)" != 1000100010001000 ]
'

test_expect_success 'at least four distinct complete snapshots' '
	expect_eq "$(echo $IDS | wc -w)" "$(echo $IDS | tr " " "\n" | sort -u | wc -l)" "distinct ids" &&
	[ "$(echo $IDS | wc -w)" -ge 4 ] &&
	for id in $IDS; do
		expect_eq "$(snap_status "$id")" complete "status of $id" || return 1
	done
'

test_expect_success 'every snapshot verifies' '
	for id in $IDS; do
		expect_ok verify -r "$REPO" "$id" || return 1
	done
'

test_expect_success 'every snapshot: recorded files plus in-flight messages = 4000' '
	say "recorded in-flight messages: $(sql "select count(*) from messages")" &&
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

test_expect_success 'stop: the data files hold 4000' '
	stop_cluster &&
	expect_eq "$(dump_total bal)" 4000 "offline total"
'

test_expect_success 'each snapshot restored holds 4000' '
	for id in $IDS; do
		expect_ok restore -r "$REPO" "$id" -c "$CONF" || return 1
		expect_eq "$(dump_total bal)" 4000 "total restored from $id" || return 1
	done
'

test_expect_success 'the quiet snapshot restores the exact live balances' '
	expect_ok restore -r "$REPO" "$QUIET" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal) $(dump_val B.data bal) $(dump_val C.data bal) $(dump_val D.data bal)" \
	    "$LIVE" "balances"
'

test_expect_success 'agents started on a restored snapshot deliver its messages once' '
	set -- $IDS &&
	expect_ok restore -r "$REPO" "$1" -c "$CONF" &&
	start_cluster &&
	wait_for 20 total_is 4000 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	expect_eq "$(dump_total bal)" 4000 "offline total"
'

test_done
