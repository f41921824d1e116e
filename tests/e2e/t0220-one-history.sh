#!/bin/bash
# One history per channel: the two ends of a channel connect only when their
# data files come from the same history. Files mixed by a restore that
# stopped half-way, an old file copied back or a lost file make the channel
# "diverged" (status exits 1, a transfer over it fails at once, one log
# line, nothing dropped as already applied, no snapshot); a finished
# restore, a brand-new agent and a restart after kill -9 connect as usual.
. "$(dirname "$0")/lib.sh"

# status_json: "cutsnap status --json" into $OUT (any exit status).
status_json () {
	cs status -c "$CONF" --json >"$OUT" 2>"$ERR"
	RC=$?
}

# diverged_is SPEC: the sorted list of diverged channel ends in status
# --json, "A>B:out" (A's outgoing end) and "A>B:in" (B's incoming end),
# space-separated, equals SPEC ("" for none).
diverged_list () {
	status_json
	json_get '" ".join(sorted(
	    ["%s>%s:out" % (a["agent"], o["dst"]) for a in d if a["up"]
	        for o in a["out"] if o.get("diverged")] +
	    ["%s>%s:in" % (i["src"], a["agent"]) for a in d if a["up"]
	        for i in a["in"] if i.get("diverged")]))'
}
diverged_is () { [ "$(diverged_list)" = "$1" ]; }
wait_diverged () {
	wait_for 15 diverged_is "$1" && return 0
	say "diverged channel ends: expected '$1', found '$(diverged_list)'"
	cat "$OUT" >&2
	return 1
}

# sent_seq SRC DST / applied_seq SRC DST: the channel's seqs from status.
sent_seq () {
	status_json
	json_get "[o['sent'] for a in d if a['agent'] == '$1' for o in a['out'] if o['dst'] == '$2'][0]"
}
applied_seq () {
	status_json
	json_get "[i['applied'] for a in d if a['agent'] == '$2' for i in a['in'] if i['src'] == '$1'][0]"
}

# log_count NAME REGEX: lines of the agent's log matching REGEX.
log_count () { grep -Ec -- "$2" "run/$1.log"; }

test_expect_success 'setup: a snapshot with 10 in flight on A->B (A=90 B=50 +10)' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	snapshot_in_flight 10 &&
	ID=$SNAP_ID &&
	expect_eq "$(msg_count "$ID" A B)" 1 "messages recorded on A->B" &&
	wait_bal B 60
'

test_expect_success 'move money after the snapshot both ways; keep an old copy of B' '
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok transfer -c "$CONF" B:bal A:bal 1 &&
	wait_bal A 86 &&
	wait_channels_settled &&
	stop_cluster &&
	cp B.data B.old &&
	start_cluster &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_ok transfer -c "$CONF" B:bal A:bal 2 &&
	wait_bal B 72 &&
	wait_bal A 78 &&
	wait_channels_settled &&
	stop_cluster &&
	cp A.data A.live && cp B.data B.live &&
	expect_eq "$(dump_total bal)" 150 "total before the restore"
'

test_expect_success 'a restore stopped after the first file, then start: A>B and B>A diverged both ends' '
	CUTSNAP_FAULT=restore-after-file:1 cs restore -r "$REPO" "$ID" -c "$CONF" \
	    >"$OUT" 2>"$ERR"
	RC=$?
	expect_eq "$RC" 99 "exit status of the interrupted restore" &&
	! cmp -s A.data A.live && cmp B.data B.live &&
	start_cluster &&
	wait_diverged "A>B:in A>B:out B>A:in B>A:out"
'

test_expect_success 'status exits 1 and says diverged in text and --json' '
	expect_exit 1 status -c "$CONF" &&
	grep -Eq "^ +A->B .*  diverged$" "$OUT" &&
	grep -Eq "^ +B->A .*  diverged$" "$OUT" &&
	expect_exit 1 status -c "$CONF" --json &&
	json_check "all(a[\"up\"] for a in d) and len(d) == 2"
'

test_expect_success 'a transfer over a diverged channel fails at once, changes nothing' '
	a0=$(bal A) && b0=$(bal B) && s0=$(sent_seq A B) && p0=$(applied_seq A B) &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 5 &&
	err_matches "channel A>B diverged" &&
	err_matches "restore" &&
	expect_error 1 transfer -c "$CONF" B:bal A:bal 3 &&
	err_matches "channel B>A diverged" &&
	expect_eq "$(bal A)/$(bal B)" "$a0/$b0" "A/B" &&
	expect_eq "$(sent_seq A B)/$(applied_seq A B)" "$s0/$p0" "A>B sent/applied"
'

test_expect_success 'a snapshot of the diverged cluster fails at once with the reason' '
	expect_error 1 snapshot -c "$CONF" -r "$REPO" --timeout 20 &&
	err_matches "diverged"
'

test_expect_success 'one log line per diverged channel end, not a loop' '
	sleep 2 &&
	expect_eq "$(log_count A "error: channel A>B diverged")" 1 "A>B lines in A.log" &&
	expect_eq "$(log_count B "error: channel A>B diverged")" 1 "A>B lines in B.log" &&
	expect_eq "$(log_count B "error: channel B>A diverged")" 1 "B>A lines in B.log" &&
	expect_eq "$(log_count A "error: channel B>A diverged")" 1 "B>A lines in A.log"
'

test_expect_success 'finish the restore (run it again): the channels connect, the 10 arrives once' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B restored" &&
	cp A.data A.snap && cp B.data B.snap &&
	start_cluster &&
	wait_channels_settled &&
	expect_ok status -c "$CONF" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	wait_bal B 65 &&
	expect_eq "$(bal A)" 85 "A" &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'same seq, other history: B from one future, A sent as many in another' '
	stop_cluster &&
	cp A.data A.k && cp B.data B.k &&
	start_cluster &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 67 &&
	wait_channels_settled &&
	stop_cluster &&
	cp B.data B.other &&
	cp A.k A.data && cp B.k B.data || return 1
	# A alone: B is down while A sends in this other history.
	"$CUTSNAP" agent -c "$CONF" --name A >>run/A.log 2>&1 &
	AGENT_PIDS="$AGENT_PIDS $!"
	wait_for 10 cs get -c "$CONF" A bal &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	cp B.other B.data &&
	start_cluster &&
	wait_diverged "A>B:in A>B:out" &&
	expect_eq "$(sent_seq A B)" "$(applied_seq A B)" "A>B sent and applied seq" &&
	expect_eq "$(bal B)" 67 "B: nothing dropped as already applied, nothing applied" &&
	expect_eq "$(log_count A "channel A>B diverged: both ends are at seq [0-9]+ but their histories differ")" 1 "reason in A.log" &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 1 &&
	err_matches "diverged"
'

test_expect_success 'an old data file copied back by hand (B): diverged, nothing dropped' '
	stop_cluster &&
	cp A.live A.data && cp B.old B.data &&
	start_cluster &&
	wait_diverged "A>B:in A>B:out B>A:in B>A:out" &&
	expect_exit 1 status -c "$CONF" &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 5 &&
	err_matches "diverged"
'

test_expect_success 'a deleted data file (B): its channels are diverged' '
	stop_cluster &&
	cp A.live A.data && rm B.data &&
	start_cluster &&
	wait_diverged "A>B:in A>B:out B>A:in B>A:out" &&
	expect_exit 1 status -c "$CONF" &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 5 &&
	err_matches "diverged"
'

test_expect_success 'restore of the whole snapshot: both ends agree, no extra step' '
	stop_cluster &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" &&
	cmp A.data A.snap && cmp B.data B.snap &&
	start_cluster &&
	wait_channels_settled &&
	expect_ok transfer -c "$CONF" B:bal A:bal 4 &&
	wait_bal A 94 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'restore host by host (--agent, each from its own copy of the repository)' '
	stop_cluster &&
	rm -f A.data B.data &&
	cp -a "$REPO" repoA && cp -a "$REPO" repoB &&
	expect_ok restore -r repoA "$ID" -c "$CONF" --agent A &&
	[ ! -e B.data ] &&
	expect_ok restore -r repoB "$ID" -c "$CONF" --agent B &&
	restored_alone A.data A.snap "$ID" && restored_alone B.data B.snap "$ID" &&
	start_cluster &&
	! grep -q fenced "$ERR" &&
	wait_channels_settled &&
	expect_ok transfer -c "$CONF" A:bal B:bal 3 &&
	wait_bal B 63 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'restore --agent with an agent the config lacks: exit 2, one line' '
	stop_cluster &&
	expect_error 2 restore -r "$REPO" "$ID" -c "$CONF" --agent Z &&
	err_matches "unknown agent"
'

test_expect_success 'a brand-new agent added to the cluster: its channels just work' '
	printf "\n[agent C]\ndata = C.data\n" >>"$CONF" &&
	AGENTS="A B C" &&
	start_cluster &&
	cs put -c "$CONF" C bal 0 >/dev/null &&
	expect_ok transfer -c "$CONF" A:bal C:bal 7 &&
	expect_ok transfer -c "$CONF" B:bal C:bal 3 &&
	wait_bal C 10 &&
	expect_ok transfer -c "$CONF" C:bal A:bal 10 &&
	wait_channels_settled &&
	expect_ok status -c "$CONF" &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'kill -9 of the sender with messages queued: resent once after restart' '
	expect_ok channel -c "$CONF" hold A B &&
	for i in 1 2 3; do
		expect_ok transfer -c "$CONF" A:bal B:bal 1 || return 1
	done &&
	b0=$(bal B) &&
	pid=$(agent_pid A) && kill -KILL $pid && wait_for 10 pid_gone $pid &&
	start_cluster &&
	wait_channels_settled &&
	expect_eq "$(bal B)" $((b0 + 3)) "B after the resend" &&
	expect_eq "$(sent_seq A B)" "$(applied_seq A B)" "A>B sent/applied" &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'kill -9 of the receiver with messages in flight: delivered once after restart' '
	expect_ok channel -c "$CONF" hold A B &&
	for i in 1 2 3 4; do
		expect_ok transfer -c "$CONF" A:bal B:bal 2 || return 1
	done &&
	pid=$(agent_pid B) && kill -KILL $pid && wait_for 10 pid_gone $pid &&
	b0=$(dump_val B.data bal) &&
	expect_ok channel -c "$CONF" release A B &&
	start_cluster &&
	wait_channels_settled &&
	expect_eq "$(bal B)" $((b0 + 8)) "B after the restart" &&
	expect_eq "$(sent_seq A B)" "$(applied_seq A B)" "A>B sent/applied" &&
	expect_eq "$(total)" 150 "total" &&
	stop_cluster
'

test_done
