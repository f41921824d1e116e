#!/bin/bash
# Restore in one pass: each chunk is read, checked and written to its
# file's temp file together, and nothing is renamed into place before
# every chunk of the snapshot verified. A restore killed in the middle of
# that pass, or one that meets a bad chunk there, leaves every data file
# as it was and no temp file; the next restore finishes the job with the
# same bytes. Raw, compressed and encrypted repositories alike.
. "$(dirname "$0")/lib.sh"

# Small chunks: each file spans dozens of them.
export CUTSNAP_CHUNK_SIZE=4096
export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_PASSWORD=one-pass-test
unset CUTSNAP_PASSWORD_FILE

RAW=$TEST_DIR/raw
ENC=$TEST_DIR/enc

# fill AGENT N: N values of 3000 random bytes (stored raw by zstd) and N
# of text (compressed), keys rI and tI.
fill () {
	local i
	for i in $(seq 1 "$2"); do
		head -c 3000 /dev/urandom | cs put -c "$CONF" "$1" "r$i" - ||
		    return 1
		yes "$1 line $i of text" | head -c 3000 |
		    cs put -c "$CONF" "$1" "t$i" - || return 1
	done
}
# as_before: both data files are the ones from before any restore.
as_before () { cmp A.data A.old && cmp B.data B.old; }
# restored: both data files are the ones the first restore wrote.
restored () { cmp A.data A.new && cmp B.data B.new; }
# ge N MIN WHAT: N >= MIN.
ge () { [ "$1" -ge "$2" ] || { say "$3: $1, expected at least $2"; return 1; }; }
# put_back: the data files from before any restore.
put_back () { cp A.old A.data && cp B.old B.data; }
# nchunks REPO AGENT: the number of chunks of the agent's file in
# snapshot 1 of REPO.
nchunks () { sql "select count(*) from agent_chunks where snapshot_id = 1 and agent = '$2'" "$1/manifest.db"; }

test_expect_success 'setup: A and B span dozens of chunks; one snapshot into a zstd, a raw and an encrypted repository' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	fill A 12 && fill B 12 &&
	expect_ok init -r "$RAW" --compression none &&
	expect_ok init -r "$ENC" --encrypt &&
	take_snapshot &&
	expect_eq "$SNAP_ID" 1 "snapshot id" &&
	expect_ok snapshot -c "$CONF" -r "$RAW" &&
	expect_ok snapshot -c "$CONF" -r "$ENC" &&
	na=$(nchunks "$REPO" A) && nb=$(nchunks "$REPO" B) &&
	ge "$na" 10 "chunks of A" && ge "$nb" 10 "chunks of B" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 30 &&
	cs put -c "$CONF" A after snapshot &&
	stop_cluster &&
	cp A.data A.old && cp B.data B.old
'

test_expect_success 'restore: the recorded balances, no temp file; put the old files back' '
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 100/50 "A/B" &&
	! dump_val A.data after &&
	no_temps &&
	cp A.data A.new && cp B.data B.new &&
	put_back && as_before
'

# kill_after REPO N: a restore from REPO that exits (99) once N chunks
# were written to its temp files.
kill_after () {
	CUTSNAP_FAULT=restore-kill-after-chunks:$2 \
	    expect_exit 99 restore -r "$1" 1 -c "$CONF"
}

test_expect_success 'killed after the first chunk, in B, and before the last: both files as before; the next restore finishes' '
	put_back &&
	total=$(( $(nchunks "$REPO" A) + $(nchunks "$REPO" B) )) &&
	n=0 &&
	for k in 1 $(( $(nchunks "$REPO" A) + 2 )) $((total - 1)); do
		kill_after "$REPO" "$k" &&
		as_before &&
		# The kill landed inside the pass: its temp files are there.
		ge "$(find . -maxdepth 1 -name "*.data.tmp.*" | wc -l)" 1 "temp files after the kill" &&
		expect_ok restore -r "$REPO" 1 -c "$CONF" &&
		restored && no_temps &&
		put_back &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 3 "kills checked"
'

test_expect_success 'a flipped byte in a chunk of B: restore refuses, names it, renames nothing, leaves no temp file' '
	put_back && rm -rf bad && cp -a "$REPO" bad &&
	mid=$(( $(nchunks bad B) / 2 )) &&
	sha=$(sql "select lower(sha256) from agent_chunks where snapshot_id = 1 and agent = '\''B'\'' and idx = $mid" bad/manifest.db) &&
	flip_byte "bad/blobs/${sha:0:2}/$sha" 100 &&
	expect_error 1 restore -r bad 1 -c "$CONF" &&
	err_matches "failed verification; nothing was restored" &&
	grep -q "agent B: chunk $mid (${sha:0:12})" "$OUT" &&
	as_before && no_temps
'

test_expect_success 'a missing chunk of A: restore refuses, names it missing, renames nothing, leaves no temp file' '
	put_back && rm -rf bad && cp -a "$REPO" bad &&
	last=$(( $(nchunks bad A) - 1 )) &&
	sha=$(sql "select lower(sha256) from agent_chunks where snapshot_id = 1 and agent = '\''A'\'' and idx = $last" bad/manifest.db) &&
	rm "bad/blobs/${sha:0:2}/$sha" &&
	expect_error 1 verify -r bad 1 &&
	grep -q "agent A: chunk $last (${sha:0:12}): missing" "$OUT" &&
	expect_error 1 restore -r bad 1 -c "$CONF" &&
	err_matches "failed verification; nothing was restored" &&
	grep -q "agent A: chunk $last (${sha:0:12}): missing" "$OUT" &&
	as_before && no_temps
'

test_expect_success 'raw and encrypted repositories: killed mid-pass, files as before; then the same balances, no temp file' '
	put_back && n=0 &&
	for r in "$RAW" "$ENC"; do
		kill_after "$r" 3 &&
		as_before &&
		expect_ok restore -r "$r" 1 -c "$CONF" &&
		expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 100/50 "A/B from $r" &&
		expect_eq "$(dump_val A.data r7 | sha256sum)" "$(dump_val A.new r7 | sha256sum)" "value r7 of A from $r" &&
		! dump_val A.data after &&
		no_temps &&
		put_back &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 2 "repositories checked"
'

test_expect_success 'restore --agent B killed mid-pass: no temp file of A is made, both files as before; then only B is restored' '
	put_back &&
	CUTSNAP_FAULT=restore-kill-after-chunks:2 \
	    expect_exit 99 restore -r "$REPO" 1 -c "$CONF" --agent B &&
	as_before &&
	expect_eq "$(find . -maxdepth 1 -name "A.data.tmp.*" | wc -l)" 0 "temp files of A" &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" --agent B &&
	cmp A.data A.old && restored_alone B.data B.new 1 && no_temps &&
	put_back
'

test_done
