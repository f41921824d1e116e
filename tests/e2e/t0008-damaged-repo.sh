#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A damaged repository is caught by verify with a line naming the problem,
# and restore refuses it without touching the data files.
. "$(dirname "$0")/lib.sh"

# Small chunks, and a padding value, so that A's recorded file spans
# several chunks and the damage below hits one in the middle.
export CUTSNAP_CHUNK_SIZE=4096

test_expect_success 'setup: a good snapshot with a message in flight, agents stopped' '
	make_config A B &&
	# The blobs are read and damaged here as the chunks themselves.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok put -c "$CONF" A pad "$(printf "%09000d" 0)" &&
	snapshot_in_flight 10 &&
	ID=$SNAP_ID &&
	expect_eq "$(msg_count "$ID")" 1 "messages" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	wait_bal B 65 &&
	take_snapshot --initiator A &&
	ID2=$SNAP_ID &&
	stop_cluster &&
	expect_ok verify -r "$REPO" "$ID" &&
	sql "pragma wal_checkpoint(truncate)" >/dev/null &&
	cp A.data A.saved && cp B.data B.saved &&
	expect_eq "$(chunk_paths "$ID" A | wc -l)" 3 "chunks of A" &&
	SHA_A=$(basename "$(chunk_paths "$ID" A | sed -n 2p)") &&
	GOOD=$TEST_DIR/repo.good && cp -a "$REPO" "$GOOD"
'

# damaged NAME: a fresh copy of the good repository as TEST_DIR/NAME;
# sets R and RB (R's copy of the middle chunk of A's recorded file).
damaged () {
	R=$TEST_DIR/$1
	rm -rf "$R" && cp -a "$GOOD" "$R" &&
	RB=$R/blobs/${SHA_A:0:2}/$SHA_A
}

# verify_fails CODE REGEX: verify of R exits CODE and names the problem.
verify_fails () {
	expect_exit "$1" verify -r "$R" "$ID" || return 1
	if ! cat "$OUT" "$ERR" | grep -Eqi -- "$2"; then
		say "verify output does not match /$2/"
		show_out
		return 1
	fi
}

# restore_refused CODE: restore of R exits CODE; the data files untouched.
restore_refused () {
	expect_exit "$1" restore -r "$R" "$ID" -c "$CONF" || return 1
	grep -q "^cutsnap: " "$ERR" || { say "no cutsnap: line"; show_out; return 1; }
	cmp A.data A.saved && cmp B.data B.saved
}

test_expect_success 'a flipped byte in a chunk: verify 1 naming the chunk and agent; restore refused' '
	damaged flip &&
	flip_byte "$RB" 40 &&
	verify_fails 1 "agent A: chunk 1 \(${SHA_A:0:12}\) sha256 mismatch" &&
	restore_refused 1
'

test_expect_success 'a truncated chunk: verify 1 naming the chunk and its size; restore refused' '
	damaged trunc &&
	truncate -s 20 "$RB" &&
	verify_fails 1 "agent A: chunk 1 \(${SHA_A:0:12}\): size mismatch: expected 4096 bytes, found 20" &&
	restore_refused 1
'

test_expect_success 'a missing chunk: verify 1 saying it is missing; restore refused' '
	damaged missing &&
	rm -f "$RB" &&
	verify_fails 1 "agent A: chunk 1 \(${SHA_A:0:12}\): missing" &&
	restore_refused 1
'

test_expect_success 'a deleted messages row: verify 1 naming the channel; restore refused' '
	damaged nomsg &&
	sql "delete from messages" "$R/manifest.db" &&
	expect_eq "$(sql "select count(*) from messages" "$R/manifest.db")" 0 "rows" &&
	verify_fails 1 "A ?(->|>|→) ?B" &&
	verify_fails 1 "digest" &&
	restore_refused 1
'

test_expect_success 'an edited messages row (amount changed): verify 1; restore refused' '
	damaged editmsg &&
	sql "update messages set data = zeroblob(length(data))" "$R/manifest.db" &&
	verify_fails 1 "A ?(->|>|→) ?B" &&
	restore_refused 1
'

test_expect_success 'an edited channel row (sent 1 -> 0): verify 1; restore refused' '
	damaged editchan &&
	sql "update channels set sent = 0, applied = 0" "$R/manifest.db" &&
	verify_fails 1 "A ?(->|>|→) ?B|digest|channel" &&
	restore_refused 1
'

test_expect_success 'an edited agents row (size of B): verify 1; restore refused' '
	damaged editagent &&
	sql "update agents set size = size + 1 where name = '\''B'\''" "$R/manifest.db" &&
	verify_fails 1 "agent B|digest|size" &&
	restore_refused 1
'

# "The 160": A recorded before the transfer of 5, B after it arrived.  The
# digest notices the edited row; the cut check must notice the mixed
# moments on its own, from the recorded files.
test_expect_success 'mixed moments (B from a later snapshot): verify names channel A->B' '
	damaged mixed &&
	sql "update agents set sha256 = (select sha256 from agents where
	    snapshot_id = $ID2 and name = '\''B'\''), size = (select size from agents
	    where snapshot_id = $ID2 and name = '\''B'\'') where snapshot_id = $ID
	    and name = '\''B'\''" "$R/manifest.db" &&
	sql "delete from agent_chunks where snapshot_id = $ID and agent = '\''B'\'';
	    insert into agent_chunks select $ID, agent, idx, offset, size, sha256
	    from agent_chunks where snapshot_id = $ID2 and agent = '\''B'\''" \
	    "$R/manifest.db" &&
	verify_fails 1 "A ?(->|>|→) ?B" &&
	restore_refused 1
'

test_expect_success 'two damages at once (chunks of A and B): verify names each on its own line' '
	damaged two &&
	flip_byte "$RB" 40 &&
	RBB=$(REPO=$R; chunk_paths "$ID" B | head -n 1) &&
	truncate -s 10 "$RBB" &&
	expect_exit 1 verify -r "$R" "$ID" &&
	cat "$OUT" "$ERR" >both &&
	expect_eq "$(grep -c "agent A" both)" 1 "lines naming agent A" &&
	expect_eq "$(grep -c "agent B" both)" 1 "lines naming agent B" ||
	    { cat both; false; }
'

test_expect_success 'verify --json of a damaged repository: exit 1, valid JSON naming the problem' '
	R=$TEST_DIR/nomsg &&
	expect_exit 1 verify -r "$R" "$ID" --json &&
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT" &&
	grep -q "A->B" "$OUT"
'

test_expect_success 'the other snapshot in a damaged repository still verifies' '
	R=$TEST_DIR/nomsg &&
	expect_ok verify -r "$R" "$ID2"
'

test_expect_success 'garbage bytes over the middle of manifest.db: verify 1 or 2; restore refused' '
	damaged garbage &&
	size=$(stat -c %s "$R/manifest.db") &&
	[ "$size" -gt 8192 ] &&
	head -c $((size - 4096)) /dev/urandom |
	    dd of="$R/manifest.db" bs=4096 seek=1 conv=notrunc 2>/dev/null &&
	verify_fails "[12]" "manifest|malformed|corrupt|integrity|database" &&
	grep -q "^cutsnap: " "$ERR" &&
	restore_refused "[12]"
'

test_expect_success 'a truncated manifest.db: verify 1 or 2; restore refused' '
	damaged truncdb &&
	size=$(stat -c %s "$R/manifest.db") &&
	truncate -s $((size / 2 + 100)) "$R/manifest.db" &&
	verify_fails "[12]" "manifest|malformed|corrupt|integrity|database|missing" &&
	restore_refused "[12]"
'

test_expect_success 'a manifest.db that is not a database: exit 2 (unreadable)' '
	damaged notdb &&
	echo "this is not sqlite" >"$R/manifest.db" &&
	verify_fails 2 "manifest|database" &&
	err_is_one_line &&
	restore_refused 2 &&
	expect_error 2 ls -r "$R"
'

test_expect_success 'an empty manifest.db: not a usable repository, exit 10, no crash' '
	damaged emptydb &&
	: >"$R/manifest.db" &&
	expect_exit 10 verify -r "$R" &&
	err_is_one_line
'

test_expect_success 'the good repository still verifies and restores' '
	R=$GOOD &&
	expect_ok verify -r "$R" "$ID" &&
	expect_ok restore -r "$R" "$ID" -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B"
'

test_done
