#!/bin/bash
# Concurrent snapshots on the eight-node case of Princeton COS418's
# assignment 2 (8nodes.top, 8nodes-concurrent-snapshots.events): two
# squares N1-N2-N3-N4 and N5-N6-N7-N8 joined by N4-N5, every edge both
# ways; N1..N4 hold 10 each. Tokens are sent on held channels and five
# snapshots start at N3, N1, N8, N6 and N2 while the earlier ones still
# run (a held N8->N7, which no token uses, keeps every one of them open
# until the end). They go into two repositories; each completes, verifies
# and restores to the conserved total of 40, and no two share an id.
. "$(dirname "$0")/lib.sh"

R1=$TEST_DIR/repo1
R2=$TEST_DIR/repo2
NODES="N1 N2 N3 N4 N5 N6 N7 N8"
CHANNELS="N1>N2 N2>N1 N2>N3 N3>N2 N3>N4 N4>N3 N4>N1 N1>N4 N4>N5 N5>N4"
CHANNELS="$CHANNELS N5>N6 N6>N5 N6>N7 N7>N6 N7>N8 N8>N7 N8>N5 N5>N8"
# snapshot tag -> repository, initiator
declare -A REPO_OF=([s1]=$R1 [s2]=$R2 [s3]=$R1 [s4]=$R2 [s5]=$R1)
declare -A INIT_OF=([s1]=N3 [s2]=N1 [s3]=N8 [s4]=N6 [s5]=N2)
declare -A ID_OF

hold () { expect_ok channel -c "$CONF" hold "${1%>*}" "${1#*>}"; }
release () { expect_ok channel -c "$CONF" release "${1%>*}" "${1#*>}"; }
send () { expect_ok transfer -c "$CONF" "$1:bal" "$2:bal" "$3"; }
snap () {
	snapshot_bg_as "$1" -r "${REPO_OF[$1]}" --initiator "${INIT_OF[$1]}" \
	    --timeout 90
}

test_expect_success 'setup: the 8-node topology, N1..N4 with 10 each' '
	make_config $NODES &&
	start_cluster &&
	set_balances N1=10 N2=10 N3=10 N4=10 N5=0 N6=0 N7=0 N8=0 &&
	expect_eq "$(total)" 40 "total" &&
	for c in N8\>N7 N1\>N2 N2\>N3 N3\>N4 N4\>N5; do hold "$c" || return 1; done
'

test_expect_success 'send N1 N2 1; send N2 N3 2; snapshot N3; send N3 N4 3; snapshot N1' '
	send N1 N2 1 &&
	send N2 N3 2 &&
	snap s1 &&
	wait_for 20 snapshots_at_least 1 &&
	send N3 N4 3 &&
	snap s2 &&
	wait_for 20 snapshots_at_least 2
'

test_expect_success 'send N4 N5 4; snapshot N8: three in flight' '
	send N4 N5 4 &&
	snap s3 &&
	wait_for 20 snapshots_at_least 3 &&
	for t in s1 s2 s3; do kill -0 "${SNAP_PIDS[$t]}" || return 1; done
'

test_expect_success 'tick: tokens delivered on N1>N2 .. N4>N5; the three still run' '
	for c in N1\>N2 N2\>N3 N3\>N4 N4\>N5; do release "$c" || return 1; done &&
	wait_bal N5 4 &&
	wait_bal N4 9 &&
	for t in s1 s2 s3; do kill -0 "${SNAP_PIDS[$t]}" || return 1; done
'

test_expect_success 'send N5 N6 2; send N5 N8 1 (held); snapshot N6; snapshot N2: five in flight' '
	hold N5\>N6 && hold N5\>N8 &&
	send N5 N6 2 &&
	send N5 N8 1 &&
	snap s4 &&
	wait_for 20 snapshots_at_least 4 &&
	snap s5 &&
	wait_for 20 snapshots_at_least 5 &&
	expect_ok status -c "$CONF" --json &&
	json_check "all(len(a[\"snapshots\"]) == 5 for a in d)" &&
	json_check "all(len(set(s[\"uid\"] for s in a[\"snapshots\"])) == 5 for a in d)"
'

test_expect_success 'tick: N6 gets its 2 and sends N6 N7 1 while all five run' '
	release N5\>N6 && release N5\>N8 &&
	wait_bal N6 2 &&
	wait_bal N8 1 &&
	send N6 N7 1 &&
	for t in s1 s2 s3 s4 s5; do kill -0 "${SNAP_PIDS[$t]}" || return 1; done
'

test_expect_success 'release N8>N7: all five complete' '
	release N8\>N7 &&
	for t in s1 s2 s3 s4 s5; do
		snapshot_wait_as "$t" || return 1
		ID_OF[$t]=$SNAP_ID
	done &&
	expect_eq "$(total)" 40 "live total"
'

test_expect_success 'each verifies and its cut holds the conserved 40' '
	n=0 &&
	for t in s1 s2 s3 s4 s5; do
		expect_ok verify -r "${REPO_OF[$t]}" "${ID_OF[$t]}" &&
		expect_eq "$(cut_total "${REPO_OF[$t]}" "${ID_OF[$t]}")" 40 \
		    "total of $t (initiator ${INIT_OF[$t]})" || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 5 "snapshots checked"
'

test_expect_success 'ids are distinct within each repository; identities everywhere' '
	expect_eq "$(printf "%s\n" "${ID_OF[s1]}" "${ID_OF[s3]}" "${ID_OF[s5]}" | sort -u | wc -l)" 3 "ids in repo1" &&
	expect_eq "$(printf "%s\n" "${ID_OF[s2]}" "${ID_OF[s4]}" | sort -u | wc -l)" 2 "ids in repo2" &&
	cs ls -r "$R1" --json >"$TEST_DIR/.l1" && cs ls -r "$R2" --json >"$TEST_DIR/.l2" &&
	python3 -c "import json, sys
u = [s[\"uid\"] for f in sys.argv[1:] for s in json.load(open(f))]
assert len(u) == 5 and len(set(u)) == 5, u" "$TEST_DIR/.l1" "$TEST_DIR/.l2"
'

# N3 recorded before N2's 2 reached it, N2 before N1's 1 did (both held):
# the first snapshot holds both tokens in flight.
test_expect_success 'the snapshot at N3 recorded the 1 and the 2 held in flight' '
	expect_eq "$(REPO=$R1 msg_count "${ID_OF[s1]}" N1 N2)" 1 "on N1->N2" &&
	expect_eq "$(REPO=$R1 msg_count "${ID_OF[s1]}" N2 N3)" 1 "on N2->N3" &&
	expect_eq "$(REPO=$R1 msg_sum "${ID_OF[s1]}")" 3 "amount in flight"
'

test_expect_success 'each restores to the conserved total 40' '
	stop_cluster &&
	restore_each 40 "$R1:${ID_OF[s1]}" "$R2:${ID_OF[s2]}" "$R1:${ID_OF[s3]}" \
	    "$R2:${ID_OF[s4]}" "$R1:${ID_OF[s5]}"
'

test_done
