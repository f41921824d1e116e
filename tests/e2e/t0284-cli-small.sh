#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Small things an operator meets: --version; start says what it started
# and what already ran; dump's text output cannot be forged by a value;
# idle channels show no unacknowledged markers after many snapshots; a
# coordinator paused past its timeout and a symlinked data path get
# errors that name the cause and the fix; snapshot -v says when every
# agent has joined and as each reports, so a script can wait for it.
. "$(dirname "$0")/lib.sh"

# pid_of NAME: the agent's pid as status --json reports it.
pid_of () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st"
	json_get "[a[\"pid\"] for a in d if a[\"agent\"] == \"$1\"][0]" "$TEST_DIR/.st"
}

test_expect_success '--version and -V print one line with the formats' '
	expect_ok --version &&
	grep -Eqx "cutsnap [0-9]+\.[0-9]+\.[0-9]+ \(wire protocol [0-9]+, manifest schema [0-9]+\)" "$OUT" &&
	[ "$(wc -l <"$OUT")" -eq 1 ] &&
	cp "$OUT" version.1 &&
	expect_ok -V &&
	cmp "$OUT" version.1 &&
	{ cs --version >/dev/full 2>"$ERR"; [ $? -eq 1 ]; } &&
	err_is_one_line
'

test_expect_success 'start prints each agent it started with its pid' '
	make_config A B &&
	expect_ok start -c "$CONF" &&
	_record_agent_pids &&
	expect_eq "$(cat "$OUT")" "A started (pid $(pid_of A))
B started (pid $(pid_of B))" "start output"
'

test_expect_success 'start again: each agent already running, with its pid' '
	expect_ok start -c "$CONF" &&
	expect_eq "$(cat "$OUT")" "A already running (pid $(pid_of A))
B already running (pid $(pid_of B))" "start output"
'

test_expect_success 'dump escapes keys and values: a value cannot forge a watermark line' '
	printf "x\n#sent\tB\t99" | cs put -c "$CONF" A forged - >/dev/null &&
	printf "B\t7" | cs put -c "$CONF" A "#sent" - >/dev/null &&
	printf "back\\\\slash" | cs put -c "$CONF" A bs - >/dev/null &&
	set_balances A=100 &&
	expect_ok dump A.data &&
	! grep -q "^#sent" "$OUT" &&
	grep -qxF "forged	x\n#sent\tB\t99" "$OUT" &&
	grep -qxF "\\#sent	B\t7" "$OUT" &&
	grep -qxF "bs	back\\\\slash" "$OUT" &&
	# One line per key, then only real watermark lines start with #.
	expect_eq "$(grep -c "^#" "$OUT")" 0 "watermark lines of A (none yet)" &&
	expect_eq "$(wc -l <"$OUT")" 4 "lines" &&
	expect_ok dump A.data --json &&
	json_check "d[\"keys\"][\"forged\"] == \"x\\n#sent\\tB\\t99\" and d[\"sent\"] == {}"
'

test_expect_success 'twenty snapshots of an idle cluster leave no marker unacked or queued' '
	n=0 &&
	while [ $n -lt 20 ]; do
		take_snapshot || return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 20 "snapshots taken" &&
	expect_ok status -c "$CONF" --json &&
	json_check "[(o[\"unacked\"], o[\"queued\"]) for a in d for o in a[\"out\"]] == [(0, 0)] * 2"
'

test_expect_success 'snapshot -v: all agents joined, then each report, in order' '
	expect_ok snapshot -c "$CONF" -r "$REPO" --initiator B -v &&
	id=$(head -n 1 "$OUT") &&
	grep -qx "snapshot $id: all 2 agents joined; B records first" "$ERR" &&
	[ "$(grep -c "^snapshot $id: [AB] reported ([12] of 2)$" "$ERR")" -eq 2 ] &&
	[ "$(grep -n "joined" "$ERR" | cut -d: -f1)" -lt "$(grep -n "reported (1 of 2)" "$ERR" | cut -d: -f1)" ]
'

test_expect_success 'a script waits for A to report, sees the message in flight, releases' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	{ cs snapshot -c "$CONF" -r "$REPO" --initiator B -v >snap.out \
	    2>snap.err & } &&
	SNAP_PID=$! && BG_PIDS="$BG_PIDS $SNAP_PID" &&
	wait_for 20 grep -q " A reported (1 of 2)" snap.err &&
	expect_ok status -c "$CONF" --json &&
	json_check "({a[\"agent\"]: a[\"snapshot\"][\"phase\"] for a in d} ==
	    {\"A\": \"reported\", \"B\": \"recording\"})" &&
	expect_ok channel -c "$CONF" release A B &&
	wait "$SNAP_PID" &&
	id=$(cat snap.out) &&
	expect_ok show -r "$REPO" "$id" --sum bal --json &&
	json_check "d[\"sum\"][\"in_flight\"] == 10"
'

test_expect_success 'a coordinator paused past its timeout: the abort names that cause' '
	CUTSNAP_FAULT=coord-copy-delay:5000 expect_error 1 snapshot -c "$CONF" \
	    -r "$REPO" --timeout 1 &&
	err_matches "agent [AB] gave up the snapshot: it was not committed within its 1 s timeout" &&
	err_matches "paused" &&
	! err_matches "lost agent" &&
	expect_ok status -c "$CONF"
'

test_expect_success 'a symlinked data path: start fails saying what to do' '
	stop_cluster &&
	mv A.data real-A.data &&
	ln -s "$TEST_DIR/real-A.data" A.data &&
	expect_error 1 start -c "$CONF" &&
	err_matches "A.data is a symbolic link" &&
	err_matches "give the file.s real path in the config" &&
	expect_ok stop -c "$CONF"
'

test_done
