#!/bin/bash
# verify of an encrypted repository decodes on every core: while the
# chunk the replay of a file needs is still being decoded by a chunk
# task, the replay decodes a later free chunk itself instead of waiting
# (verify --json chunks_decoded_ahead). CUTSNAP_FAULT=verify-slow-chunks
# makes every chunk check sleep first, so that the replay surely meets a
# busy chunk. Each chunk is still decoded once, flipped bits in chunks
# spread over the file are each named, and the cut keeps its total.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=4096
export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_PASSWORD=replay-ahead-test
unset CUTSNAP_PASSWORD_FILE CUTSNAP_FAULT

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
ID='' ROWS=''

# ge N MIN WHAT: N >= MIN.
ge () { [ "$1" -ge "$2" ] || { say "$3: $1, expected at least $2"; return 1; }; }
# slow_verify ARGS: verify with every chunk check slowed down by 3 ms.
slow_verify () { CUTSNAP_FAULT=verify-slow-chunks:3 expect_exit "$@"; }

test_expect_success 'setup: an encrypted snapshot, A spanning a few hundred chunks' '
	make_config A B C &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	put_random A 200 && put_random B 10 &&
	expect_ok transfer -c "$CONF" A:bal C:bal 125 &&
	expect_ok init -r "$REPO" --encrypt &&
	take_snapshot &&
	ID=$SNAP_ID &&
	ROWS=$(sql "select count(*) from agent_chunks where snapshot_id = $ID") &&
	ge "$ROWS" 150 "chunk rows" &&
	expect_eq "$(sql "select count(distinct sha256) from agent_chunks where snapshot_id = $ID")" "$ROWS" "distinct chunks" &&
	stop_cluster
'

test_expect_success 'slow chunk checks: the replay decodes chunks ahead itself; each chunk still decoded once' '
	slow_verify 0 verify -r "$REPO" "$ID" --json &&
	json_check "d[\"ok\"] and d[\"chunks\"] == $ROWS and d[\"chunks_decoded\"] == $ROWS" &&
	json_check "1 <= d[\"chunks_decoded_ahead\"] < $ROWS"
'

# The replay stops at the first damaged chunk (the tasks check the rest),
# so how many it decoded ahead before that is left open here.
test_expect_success 'flipped bits in every 16th chunk of A: each one named, whoever decoded it' '
	mapfile -t bl < <(chunk_paths "$ID" A) &&
	n=${#bl[@]} && ge "$n" 140 "chunks of A" &&
	mkdir -p saved && picked=() &&
	for ((k = 3; k < n; k += 16)); do
		cp "${bl[$k]}" saved/ &&
		flip_byte "${bl[$k]}" $(($(stat -c %s "${bl[$k]}") / 2)) &&
		picked+=("$k") || return 1
	done &&
	ge "${#picked[@]}" 9 "chunks flipped" &&
	slow_verify 1 verify -r "$REPO" "$ID" --json &&
	json_check "not d[\"ok\"] and d[\"chunks_decoded\"] == d[\"chunks\"] == $ROWS" &&
	named=0 &&
	for k in "${picked[@]}"; do
		hex=$(basename "${bl[$k]}") &&
		json_check "any(\"agent A: chunk $k (${hex:0:12}) damaged: its object no longer decodes\" in p for p in d[\"problems\"])" &&
		named=$((named + 1)) || return 1
	done &&
	expect_eq "$named" "${#picked[@]}" "damaged chunks named" &&
	json_check "len([p for p in d[\"problems\"] if \"damaged: its object no longer decodes\" in p]) == ${#picked[@]}"
'

test_expect_success 'the good blobs put back: verify passes, slowed or not; the cut keeps its total' '
	put=0 &&
	for f in saved/*; do
		hex=$(basename "$f") &&
		cp "$f" "$REPO/blobs/${hex:0:2}/$hex" &&
		put=$((put + 1)) || return 1
	done &&
	ge "$put" 9 "blobs put back" &&
	slow_verify 0 verify -r "$REPO" "$ID" --json &&
	json_check "d[\"ok\"] and d[\"chunks_decoded\"] == $ROWS and d[\"chunks_decoded_ahead\"] >= 1" &&
	expect_ok verify -r "$REPO" "$ID" --json &&
	json_check "d[\"ok\"] and d[\"problems\"] == [] and d[\"chunks_decoded\"] == $ROWS" &&
	expect_eq "$(cut_total "$REPO" "$ID")" 3000 "total of the cut" &&
	restore_each 3000 "$REPO:$ID"
'

test_done
