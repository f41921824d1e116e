#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A repository on an object store needs no local disk of the snapshot's
# size. A snapshot hands each chunk object to the upload from memory and
# keeps none in its cache; show, verify and restore read the objects
# straight from the bucket into their workers' buffers instead of
# downloading the snapshot into a temporary directory first. Here every
# command runs with its cache and TMPDIR on a tmpfs of 64 MiB of its own
# (the bound the design sets beyond the data files) while a snapshot of
# 256 MiB is taken, verified and restored: a copy of the snapshot on it
# would fail with "No space left on device".
. "$(dirname "$0")/lib.sh"
test_require S3 ROOT EXPENSIVE
. "$_lib_dir/lib-s3.sh"

SMALL=$TEST_DIR/small
mkdir -p "$SMALL"
MIB=1048576

# small CMD ARGS...: cutsnap CMD ARGS in a private mount namespace where
# SMALL is a new 64 MiB tmpfs holding the cache and TMPDIR.
small () {
	unshare --mount --propagation private /bin/sh -c '
	    mount -t tmpfs -o size=64m,mode=0700 none "$1" &&
	    mkdir "$1/cache" "$1/tmp" &&
	    CUTSNAP_CACHE_DIR=$1/cache TMPDIR=$1/tmp && shift &&
	    export CUTSNAP_CACHE_DIR TMPDIR && exec "$@"' \
	    sh "$SMALL" timeout -k 5 600 "$CUTSNAP" "$@"
}
# expect_small CMD ARGS...: small, output in OUT and ERR, exit 0.
expect_small () {
	small "$@" >"$OUT" 2>"$ERR" || { say "cutsnap $1 failed:"; sed 's/^/# /' "$ERR"; return 1; }
}

test_expect_success 'setup: agent A holds 256 MiB of random values (16 of 16 MiB)' '
	make_config A B && start_cluster &&
	set_balances A=100 B=50 &&
	for i in $(seq 1 16); do
		head -c $((16 * MIB)) /dev/urandom >v.bin &&
		cs put -c "$CONF" A "v$i" - <v.bin >/dev/null &&
		cs get -c "$CONF" A "v$i" | sha256sum >>want.sums || return 1
	done &&
	expect_eq "$(sort -u want.sums | wc -l)" 16 "distinct values" &&
	expect_eq "$(wc -l <want.sums)" 16 "values written"
'

test_expect_success 'the snapshot uploads 256 MiB with its cache on 64 MiB' '
	expect_small snapshot -c "$CONF" -r "$REPO_URL" -v --json &&
	S1=$(_parse_id "$OUT") &&
	json_check "d[\"status\"] == \"complete\"" &&
	UP=$(sed -n "s/^s3: uploaded [0-9]* blobs (\([0-9]*\) bytes).*/\1/p" "$ERR") &&
	say "uploaded $UP bytes" &&
	[ "${UP:-0}" -ge $((256 * MIB)) ]
'

test_expect_success 'show reads only what it needs, verify reads every chunk: both with TMPDIR on 64 MiB' '
	expect_small show -r "$REPO_URL" "$S1" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == 150" &&
	expect_small verify -r "$REPO_URL" "$S1" --json -v &&
	json_check "d[\"ok\"] and d[\"snapshot\"] == $S1" &&
	GOT=$(sed -n "s/^s3: read [0-9]* objects (\([0-9]*\) bytes).*/\1/p" "$ERR") &&
	say "verify read $GOT bytes from the bucket" &&
	[ "${GOT:-0}" -ge $((256 * MIB)) ]
'

test_expect_success 'restore with TMPDIR on 64 MiB gives every value back' '
	cs stop -c "$CONF" >/dev/null &&
	mkdir fresh &&
	sed "s#^run_dir = .*#run_dir = run#" "$CONF" >fresh/cluster.ini &&
	(cd fresh && small restore -c cluster.ini -r "$REPO_URL" "$S1") \
	    >"$OUT" 2>"$ERR" &&
	cs start -c fresh/cluster.ini >/dev/null &&
	for i in $(seq 1 16); do
		cs get -c fresh/cluster.ini A "v$i" | sha256sum >>got.sums || return 1
	done &&
	cs stop -c fresh/cluster.ini >/dev/null &&
	expect_eq "$(wc -l <got.sums)" 16 "values read back" &&
	cmp want.sums got.sums
'

test_done
