#!/bin/bash
# With the blobs in the page cache (a verify just read them), a restore
# reads next to nothing from the disk: the replay of each file takes the
# chunks restore checked from memory (an earlier version read its
# O_DIRECT temp files back from the disk, every byte). The temp files
# keep restore's all-or-nothing promise: a restore killed after every
# chunk was written (none of it fsynced yet) or right after the first
# rename leaves whole files only, and running it again gives the same
# files.
. "$(dirname "$0")/lib.sh"

N=12
MIB=1048576

# restore_io CONF2 KEY: run restore of snapshot 1 with config CONF2,
# print KEY of its /proc/PID/io (the counts of a reaped child add to its
# parent's).
restore_io () {
	bash -c '"$@" >/dev/null 2>&1 || exit 1; awk -v k="$0:" "\$1 == k { print \$2 }" /proc/$$/io' \
	    "$2" "$CUTSNAP" restore -r "$REPO" 1 -c "$1"
}
as_before () { cmp A.data A.old && cmp B.data B.old; }
restored () { cmp A.data A.new && cmp B.data B.new; }
put_back () { cp A.old A.data && cp B.old B.data; }
nchunks () { sql "select count(*) from agent_chunks where snapshot_id = 1 and agent = '$1'"; }

test_expect_success 'setup: A holds 12 values of 1 MiB; one snapshot; a verify reads every blob' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	for i in $(seq 1 $N); do
		head -c $MIB /dev/urandom >"v$i.in" &&
		cs put -c "$CONF" A "v$i" - <"v$i.in" || return 1
	done &&
	take_snapshot &&
	expect_ok transfer -c "$CONF" A:bal B:bal 30 &&
	stop_cluster &&
	cp A.data A.old && cp B.data B.old &&
	mkdir -p R &&
	sed "s#^data = #data = $TEST_DIR/R/#" "$CONF" >conf2.ini &&
	expect_ok verify -r "$REPO" 1
'

test_expect_success 'restore with the blobs cached: almost nothing read from the disk; files exact' '
	size=$(stat -c %s A.data) &&
	[ "$size" -gt $((N * MIB)) ] &&
	n=0 &&
	for run in 1 2; do
		rm -f R/*.data &&
		got=$(restore_io "$TEST_DIR/conf2.ini" read_bytes) &&
		[ -n "$got" ] &&
		say "restore read $got bytes from the disk for a $size-byte file" &&
		[ "$got" -lt $((size / 4)) ] &&
		expect_eq "$(dump_val R/A.data bal)/$(dump_val R/B.data bal)" 100/50 "A/B" &&
		expect_eq "$(dump_val R/A.data v5 | sha256sum)" "$(dump_val A.old v5 | sha256sum)" "value v5" &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 2 "restores measured"
'

test_expect_success 'the restore in place: the recorded balances; keep its files' '
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 100/50 "A/B" &&
	no_temps &&
	cp A.data A.new && cp B.data B.new &&
	cmp A.new R/A.data &&
	put_back && as_before
'

test_expect_success 'killed after every chunk was written (nothing fsynced): both files as before, the temp files there; the next restore finishes' '
	put_back &&
	total=$(( $(nchunks A) + $(nchunks B) )) &&
	[ "$total" -ge 3 ] &&
	CUTSNAP_FAULT=restore-kill-after-chunks:$total \
	    expect_exit 99 restore -r "$REPO" 1 -c "$CONF" &&
	as_before &&
	expect_eq "$(find . -maxdepth 1 -name "*.data.tmp.*" | wc -l)" 2 "temp files after the kill" &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	restored && no_temps
'

test_expect_success 'killed right after the first rename: that file whole and restored, the other as before; the next restore finishes' '
	put_back &&
	CUTSNAP_FAULT=restore-after-file:1 \
	    expect_exit 99 restore -r "$REPO" 1 -c "$CONF" &&
	n=0 &&
	for f in A B; do
		if cmp -s $f.data $f.new; then n=$((n + 1));
		else cmp $f.data $f.old || return 1; fi
	done &&
	expect_eq "$n" 1 "files restored by the killed run" &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	restored && no_temps
'

test_done
