#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Automatic compaction rewrites a file that doubled only when the rewrite
# would at least halve it. A file that grew by new keys (mostly live) is
# left alone: the agent logs the skip, its generation stays 0, its values
# and the total are intact, and the next snapshot copies only what was
# added (a rewrite would have changed every chunk). A file that grew by
# overwrites (mostly dead) is still rewritten on its own.
. "$(dirname "$0")/lib.sh"

MIB=1048576
CHUNK=65536

set_cluster () {
	sed -i "/^\[cluster\]/a $*" "$CONF"
}

# put_new AGENT FROM TO: keys vFROM..vTO, 1 MiB of random bytes each
# (kept in v.I to compare later).
put_new () {
	local i
	for i in $(seq "$2" "$3"); do
		head -c $MIB /dev/urandom >"v.$i" &&
		    cs put -c "$CONF" "$1" "v$i" - <"v.$i" || return 1
	done
}

# overwrite AGENT COUNT: COUNT values of 1 MiB, all under the key "hot".
overwrite () {
	local i
	for i in $(seq 1 "$2"); do
		head -c $MIB /dev/urandom | cs put -c "$CONF" "$1" hot - ||
		    return 1
	done
}

# comp AGENT KEY: a field of AGENT's compaction object in status --json.
comp () {
	status_get "[a[\"compaction\"][\"$2\"] for a in d if a[\"agent\"] == \"$1\"][0]"
}

generation () { comp "$1" generation; }

test_expect_success 'setup: two agents, compact_min_size = 4M, 64 KiB chunks' '
	make_config A B &&
	set_cluster "compact_min_size = 4M" &&
	CUTSNAP_CHUNK_SIZE=$CHUNK start_cluster &&
	set_balances A=100 B=50
'

test_expect_success '12 MiB of new keys: the rewrites are skipped and logged, generation 0' '
	put_new A 1 12 &&
	wait_for 10 grep -q "compaction (automatic) skipped at [0-9]* bytes: the live state is [0-9]* bytes, more than half" run/A.log &&
	n=$(grep -c "compaction (automatic) skipped" run/A.log) &&
	say "skipped $n times" &&
	[ "$n" -ge 1 ] &&
	! grep -q "compaction (automatic) started\|compaction: " run/A.log &&
	expect_eq "$(generation A)" 0 "generation of A" &&
	status_get "[a for a in d if a[\"agent\"] == \"A\"][0]" >a.json &&
	json_check "d[\"live_size\"] * 2 > d[\"size\"] >= 12 * $MIB" a.json
'

test_expect_success 'a snapshot, 4 MiB more of new keys (the file doubles again), a snapshot: only the new chunks are copied' '
	take_snapshot &&
	put_new A 13 16 &&
	wait_for 10 test "$(grep -c "compaction (automatic) skipped" run/A.log)" -ge 2 &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --json &&
	cp "$OUT" s2.json &&
	listed=$(json_get "d[\"chunks\"][\"listed\"]" s2.json) &&
	copied=$(json_get "d[\"chunks\"][\"copied\"]" s2.json) &&
	say "snapshot 2: $copied of $listed chunks copied" &&
	[ "$listed" -ge $((16 * MIB / CHUNK)) ] &&
	[ "$copied" -ge $((4 * MIB / CHUNK)) ] &&
	[ "$copied" -le $((4 * MIB / CHUNK + 4)) ] &&
	! grep -q "compaction: " run/A.log &&
	expect_ok verify -r "$REPO"
'

test_expect_success 'every value of A is intact, the total is 150' '
	n=0 &&
	for i in $(seq 1 16); do
		cs get -c "$CONF" A "v$i" >got &&
		head -c $MIB got | cmp - "v.$i" &&
		n=$((n + 1)) || return 1
	done &&
	expect_eq "$n" 16 "values compared" &&
	wait_for 10 total_is 150
'

# How small B ends depends on timing: a rewrite's result holds the live
# state plus whatever the overwrites appended while it ran, and the next
# one starts when the file has doubled from there. What holds whatever
# the timing: B is rewritten (A is not), and once the rewrites settle no
# rewrite is due (the file is under twice the last one's result, or
# under compact_min_size), and the last rewrite shrank the file. The
# rewrite thread runs at SCHED_IDLE, so on a machine busy with other work
# it may take many seconds: hence 120.
test_expect_success '12 MiB of overwrites of one key: B is rewritten on its own, A is not' '
	overwrite B 12 &&
	wait_for 120 grep -q "compaction: [0-9]* -> [0-9]* bytes" run/B.log &&
	grep -q "compaction (automatic) started" run/B.log &&
	! grep -q "compaction (automatic) skipped" run/B.log &&
	wait_for 120 test "$(comp B running)" = false &&
	gen=$(generation B) && after=$(comp B last_after) &&
	before=$(comp B last_before) &&
	size=$(stat -c %s B.data) &&
	say "B.data: $size bytes after 12 MiB of overwrites; generation $gen, last rewrite $before -> $after bytes" &&
	[ "$gen" -ge 1 ] &&
	[ "$after" -gt 0 ] && [ "$after" -lt "$before" ] &&
	{ [ "$size" -lt $((2 * after)) ] || [ "$size" -lt $((4 * MIB)) ]; } &&
	expect_eq "$(generation A)" 0 "generation of A" &&
	wait_for 10 total_is 150
'

test_expect_success 'after a restart A still is not rewritten; a snapshot verifies' '
	stop_cluster &&
	CUTSNAP_CHUNK_SIZE=$CHUNK start_cluster &&
	put_new A 17 17 &&
	sleep 0.5 &&
	expect_eq "$(generation A)" 0 "generation of A" &&
	take_snapshot &&
	expect_ok verify -r "$REPO" &&
	wait_for 10 total_is 150
'

test_done
