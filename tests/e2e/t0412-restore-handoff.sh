#!/bin/bash
# Restore replays each file beside the chunk tasks, from the chunks they
# check, in memory (the handoff verify uses), and whoever checks a chunk
# writes it to the temp file from the buffer it checked it in: a chunk
# task, or the replay itself, which checks a later free chunk when the
# one it needs is still busy. CUTSNAP_FAULT=verify-slow-chunks makes
# every chunk check sleep first, so that the replay surely checks chunks
# itself. The restored files must be the recorded bytes (plus the
# replay's records for the message in flight, applied once); a restore
# killed after some chunks were written changes nothing and the next
# one finishes the job (with the same bytes, the message applied once);
# a damaged chunk near the end of A refuses the
# restore with no file renamed into place and no temp file left. The
# chunks go to the temp files through a second, O_DIRECT descriptor, the
# last, partial chunk of a file (4096-byte chunks here) and the replay's
# records buffered: the byte comparisons cover both.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=4096
unset CUTSNAP_FAULT

# ge N MIN WHAT: N >= MIN.
ge () { [ "$1" -ge "$2" ] || { say "$3: $1, expected at least $2"; return 1; }; }
# slow ARGS: expect_exit ARGS with every chunk check slowed down by 3 ms.
slow () { CUTSNAP_FAULT=verify-slow-chunks:3 expect_exit "$@"; }
# is_prefix SIZE FILE OF: the first SIZE bytes of OF are FILE, whole.
is_prefix () {
	[ "$(stat -c %s "$2")" -ge "$1" ] &&
	    head -c "$1" "$3" | cmp - <(head -c "$1" "$2")
}
as_live () { cmp A.data A.live && cmp B.data B.live; }
as_first () { cmp A.data A.first && cmp B.data B.first; }
put_live () { cp A.live A.data && cp B.live B.data; }
nchunks () { sql "select count(*) from agent_chunks where snapshot_id = $ID and agent = '$1'" "${2:-$REPO}/manifest.db"; }

ID='' SA='' SB=''

test_expect_success 'setup: A spans ~150 chunks; a snapshot with 10 in flight on A->B; then more money moves' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	put_random A 200 && put_random B 5 &&
	snapshot_in_flight 10 &&
	ID=$SNAP_ID &&
	expect_eq "$(msg_count "$ID" A B)" 1 "messages on A->B" &&
	wait_bal B 60 &&
	ge "$(nchunks A)" 140 "chunks of A" &&
	expect_ok transfer -c "$CONF" A:bal B:bal 25 &&
	wait_bal B 85 &&
	stop_cluster &&
	SA=$(agent_size "$ID" A) && SB=$(agent_size "$ID" B) &&
	cp A.data A.live && cp B.data B.live
'

test_expect_success 'slow chunk checks: A restored to its recorded bytes, B to its own plus the message, applied once' '
	slow 0 restore -r "$REPO" "$ID" -c "$CONF" &&
	expect_eq "$(stat -c %s A.data)" "$SA" "size of A" &&
	is_prefix "$SA" A.data A.live &&
	is_prefix "$SB" B.data B.live &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 90/60 "A/B" &&
	no_temps &&
	cp A.data A.first && cp B.data B.first
'

test_expect_success 'restore again, slow: the same bytes, the message not applied twice' '
	slow 0 restore -r "$REPO" "$ID" -c "$CONF" &&
	as_first &&
	expect_eq "$(dump_total bal)" 150 "total" &&
	no_temps
'

test_expect_success 'killed after 1, 70 and 140 chunks written, slow: files as before each time; the next restore gives the same bytes' '
	n=0 &&
	for k in 1 70 140; do
		put_live &&
		CUTSNAP_FAULT=verify-slow-chunks:3,restore-kill-after-chunks:$k \
		    expect_exit 99 restore -r "$REPO" "$ID" -c "$CONF" &&
		as_live &&
		slow 0 restore -r "$REPO" "$ID" -c "$CONF" &&
		as_first && no_temps &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 3 "kills checked"
'

test_expect_success 'a flipped byte in the last but one chunk of A: refused, named, nothing renamed, no temp file, the old files intact' '
	put_live && rm -rf bad && cp -a "$REPO" bad &&
	k=$(( $(nchunks A bad) - 2 )) &&
	sha=$(sql "select lower(sha256) from agent_chunks where snapshot_id = $ID and agent = '\''A'\'' and idx = $k" bad/manifest.db) &&
	flip_byte "bad/blobs/${sha:0:2}/$sha" 100 &&
	slow 1 restore -r bad "$ID" -c "$CONF" &&
	err_matches "failed verification; nothing was restored" &&
	grep -q "agent A: chunk $k (${sha:0:12})" "$OUT" &&
	as_live && no_temps
'

test_done
