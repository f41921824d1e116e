#!/bin/bash
# Three hosts on one machine: agents A, B and C each in a network
# namespace of its own, joined through a bridge in a fourth one (the hub,
# where the commands and the coordinator run), over TCP + mutual TLS.
# Addresses are in 10.77.0.0/24 and exist only inside these namespaces.
# The seed transfer with a held channel, a snapshot across the hosts,
# verify, a link that goes down and up (nothing lost; a snapshot while it
# is down commits nothing), an agent killed while its link is down, and a
# restore per host that gives the conserved total.
. "$(dirname "$0")/lib.sh"
test_require NETNS
. "$_lib_dir/lib-tls.sh"

netns_hub

# Every command runs in the hub: the coordinator reaches each host there.
cs () {
	timeout -k 5 "${CS_TIMEOUT:-30}" ip netns exec "$NS_HUB" "$CUTSNAP" "$@"
}

# start_agent NAME: run agent NAME in its namespace, log in run/NAME.log.
start_agent () {
	local p
	mkdir -p "$TEST_DIR/run" || return 1
	ip netns exec "$(ns_of "$1")" setsid "$CUTSNAP" agent -c "$CONF" --name "$1" \
	    >>"$TEST_DIR/run/$1.log" 2>&1 </dev/null &
	p=$!
	AGENT_PIDS="$AGENT_PIDS $p"
	wait_for 15 agent_up "$1"
}

test_expect_success 'setup: a hub with a bridge, hosts A, B, C joined by veth pairs' '
	netns_hosts A B C &&
	expect_eq "$(echo $NSS | wc -w)" 4 "namespaces" &&
	ip -n "$(ns_of C)" -4 addr show dev eth0 | grep -q "inet 10.77.0.3/24" &&
	! ip -4 addr show | grep -q "inet 10[.]77[.]0[.]"
'

test_expect_success 'config: each agent on its own host, cert creates their certificates' '
	make_tls_config A=10.77.0.1:7101 B=10.77.0.2:7102 C=10.77.0.3:7103 &&
	expect_ok cert -c "$CONF" &&
	expect_eq "$(grep -c "^created " "$OUT")" 5 "created lines" &&
	openssl x509 -in tls/B.crt -noout -ext subjectAltName | grep -q "IP Address:10.77.0.2"
'

test_expect_success 'start each agent in its namespace; the mesh comes up over TLS' '
	start_agent A && start_agent B && start_agent C &&
	wait_for 15 channels_up 12 &&
	log_has B "listening on 10.77.0.2:7102 \(TCP, mutual TLS 1.3\)" &&
	! ip netns exec "$(ns_of B)" ss -ltn | grep -q ":7101 " &&
	set_balances A=100 B=50 C=0 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'hold A->B, transfer 10; snapshot from B waits; release: it completes' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_ok transfer -c "$CONF" B:bal C:bal 5 &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	wait_bal B 55 &&
	expect_eq "$(total)" 150 "live total" &&
	expect_eq "$(sql "select count(*) from messages where snapshot_id = $SNAP_ID")" 1 "recorded messages" &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

complete_count () {
	sql "select count(*) from snapshots where status = 'complete'"
}

test_expect_success 'B'\''s link down: a transfer to B waits, a snapshot commits nothing' '
	before=$(complete_count) &&
	ip -n "$NS_HUB" link set vB down &&
	expect_ok transfer -c "$CONF" A:bal B:bal 7 &&
	expect_eq "$(bal A)" 83 "A bal" &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --timeout 3 &&
	expect_eq "$(complete_count)" "$before" "complete snapshots"
'

test_expect_success 'link up: the 7 arrives once, the total is conserved' '
	ip -n "$NS_HUB" link set vB up &&
	wait_for 60 total_is 150 &&
	expect_eq "$(bal B)" 62 "B bal" &&
	expect_eq "$(bal A)" 83 "A bal"
'

test_expect_success 'B killed while its link is down, restarted: the queued 4 is resent' '
	ip -n "$NS_HUB" link set vB down &&
	expect_ok transfer -c "$CONF" C:bal B:bal 4 &&
	pid=$(agent_pid B) && kill -KILL "$pid" && wait_for 10 pid_gone "$pid" &&
	ip -n "$NS_HUB" link set vB up &&
	start_agent B &&
	wait_for 60 total_is 150 &&
	expect_eq "$(bal B)" 66 "B bal" &&
	expect_eq "$(bal C)" 1 "C bal"
'

test_expect_success 'a snapshot across the hosts after all that verifies' '
	wait_for 15 channels_up 12 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	expect_eq "$(complete_count)" 2 "complete snapshots"
'

test_expect_success 'stop; each host restores its own agent: the conserved total' '
	stop_cluster &&
	rm -f A.data B.data C.data &&
	n=0 &&
	for h in A B C; do
		timeout 30 ip netns exec "$(ns_of $h)" "$CUTSNAP" restore -r "$REPO" \
		    "$SNAP_ID" -c "$CONF" --agent $h >"$OUT" 2>"$ERR" || { show_out; return 1; }
		n=$((n + 1))
	done &&
	expect_eq "$n" 3 "hosts restored" &&
	expect_eq "$(dump_total bal)" 150 "restored total" &&
	expect_eq "$(dump_val B.data bal)" 66 "restored B"
'

test_done
