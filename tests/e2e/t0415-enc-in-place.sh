#!/bin/bash
# An encrypted repository's chunks without extra copies: a snapshot reads
# each chunk straight to its place in the object it seals (a chunk stored
# as it is, random data, is never copied; zstd's output goes through a
# scratch buffer), and verify and restore open a sealed chunk stored as
# it is straight into its destination, a zstd one in place. Both codecs
# in one file: the blobs' sizes show which chunks were stored and which
# compressed; every value comes back exactly; a flipped bit in either
# kind is caught by verify and refused by restore, which writes nothing.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_CHUNK_SIZE=16384
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE
# A full chunk stored as it is, sealed: "CSE1", nonce (12), the object
# header (16) and the chunk, tag (16).
STORED=$((16384 + 4 + 12 + 16 + 16))
ID='' HEX=''

files_same () { cmp A.data A.before && cmp B.data B.before; }
save_files () { cp A.data A.before && cp B.data B.before; }
# values_back: every value put reads back as it did before the snapshot
# (get's output, the value and a newline; counts them).
values_back () {
	local i n=0
	for i in 1 2 3; do
		expect_ok get -c "$CONF" A "r$i" && cmp "$OUT" "r$i.want" &&
		expect_ok get -c "$CONF" A "t$i" && cmp "$OUT" "t$i.want" ||
		    return 1
		n=$((n + 2))
	done
	expect_eq "$n" 6 "values compared"
}
# blobs_of ID SIZE-TEST: how many of A's chunk blobs in snapshot ID have a
# size passing the awk test on s (e.g. "s == 16432").
blobs_of () {
	local p
	for p in $(chunk_paths "$1" A); do stat -c %s "$p"; done |
	    awk "{ s = \$1 } $2 { n++ } END { print n + 0 }"
}
# flip_one ID SIZE-TEST: invert a byte in the middle of the first of A's
# blobs passing SIZE-TEST; prints its name.
flip_one () {
	local p s
	for p in $(chunk_paths "$1" A); do
		s=$(stat -c %s "$p")
		if awk -v s="$s" "BEGIN { exit !($2) }"; then
			flip_byte "$p" $((s / 2)) || return 1
			basename "$p"
			return 0
		fi
	done
	say "no blob of A passes $2"
	return 1
}

test_expect_success 'random and text values in one file, encrypted' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	for i in 1 2 3; do
		head -c 40000 /dev/urandom >"r$i.val" &&
		awk -v k="$i" "BEGIN { for (n = 0; n < 1000; n++)
		    printf \"account %07d branch %03d balance %09d\\n\", n,
		    (n * 7 + k) % 997, (n * 7919 + k) % 1000000000 }" |
		    head -c 40000 >"t$i.val" &&
		cs put -c "$CONF" A "r$i" - <"r$i.val" &&
		cs put -c "$CONF" A "t$i" - <"t$i.val" &&
		expect_ok get -c "$CONF" A "r$i" && cp "$OUT" "r$i.want" &&
		cmp -n 40000 "r$i.want" "r$i.val" &&
		expect_ok get -c "$CONF" A "t$i" && cp "$OUT" "t$i.want" &&
		cmp -n 40000 "t$i.want" "t$i.val" || return 1
	done &&
	take_snapshot --password-file pw --json &&
	ID=$SNAP_ID &&
	json_check "d[\"chunks\"][\"copied\"] >= 14"
'

test_expect_success 'both kinds of chunk: some stored as they are, some compressed' '
	stored=$(blobs_of "$ID" "s == $STORED") &&
	packed=$(blobs_of "$ID" "s < 16384 / 2") &&
	{ [ "$stored" -ge 3 ] || { say "only $stored chunks stored as they are"; false; }; } &&
	{ [ "$packed" -ge 3 ] || { say "only $packed chunks compressed"; false; }; }
'

test_expect_success 'verify opens and checks every chunk' '
	expect_ok verify -r "$REPO" "$ID" --password-file pw --json &&
	json_check "d[\"ok\"] is True and d[\"chunks\"] == d[\"chunks_decoded\"] and d[\"chunks\"] >= 14"
'

test_expect_success 'restore gives every value back exactly' '
	stop_cluster &&
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --password-file pw &&
	start_cluster &&
	values_back
'

# caught SIZE-TEST: a new snapshot, verified; a byte flipped in one of A's
# blobs passing SIZE-TEST: verify names it, restore refuses and leaves
# the files as they were.
caught () {
	take_snapshot --password-file pw &&
	ID=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$ID" --password-file pw &&
	HEX=$(flip_one "$ID" "$1") &&
	stop_cluster && save_files &&
	expect_exit 1 verify -r "$REPO" "$ID" --password-file pw &&
	grep -q "(${HEX:0:12}) damaged: its object no longer decodes" "$OUT" &&
	expect_exit 1 restore -r "$REPO" "$ID" -c "$CONF" --password-file pw &&
	files_same
}

test_expect_success 'a flipped bit in a chunk stored as it is: verify names it; restore refuses, files untouched' '
	caught "s == $STORED"
'

test_expect_success 'a flipped bit in a compressed chunk: verify names it; restore refuses, files untouched' '
	start_cluster &&
	caught "s < 16384 / 2"
'

test_expect_success 'healed: a new snapshot copies them again and restores exactly' '
	start_cluster &&
	take_snapshot --password-file pw &&
	ID=$SNAP_ID &&
	expect_ok verify -r "$REPO" "$ID" --password-file pw &&
	stop_cluster &&
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --password-file pw &&
	start_cluster &&
	values_back
'

test_done
