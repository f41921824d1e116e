#!/bin/bash
# kill -9 of an agent in the middle of transfers: after a restart every
# message is delivered exactly once, the money is conserved and a snapshot
# of the recovered cluster verifies.
. "$(dirname "$0")/lib.sh"

NAMES=(A B C)

# transfer_loop SEED MAX: random transfers until the file loop.stop exists
# (or MAX were tried).
transfer_loop () {
	local i s d rc
	RANDOM=$1
	for i in $(seq 1 "$2"); do
		[ -e loop.stop ] && [ "$i" -gt 50 ] && break
		s=${NAMES[RANDOM % 3]}
		d=${NAMES[RANDOM % 3]}
		[ "$s" = "$d" ] && continue
		cs transfer -c "$CONF" "$s:bal" "$d:bal" $((RANDOM % 50 + 1)) \
		    >/dev/null 2>&1
		rc=$?
		# 0 done, 1 refused or the source agent is down.
		case $rc in
		0 | 1) ;;
		*) echo "transfer $s->$d: exit $rc" >>loop.errors ;;
		esac
	done
}

test_expect_success 'setup: three agents with 1000 each' '
	make_config A B C &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	expect_eq "$(total)" 3000 "total"
'

test_expect_success 'kill -9 agent B while transfers run' '
	transfer_loop $((TEST_SEED + 4242)) 3000 &
	LOOP=$! && BG_PIDS="$BG_PIDS $LOOP" &&
	wait_for 20 eval "[ \$(stat -c %s B.data) -gt 1000 ]" &&
	pid=$(agent_pid B) && [ -n "$pid" ] &&
	kill -KILL "$pid" &&
	wait_for 10 pid_gone $pid &&
	kill -0 "$LOOP"
'

test_expect_success 'status reports B down while it is dead' '
	expect_exit 1 status -c "$CONF" --json &&
	json_check "[a[\"up\"] for a in d if a[\"agent\"] == \"B\"] == [False]" &&
	json_check "all(a[\"up\"] for a in d if a[\"agent\"] != \"B\")"
'

test_expect_success 'restart B with cutsnap start; the others keep running' '
	A_PID=$(agent_pid A) && C_PID=$(agent_pid C) &&
	start_cluster &&
	expect_ok status -c "$CONF" &&
	expect_eq "$(agent_pid A)" "$A_PID" "A pid" &&
	expect_eq "$(agent_pid C)" "$C_PID" "C pid"
'

test_expect_success 'the transfers finish without unexpected errors' '
	wait_for 10 eval "[ \$(stat -c %s B.data) -gt $(stat -c %s B.data) ]" &&
	touch loop.stop &&
	wait "$LOOP" &&
	[ ! -s loop.errors ] || { cat loop.errors; return 1; }
'

test_expect_success 'every channel drains: the total is 3000 again' '
	wait_for 20 total_is 3000 || { say "total: $(total)"; return 1; }
'

test_expect_success 'the total stays 3000 (no late duplicate deliveries)' '
	files_settle A.data B.data C.data &&
	expect_eq "$(total)" 3000 "total"
'

test_expect_success 'a snapshot of the recovered cluster verifies' '
	take_snapshot --initiator B &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'kill -9 of every agent, restart: same balances, still 3000' '
	before="$(bal A) $(bal B) $(bal C)" &&
	for n in A B C; do
		p=$(agent_pid $n) && [ -n "$p" ] && kill -KILL $p || return 1
	done &&
	wait_for 10 eval "[ -z \"\$(agent_pid A)\$(agent_pid B)\$(agent_pid C)\" ]" &&
	start_cluster &&
	expect_eq "$(bal A) $(bal B) $(bal C)" "$before" "balances" &&
	expect_eq "$(total)" 3000 "total"
'

test_expect_success 'kill -9 of a receiver with messages held for it: delivered once after restart' '
	set_balances A=1000 B=1000 C=1000 &&
	expect_ok channel -c "$CONF" hold A C &&
	expect_ok transfer -c "$CONF" A:bal C:bal 7 &&
	expect_ok transfer -c "$CONF" A:bal C:bal 8 &&
	c0=$(bal C) &&
	p=$(agent_pid C) && kill -KILL $p &&
	wait_for 10 pid_gone $p &&
	start_cluster &&
	expect_eq "$(bal C)" "$c0" "C before release" &&
	expect_ok channel -c "$CONF" release A C &&
	wait_bal C $((c0 + 15)) &&
	expect_eq "$(total)" 3000 "total"
'

test_expect_success 'kill -9 of a sender with held messages: the restarted sender resends them once' '
	expect_ok channel -c "$CONF" hold B C &&
	expect_ok transfer -c "$CONF" B:bal C:bal 3 &&
	c0=$(bal C) &&
	p=$(agent_pid B) && kill -KILL $p &&
	wait_for 10 pid_gone $p &&
	start_cluster &&
	wait_bal C $((c0 + 3)) &&
	files_settle A.data B.data C.data &&
	expect_eq "$(total)" 3000 "total" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

# torn_case NAME BYTES(printf format): stop, append BYTES to A.data as if
# a write had been torn by a crash; the agent starts, cuts them off, and
# nothing is lost.
torn_case () {
	local before size
	before="$(bal A) $(bal B) $(bal C)" &&
	stop_cluster &&
	size=$(stat -c %s A.data) &&
	cp A.data A.before &&
	printf "$2" >>A.data &&
	[ "$(stat -c %s A.data)" -gt "$size" ] &&
	start_cluster &&
	expect_eq "$(bal A) $(bal B) $(bal C)" "$before" "balances after $1" &&
	expect_eq "$(total)" 3000 "total" &&
	expect_ok put -c "$CONF" A after-torn yes &&
	expect_ok get -c "$CONF" A after-torn &&
	cmp -n "$size" A.data A.before
}

test_expect_success 'a torn tail (half a record header) is cut off at start' '
	torn_case half-header "\\040\\000\\000"
'

test_expect_success 'a torn tail (a final record whose checksum fails) is cut off' '
	torn_case bad-crc "\\005\\000\\000\\000\\357\\276\\255\\336\\001xxxx"
'

test_expect_success 'a torn tail of zeros (preallocated, never written) is cut off' '
	torn_case zeros "$(printf "%0512d" 0 | sed "s/0/\\\\000/g")"
'

test_expect_success 'after the torn tails a snapshot still verifies and restores' '
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	stop_cluster &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 3000 "restored total"
'

test_done
