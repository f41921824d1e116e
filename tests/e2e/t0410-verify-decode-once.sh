#!/bin/bash
# verify of an encrypted repository decodes (opens and decompresses) each
# chunk once: the task that hashes a chunk hands its plaintext to the
# replay of the file, or the replay reads and hashes it itself; verify
# --json counts the chunks decoded against the chunk rows checked. A
# flipped bit in a sealed chunk (first, middle, last) or in a sealed
# message is still caught on that path, and a good snapshot with a
# message in flight still verifies, sums and restores to its total.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=4096
export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_PASSWORD=decode-once-test
unset CUTSNAP_PASSWORD_FILE

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
ID='' PLAIN=$TEST_DIR/plain

# chunk_rows ID [DISTINCT]: the snapshot's chunk rows (or distinct ones).
chunk_rows () {
	sql "select count(${2:-} sha256) from agent_chunks where snapshot_id = $1"
}
# decoded_once REPO ID: verify REPO ID --json passes and decoded every
# chunk row of the snapshot exactly once.
decoded_once () {
	local n
	REPO=$1 n=$(chunk_rows "$2") &&
	expect_ok verify -r "$1" "$2" --json &&
	json_check "d[\"ok\"] and d[\"chunks\"] == $n and d[\"chunks_decoded\"] == $n"
}
# ge N MIN WHAT: N >= MIN.
ge () { [ "$1" -ge "$2" ] || { say "$3: $1, expected at least $2"; return 1; }; }
# flip_msg ID: flip a byte of the snapshot's sealed message (one row).
flip_msg () {
	sql "update messages set data = substr(data, 1, 20) ||
	    case when substr(data, 21, 1) = x'00' then x'01' else x'00' end ||
	    substr(data, 22) where snapshot_id = $1"
}

test_expect_success 'setup: A spans hundreds of chunks (a 2 MiB value among them), a message in flight A->B' '
	make_config A B C &&
	start_cluster &&
	set_balances A=1000 B=1000 C=1000 &&
	put_random A 40 && put_random B 20 &&
	head -c $((2 << 20)) /dev/urandom | cs put -c "$CONF" A big - &&
	put_random A 10 &&
	expect_ok init -r "$REPO" --encrypt &&
	expect_ok init -r "$PLAIN" --compression zstd &&
	snapshot_in_flight 250 &&
	ID=$SNAP_ID &&
	expect_ok snapshot -c "$CONF" -r "$PLAIN" &&
	expect_eq "$(sql "select count(*) from messages where snapshot_id = $ID")" 1 "recorded messages" &&
	ge "$(chunk_rows "$ID")" 500 "chunk rows" &&
	expect_eq "$(chunk_rows "$ID" distinct)" "$(chunk_rows "$ID")" "distinct chunks" &&
	stop_cluster
'

test_expect_success 'verify --json: every chunk of the encrypted snapshot decoded once, for its hash and the replay' '
	decoded_once "$REPO" "$ID" &&
	json_check "d[\"msgs\"] == 1 and d[\"problems\"] == [] and d[\"agents\"] == 3"
'

test_expect_success 'a zstd repository (not encrypted): every chunk decoded once too' '
	decoded_once "$PLAIN" 1 &&
	REPO=$TEST_DIR/repo
'

test_expect_success 'the verified cut keeps the total: show --sum and a restore both give 3000' '
	expect_eq "$(cut_total "$REPO" "$ID")" 3000 "total of the cut" &&
	restore_each 3000 "$REPO:$ID" &&
	expect_eq "$(dump_val A.data bal)" 750 "A after restore" &&
	expect_eq "$(dump_val B.data bal)" 1250 "B after restore (message replayed)"
'

test_expect_success 'flipped bits in sealed chunks 0, middle and last of A: verify names each one' '
	mapfile -t bl < <(chunk_paths "$ID" A) &&
	n=${#bl[@]} && ge "$n" 500 "chunks of A" &&
	mkdir -p saved && picked=0 &&
	for k in 0 $((n / 2)) $((n - 1)); do
		cp "${bl[$k]}" saved/ &&
		flip_byte "${bl[$k]}" $(($(stat -c %s "${bl[$k]}") / 2)) &&
		picked=$((picked + 1)) || return 1
	done &&
	expect_eq "$picked" 3 "chunks flipped" &&
	expect_exit 1 verify -r "$REPO" "$ID" --json &&
	json_check "not d[\"ok\"] and d[\"chunks\"] == $(chunk_rows "$ID")" &&
	for k in 0 $((n / 2)) $((n - 1)); do
		hex=$(basename "${bl[$k]}") &&
		json_check "any(\"agent A: chunk $k (${hex:0:12}) damaged: its object no longer decodes\" in p for p in d[\"problems\"])" ||
		return 1
	done &&
	expect_exit 1 restore -r "$REPO" "$ID" -c "$CONF"
'

test_expect_success 'the good blobs put back: verify passes again, each chunk decoded once' '
	for f in saved/*; do
		hex=$(basename "$f") &&
		cp "$f" "$REPO/blobs/${hex:0:2}/$hex" || return 1
	done &&
	expect_eq "$(find saved -type f | wc -l)" 3 "blobs put back" &&
	decoded_once "$REPO" "$ID"
'

test_expect_success 'a flipped bit in the sealed message: verify names it, the chunks still decoded once' '
	saved=$(sql "select hex(data) from messages where snapshot_id = $ID") &&
	[ -n "$saved" ] &&
	flip_msg "$ID" &&
	expect_exit 1 verify -r "$REPO" "$ID" --json &&
	json_check "not d[\"ok\"] and d[\"chunks_decoded\"] == d[\"chunks\"] == $(chunk_rows "$ID")" &&
	json_check "any(\"channel A->B: message seq 1 damaged: its sealed payload does not open\" in p for p in d[\"problems\"])" &&
	sql "update messages set data = x'"'"'$saved'"'"' where snapshot_id = $ID" &&
	decoded_once "$REPO" "$ID"
'

test_done
