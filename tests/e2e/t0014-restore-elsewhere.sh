#!/bin/bash
# Restore into another config (same agents, other paths): the files land in
# that config's data paths only, and a cluster started there carries on from
# the cut.  Also: the foreground agent, and the demo.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: three agents, a snapshot with messages in flight' '
	make_config A B C &&
	start_cluster &&
	set_balances A=300 B=200 C=100 &&
	expect_ok channel -c "$CONF" hold A C &&
	expect_ok channel -c "$CONF" hold B C &&
	expect_ok transfer -c "$CONF" A:bal C:bal 30 &&
	expect_ok transfer -c "$CONF" B:bal C:bal 20 &&
	expect_ok transfer -c "$CONF" A:bal C:bal 3 &&
	snapshot_bg --initiator C &&
	wait_recorded C &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A C &&
	expect_ok channel -c "$CONF" release --reverse B C &&
	snapshot_wait &&
	ID=$SNAP_ID &&
	expect_eq "$(msg_count "$ID")" 3 "messages" &&
	wait_bal C 153 &&
	stop_cluster &&
	cp A.data A.orig && cp B.data B.orig && cp C.data C.orig
'

test_expect_success 'restore into a second config in another directory' '
	mkdir -p dr/data &&
	cat >dr/dr.ini <<-INI &&
	; the disaster-recovery site
	[cluster]
	run_dir = sockets
	[agent A]
	data = data/a.db
	[agent B]
	data = data/b.db
	[agent C]
	data = $TEST_DIR/dr/data/c.db
	INI
	expect_ok restore -r "$REPO" "$ID" -c "$TEST_DIR/dr/dr.ini" &&
	expect_eq "$(dump_val dr/data/a.db bal)/$(dump_val dr/data/b.db bal)/$(dump_val dr/data/c.db bal)" \
	    267/180/153 "A/B/C at the second site"
'

test_expect_success 'the original data files were not touched' '
	cmp A.data A.orig && cmp B.data B.orig && cmp C.data C.orig
'

test_expect_success 'a cluster started at the second site serves the cut and moves money' '
	DR=$TEST_DIR/dr/dr.ini &&
	expect_ok start -c "$DR" &&
	expect_eq "$(cs get -c "$DR" C bal)" 153 "C" &&
	expect_ok transfer -c "$DR" C:bal A:bal 53 &&
	wait_for 10 eval "[ \"\$(cs get -c \"$DR\" A bal)\" = 320 ]" &&
	expect_ok stop -c "$DR"
'

test_expect_success 'restore into a config that lacks an agent of the snapshot: refused, nothing written' '
	mkdir -p part &&
	printf "[cluster]\nrun_dir = run\n[agent A]\ndata = a.db\n[agent B]\ndata = b.db\n" >part/p.ini &&
	expect_error "[12]" restore -r "$REPO" "$ID" -c "$TEST_DIR/part/p.ini" &&
	[ ! -e part/a.db ] && [ ! -e part/b.db ]
'

test_expect_success 'restore into a config with an extra agent: refused, nothing written' '
	mkdir -p extra &&
	printf "[cluster]\nrun_dir = run\n[agent A]\ndata = a.db\n[agent B]\ndata = b.db\n[agent C]\ndata = c.db\n[agent D]\ndata = d.db\n" >extra/e.ini &&
	expect_error "[12]" restore -r "$REPO" "$ID" -c "$TEST_DIR/extra/e.ini" &&
	[ ! -e extra/a.db ] && [ ! -e extra/d.db ]
'

# The signals go to the agent itself (cutsnap_pid), not to its timeout(1)
# wrapper: timeout would relay them twice (to the agent, then to its
# process group) and follow with SIGCONT, which under ASan can cancel
# LeakSanitizer's SIGSTOP during its exit-time check and hang the agent
# until timeout -k kills it. The second SIGTERM is covered on its own below.
test_expect_success 'cutsnap agent runs in the foreground and exits 0 on SIGTERM' '
	cs agent -c "$CONF" --name A >agentA.out 2>agentA.err &
	FG=$! && BG_PIDS="$BG_PIDS $FG" &&
	wait_for 10 eval "cs get -c \"$CONF\" A bal" &&
	expect_eq "$(bal A)" 267 "A" &&
	kill -TERM "$(cutsnap_pid "$FG")" || return 1
	wait "$FG"; rc=$?
	expect_eq "$rc" 0 "exit status after SIGTERM" &&
	expect_exit 1 get -c "$CONF" A bal
'

# Stop signals keep coming while the agent shuts down (timeout(1) and
# service managers send more than one): none may kill it with the default
# action once its shutdown restored the signal mask.
test_expect_success 'a foreground agent sent SIGTERM again and again while it stops exits 0' '
	cs agent -c "$CONF" --name A >agentA2.out 2>agentA2.err &
	FG=$! && BG_PIDS="$BG_PIDS $FG" &&
	wait_for 10 eval "cs get -c \"$CONF\" A bal" &&
	P=$(cutsnap_pid "$FG") || return 1
	n=0
	while [ $n -lt 100000 ] && kill -TERM "$P" 2>/dev/null; do
		n=$((n + 1))
	done
	wait "$FG"; rc=$?
	expect_eq "$rc" 0 "exit status after $n SIGTERMs"
'

test_expect_success 'cutsnap agent exits 0 on SIGINT too' '
	cs agent -c "$CONF" --name B >agentB.out 2>agentB.err &
	FG=$! && BG_PIDS="$BG_PIDS $FG" &&
	wait_for 10 eval "cs get -c \"$CONF\" B bal" &&
	kill -INT "$(cutsnap_pid "$FG")" || return 1
	wait "$FG"; rc=$?
	expect_eq "$rc" 0 "exit status after SIGINT"
'

test_expect_success 'a second agent for the same name is refused (exit 1), the first keeps serving' '
	start_cluster &&
	expect_error "[12]" agent -c "$CONF" --name A &&
	expect_ok status -c "$CONF" &&
	stop_cluster
'

# The demo also shows what independent copies would give (140, 160): only
# the snapshot and restore lines must add up.
test_expect_success 'cutsnap demo: exit 0; the cut and the restore add up to 150, also non-FIFO' '
	CS_TIMEOUT=90 expect_ok demo &&
	expect_eq "$(grep -Eic "restored.*= *150" "$OUT")" 2 "restores adding to 150" &&
	sed -n "/[Nn]on-FIFO/,/^\$/p" "$OUT" | grep -Eq "total 150" &&
	sed -n "/[Nn]on-FIFO/,/^\$/p" "$OUT" | grep -Eqi "restored.*= *150" || { show_out; false; }
'

test_done
