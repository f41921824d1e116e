#!/bin/bash
# verify and restore read each chunk twice: once in its hash task, once in
# the streamed replay of its file. The blobs they read stay in the page
# cache (the second read finds them there, not on the disk); a snapshot's
# recheck of reused blobs (a scrub) still drops what it read. A damaged
# chunk is caught the same way after a verify that left the blobs cached
# (a byte changed through the cache or on the disk alike).
# Encrypted and zstd repositories (their objects are decoded, not mapped).
. "$(dirname "$0")/lib.sh"

export CUTSNAP_CHUNK_SIZE=4096
export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_PASSWORD=verify-cache-test
unset CUTSNAP_PASSWORD_FILE

ENC=$TEST_DIR/enc

# fill AGENT N: N values of 3000 random bytes and N of text.
fill () {
	local i
	for i in $(seq 1 "$2"); do
		head -c 3000 /dev/urandom | cs put -c "$CONF" "$1" "r$i" - ||
		    return 1
		yes "$1 line $i of text" | head -c 3000 |
		    cs put -c "$CONF" "$1" "t$i" - || return 1
	done
}
# blobs REPO: the repository's blob files, one a line.
blobs () { find "$1/blobs" -type f | sort; }
# uncache FILE...: drop the files' pages from the page cache.
uncache () {
	local f
	for f in "$@"; do
		dd if="$f" iflag=nocache count=0 status=none || return 1
	done
}
# resident FILE...: how many of the files have every page in the page
# cache, then how many have none, as "ALL NONE".
resident () {
	fincore --json --bytes "$@" | python3 -c 'import json, sys
rows = json.load(sys.stdin)["fincore"]
print(sum(1 for r in rows if int(r["res"]) >= int(r["size"])),
      sum(1 for r in rows if int(r["res"]) == 0))'
}
# ge N MIN WHAT: N >= MIN.
ge () { [ "$1" -ge "$2" ] || { say "$3: $1, expected at least $2"; return 1; }; }

test_expect_success 'setup: A and B span dozens of chunks; one snapshot into a zstd and an encrypted repository' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	fill A 12 && fill B 12 &&
	expect_ok init -r "$ENC" --encrypt &&
	take_snapshot &&
	expect_ok snapshot -c "$CONF" -r "$ENC" &&
	stop_cluster &&
	cp A.data A.old && cp B.data B.old &&
	ge "$(blobs "$REPO" | wc -l)" 20 "blobs in the zstd repository" &&
	ge "$(blobs "$ENC" | wc -l)" 20 "blobs in the encrypted repository"
'

test_expect_success 'verify reads every blob and leaves each one in the page cache' '
	n=0 &&
	for r in "$REPO" "$ENC"; do
		mapfile -t bl < <(blobs "$r") &&
		uncache "${bl[@]}" &&
		expect_eq "$(resident "${bl[@]}")" "0 ${#bl[@]}" "blobs of $r cached before verify (all, none)" &&
		expect_ok verify -r "$r" 1 &&
		expect_eq "$(resident "${bl[@]}")" "${#bl[@]} 0" "blobs of $r cached after verify (all, none)" &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 2 "repositories checked"
'

test_expect_success 'a snapshot that rechecks every reused blob drops each one it read back' '
	mapfile -t bl < <(blobs "$ENC") &&
	expect_ok verify -r "$ENC" 1 &&
	expect_eq "$(resident "${bl[@]}")" "${#bl[@]} 0" "blobs cached after verify (all, none)" &&
	start_cluster &&
	expect_ok snapshot -c "$CONF" -r "$ENC" --recheck-age 0 &&
	stop_cluster &&
	none=$(resident "${bl[@]}" | cut -d" " -f2) &&
	ge "$none" $(( ${#bl[@]} - 2 )) "old blobs with no page cached (all but the two files'"'"' last chunks, replaced)"
'

test_expect_success 'after a verify left the blobs cached, a flipped byte is still caught: verify names it, restore refuses, files as before' '
	n=0 &&
	for r in "$REPO" "$ENC"; do
		rm -rf bad && cp -a "$r" bad &&
		expect_ok verify -r bad 1 &&
		mapfile -t bl < <(blobs bad) &&
		b=${bl[$(( ${#bl[@]} / 2 ))]} && hex=$(basename "$b") &&
		flip_byte "$b" $(( $(stat -c %s "$b") / 2 )) &&
		expect_exit 1 verify -r bad 1 &&
		grep -q "^problem: snapshot 1: agent [AB]: chunk [0-9]* (${hex:0:12}) \(damaged\|sha256 mismatch\): " "$OUT" &&
		expect_exit 1 restore -r bad 1 -c "$CONF" &&
		err_matches "failed verification; nothing was restored" &&
		cmp A.data A.old && cmp B.data B.old &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 2 "repositories checked"
'

test_done
