#!/bin/bash
# The seed example over a FIFO channel: A=100, B=50, a transfer of 10 from
# A to B still in flight when the snapshot starts at B.  The cut records
# A=90, B=50 and the 10 on A->B; restore gives A=90, B=60: 150.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A=100, B=50, running' '
	make_config A B &&
	# The blobs are read and damaged here as the chunks themselves.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'hold A->B; transfer 10: debited at A, not yet at B' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	expect_eq "$(bal A)" 90 "A bal" &&
	expect_eq "$(bal B)" 50 "B bal"
'

test_expect_success 'snapshot from B stays pending while A->B is held' '
	snapshot_bg --initiator B &&
	wait_recorded B &&
	snapshot_running &&
	expect_eq "$(bal B)" 50 "B bal while held"
'

test_expect_success 'release A->B: the message arrives, the snapshot completes' '
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	wait_bal B 60 &&
	expect_eq "$(total)" 150 "live total"
'

test_expect_success 'snapshot printed its id; ls lists it as complete' '
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d if s[\"id\"] == $SNAP_ID] == [\"complete\"]" &&
	expect_eq "$(snap_status "$SNAP_ID")" complete "manifest status"
'

test_expect_success 'verify: the newest and the explicit id exit 0' '
	expect_ok verify -r "$REPO" &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_expect_success 'verify --json and ls --json print JSON' '
	expect_ok verify -r "$REPO" "$SNAP_ID" --json &&
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT" &&
	expect_ok ls -r "$REPO" --json &&
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT"
'

test_expect_success 'ls gives the snapshot'\''s size (sum of the recorded files) and message count' '
	expect_ok ls -r "$REPO" --json &&
	bytes=$(sql "select sum(size) from agents where snapshot_id = $SNAP_ID") &&
	[ "$bytes" -gt 0 ] &&
	json_check "[(s[\"bytes\"], s[\"msgs\"]) for s in d if s[\"id\"] == $SNAP_ID] == [($bytes, 1)]"
'

test_expect_success 'the manifest holds exactly one message, on A->B, seq 1' '
	expect_eq "$(sql "select count(*) from messages")" 1 "messages" &&
	expect_eq "$(msg_count "$SNAP_ID" A B)" 1 "messages on A->B" &&
	expect_eq "$(sql "select src, dst, seq from messages")" "A|B|1" "message" &&
	messages_sha_ok "$SNAP_ID"
'

test_expect_success 'the channel rows: A->B applied 0 sent 1, B->A empty' '
	expect_eq "$(chan_row "$SNAP_ID" A B)" "0|1" "A->B" &&
	expect_eq "$(chan_row "$SNAP_ID" B A)" "0|0" "B->A"
'

test_expect_success 'the consistent cut: recorded A says 90, recorded B says 50' '
	expect_eq "$(blob_val "$SNAP_ID" A bal)" 90 "recorded A" &&
	expect_eq "$(blob_val "$SNAP_ID" B bal)" 50 "recorded B"
'

test_expect_success 'the recorded files have their size and SHA-256; each chunk is named by its SHA-256' '
	for n in A B; do
		p=$(blob_path "$SNAP_ID" $n) || return 1
		expect_eq "$(stat -c %s "$p")" "$(agent_size "$SNAP_ID" $n)" \
		    "size of $n" || return 1
		expect_eq "$(sha256sum "$p" | cut -d" " -f1)" \
		    "$(sql "select sha256 from agents where snapshot_id = $SNAP_ID and name = '\''$n'\''")" \
		    "sha256 of $n" || return 1
		for c in $(chunk_paths "$SNAP_ID" $n); do
			expect_eq "$(sha256sum "$c" | cut -d" " -f1)" \
			    "$(basename "$c")" "chunk of $n" || return 1
		done
	done
'

test_expect_success 'stop, restore: A=90, B=60, total 150' '
	stop_cluster &&
	expect_ok restore -r "$REPO" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)" 90 "restored A" &&
	expect_eq "$(dump_val B.data bal)" 60 "restored B" &&
	expect_eq "$(dump_total bal)" 150 "restored total"
'

test_expect_success 'restored from scratch: data files removed first, same result' '
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)" 90 "restored A" &&
	expect_eq "$(dump_val B.data bal)" 60 "restored B"
'

test_expect_success 'agents carry on from the restored cut: no message applied twice' '
	start_cluster &&
	expect_eq "$(bal A)" 90 "A" &&
	expect_eq "$(bal B)" 60 "B" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 1 &&
	wait_bal B 61 &&
	expect_eq "$(total)" 150 "total" &&
	stop_cluster
'

test_done
