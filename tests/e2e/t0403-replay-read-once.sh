#!/bin/bash
# A recorded file whose records are a little larger than the replay's
# 1 MiB window (a 1 MiB value and its record header; such records used
# to be read twice). A restore reads each byte of it once: each chunk is
# read, checked and written together, and the replay of the file takes
# the checked chunks from memory (it used to read the temp file back,
# twice the file in all). Measured as the bytes the restore read (rchar
# of /proc/PID/io, which counts a reaped child's reads) against the
# files' size, and the files restored exactly; then an agent recovers
# the file on start.
. "$(dirname "$0")/lib.sh"

# A value of 1 MiB + 100 bytes: each record is just over the window.
VAL=$((1048576 + 100))
N=12

# restore_rchar: run restore into R/ (CONF2), print the bytes it read.
restore_rchar () {
	bash -c '"$@" >/dev/null 2>&1 || exit 1; awk "/^rchar:/ { print \$2 }" /proc/$$/io' \
	    sh "$CUTSNAP" restore -r "$REPO" 1 -c "$CONF2"
}

test_expect_success 'setup: A holds 12 values of 1 MiB + 100 bytes; one snapshot' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	for i in $(seq 1 $N); do
		head -c $VAL /dev/urandom >"v$i.in" &&
		cs put -c "$CONF" A "v$i" - <"v$i.in" || return 1
	done &&
	take_snapshot &&
	stop_cluster &&
	mkdir -p R &&
	sed "s#^data = #data = $TEST_DIR/R/#" "$CONF" >conf2.ini &&
	CONF2=$TEST_DIR/conf2.ini &&
	size=$(stat -c %s A.data) &&
	[ "$size" -gt $((N * VAL)) ]
'

test_expect_success 'restore reads the recorded file once (the chunks; the replay takes them from memory), not twice; files exact' '
	CONF2=$TEST_DIR/conf2.ini &&
	size=$(( $(stat -c %s A.data) + $(stat -c %s B.data) )) &&
	n=0 &&
	for run in 1 2; do
		rm -f R/*.data &&
		got=$(restore_rchar) &&
		[ -n "$got" ] &&
		say "restore read $got bytes for $size bytes of files" &&
		[ "$got" -ge "$size" ] &&
		[ "$got" -lt $((size + size / 2)) ] &&
		cmp A.data R/A.data && cmp B.data R/B.data &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 2 "restores measured"
'

test_expect_success 'an agent recovers the file on start: its values and balance as before' '
	start_cluster &&
	expect_eq "$(cs get -c "$CONF" A bal)" 100 "A bal" &&
	n=0 &&
	for i in 1 7 $N; do
		cs get -c "$CONF" A "v$i" >"v$i.out" &&
		head -c $VAL "v$i.out" | cmp - "v$i.in" &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 3 "values compared" &&
	stop_cluster
'

test_done
